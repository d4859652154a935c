/// An error of a handler's own that says how it reaches the caller: its
/// wire code, message and data. A handler may throw it as it is; without
/// this conformance an error that is not a `MediatorError` reaches the
/// caller as `failed` with its type and description.
///
/// ```swift
/// enum StoreError: Error, MediatorErrorConvertible {
///     case noSuchKey(String)
///     var mediatorError: MediatorError {
///         switch self {
///         case .noSuchKey(let key):
///             MediatorError(ErrorCode("no_such_key"), "no key \(key)", data: ["key": .string(key)])
///         }
///     }
/// }
/// ```
public protocol MediatorErrorConvertible: Error {
    /// The error the caller gets.
    var mediatorError: MediatorError { get }
}
