/// The error codes the daemon puts on the wire (contract section 7).
///
/// Components may answer with codes of their own; those travel as
/// ``MediatorError/code`` strings unchanged, so the code is a string-backed
/// struct rather than a closed enum.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code as the wire writes it (`target_not_found`).
    public let rawValue: String
    /// Any code, the daemon's or a component's own.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Any code, the daemon's or a component's own: `ErrorCode("no_such_note")`.
    public init(_ rawValue: String) { self.rawValue = rawValue }
    /// The code as the wire writes it.
    public var description: String { rawValue }

    /// `bad_request`: not JSON, not an object, not one of the three kinds, bad
    /// names or member types, a duplicate `id` in flight.
    public static let badRequest = ErrorCode("bad_request")
    /// `frame_too_large`: a frame over the receiver's limit.
    public static let frameTooLarge = ErrorCode("frame_too_large")
    /// `unsupported_protocol`: `hello` with a version the daemon does not speak.
    public static let unsupportedProtocol = ErrorCode("unsupported_protocol")
    /// `target_not_found`: no component serves the target and none can be started.
    public static let targetNotFound = ErrorCode("target_not_found")
    /// `action_not_found`: the target does not declare the action and has no `notFound`.
    public static let actionNotFound = ErrorCode("action_not_found")
    /// `invalid_params`: params do not match the action's declared schema.
    public static let invalidParams = ErrorCode("invalid_params")
    /// `already_registered`: an exclusive target that is taken, or a pool whose specs differ.
    public static let alreadyRegistered = ErrorCode("already_registered")
    /// `forbidden`: the access policy denies it, a URL reaches a non-URL action, a
    /// client publishes a `mediator.` event, or unregisters another connection's target.
    public static let forbidden = ErrorCode("forbidden")
    /// `timeout`: no response before the call's timeout.
    public static let timeout = ErrorCode("timeout")
    /// `cancelled`: the caller cancelled the call.
    public static let cancelled = ErrorCode("cancelled")
    /// `component_unavailable`: the component's connection closed with the call in flight.
    public static let componentUnavailable = ErrorCode("component_unavailable")
    /// `activation_failed`: the daemon could not start a component for the target.
    public static let activationFailed = ErrorCode("activation_failed")
    /// `overloaded`: a limit on calls in flight or connections was reached.
    public static let overloaded = ErrorCode("overloaded")
    /// Descriptors for a peer that did not say `"fds": true` in `hello` (contract section 8).
    public static let fdsNotSupported = ErrorCode("fds_not_supported")
    /// `internal`: a bug in the daemon; it keeps running.
    public static let `internal` = ErrorCode("internal")
    /// An extension (docs/protocol.md): a result that does not match the
    /// action's declared `result` schema, from the daemon; the client library
    /// also uses it when a typed call's result does not decode as asked.
    public static let invalidResult = ErrorCode("invalid_result")
}

/// An error as the wire carries it: a code, a message for people, optional data.
public struct MediatorError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, for programs: the daemon's codes (contract section 7),
    /// the library's, or a component's own.
    public var code: ErrorCode
    /// What went wrong, for people.
    public var message: String
    /// Details for programs, as the component or daemon gave them; nil for none.
    public var data: JSONValue?

    /// An error to throw from a handler or to answer with: it reaches the
    /// caller with this code, message and data unchanged.
    public init(_ code: ErrorCode, _ message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    /// `CODE: MESSAGE`.
    public var description: String { "\(code.rawValue): \(message)" }

    /// The `error` member's value.
    public var json: JSONValue {
        var members: [String: JSONValue] = ["code": .string(code.rawValue), "message": .string(message)]
        if let data { members["data"] = data }
        return .object(members)
    }

    /// Reads an `error` member; nil when it is not an object with a string `code`.
    public init?(json: JSONValue) {
        guard let code = json["code"]?.stringValue else { return nil }
        self.init(ErrorCode(code), json["message"]?.stringValue ?? "", data: json["data"])
    }
}
