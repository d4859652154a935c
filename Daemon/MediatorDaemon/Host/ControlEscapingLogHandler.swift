import Logging

/// A `LogHandler` that escapes control characters (``LogTextEscaping``) in
/// the message and in every metadata key and value before the wrapped
/// handler sees them, so that no call site can let a peer's string (a
/// `hello` name, an executable path, a target) forge a log line, on any log
/// target.
///
/// The wrapper owns the handler's metadata and metadata provider: it merges
/// them as swift-log's own handlers do (handler metadata, then the provider's,
/// then the statement's, each winning over the one before), escapes the
/// result, and hands it to the wrapped handler as the statement's metadata.
/// An event's `error` becomes the metadata `error.message` and `error.type`
/// (as `StreamLogHandler` prints it), escaped too.
package struct ControlEscapingLogHandler: LogHandler {
    private var wrapped: any LogHandler

    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?

    package var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    /// Takes over `wrapped`'s metadata and metadata provider, which would
    /// otherwise reach its output unescaped.
    package init(wrapping wrapped: any LogHandler) {
        var inner = wrapped
        metadata = inner.metadata
        metadataProvider = inner.metadataProvider
        inner.metadata = [:]
        // Only when set: a handler without provider support warns on the setter.
        if inner.metadataProvider != nil { inner.metadataProvider = nil }
        self.wrapped = inner
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get(), !provided.isEmpty {
            merged.merge(provided) { _, provided in provided }
        }
        if let explicit = event.metadata, !explicit.isEmpty {
            merged.merge(explicit) { _, explicit in explicit }
        }
        if let error = event.error {
            merged["error.message"] = "\(error)"
            merged["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        var escapedEvent = event
        escapedEvent.message = "\(LogTextEscaping.escaped(event.message.description))"
        escapedEvent.metadata = merged.isEmpty ? nil : LogTextEscaping.escaped(merged)
        escapedEvent.error = nil
        wrapped.log(event: escapedEvent)
    }
}
