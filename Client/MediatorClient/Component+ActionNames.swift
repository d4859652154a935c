import MediatorProtocol

/// Action names that come from the wire, checked before a handler sees them.
extension Component {
    /// `name` when it follows the action name rules (contract section 3:
    /// `[A-Za-z_][A-Za-z0-9_.-]*`, at most 128 bytes).
    ///
    /// - Throws: `invalid_params`, its message naming `member`.
    public static func validatedActionName(_ name: String, member: String) throws(MediatorError) -> String {
        try validatedActionName(.string(name), member: member)
    }

    /// The string in `value` when it is one that follows the action name
    /// rules; `value` nil means the member is missing.
    ///
    /// - Throws: `invalid_params`, its message naming `member`.
    public static func validatedActionName(_ value: JSONValue?, member: String) throws(MediatorError) -> String {
        guard let value else {
            throw MediatorError(.invalidParams, "\(member): missing; expected an action name")
        }
        guard let name = value.stringValue, NameRules.isValidAction(name) else {
            throw MediatorError(
                .invalidParams,
                "\(member): expected an action name ([A-Za-z_][A-Za-z0-9_.-]*, at most \(NameRules.maxNameBytes) bytes), got \(sample(value))")
        }
        return name
    }

    /// A peer's value for an error message: JSON (so that control characters
    /// show escaped), cut short so that a huge value does not make a huge error.
    static func sample(_ value: JSONValue) -> String {
        let text = value.jsonText
        let limit = 64
        return text.count <= limit ? text : String(text.prefix(limit)) + "... (\(text.utf8.count) bytes)"
    }
}
