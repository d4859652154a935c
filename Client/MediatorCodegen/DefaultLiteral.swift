import MediatorProtocol

/// A member's `default` in a form both generators write as a literal of the
/// member's type: strings, numbers, booleans, a case of a string enum, and
/// arrays of these. Anything else (an object, a free-form value, null) is
/// not written: the member stays as it would be without a default.
indirect enum DefaultLiteral: Sendable {
    case string(String)
    case integer(Int64)
    /// A finite number, kept as its JSON value (`2`, `0.5`).
    case number(JSONValue)
    case boolean(Bool)
    case enumCase(typeName: String, EnumDecl.Case)
    case array([DefaultLiteral])
}

extension InterfaceModel {
    /// The literal for `field`'s default; nil when it has none, when the
    /// member may be null (its `nil` already says "not given"), or when the
    /// default is not of a kind ``DefaultLiteral`` writes.
    func defaultLiteral(of field: Field) -> DefaultLiteral? {
        guard let value = field.defaultValue, !resolved(field.type).nullable else { return nil }
        return literal(value, as: field.type)
    }

    private func literal(_ value: JSONValue, as type: TypeRef) -> DefaultLiteral? {
        let resolved = resolved(type)
        switch (resolved.shape, value) {
        case (.string, .string(let text)): return .string(text)
        case (.integer, .int(let number)): return .integer(number)
        case (.integer, .double(let number)): return Int64(exactly: number).map(DefaultLiteral.integer)
        case (.number, .int), (.number, .double): return .number(value)
        case (.boolean, .bool(let flag)): return .boolean(flag)
        case (.named(let name), .string(let text)):
            guard case .enumeration(let decl)? = declaration(named: name),
                let item = decl.cases.first(where: { $0.value == text })
            else { return nil }
            return .enumCase(typeName: name, item)
        case (.array(let itemType), .array(let items)):
            var literals: [DefaultLiteral] = []
            for item in items {
                // An item that may be null has no literal either: the whole default is left out.
                guard !self.resolved(itemType).nullable, let literal = literal(item, as: itemType) else { return nil }
                literals.append(literal)
            }
            return .array(literals)
        default:
            return nil
        }
    }
}
