/// Answers to many requests through one subscription, instead of a
/// subscription (or a blocking `natsConnection_Request`) per request:
/// subscribe once to ``wildcard``, publish each request with
/// ``replySubject(_:)`` of a token of your own, and tell the answers apart
/// by ``token(of:)``. A request nobody serves comes back there too, as a
/// message with ``NATSMessage/isNoResponders``.
package struct NATSInbox: Sendable, Hashable {
    /// `_INBOX.` and a unique token; no wildcard.
    package let prefix: String

    /// A new, unique inbox.
    package init() {
        prefix = NATSConnection.newInbox()
    }

    package init(prefix: String) {
        self.prefix = prefix
    }

    /// The subject to subscribe to: every reply subject of this inbox.
    package var wildcard: String { prefix + ".*" }

    /// The reply subject for one request; `token` is one subject token
    /// (no dots, no spaces, no wildcards), e.g. a counter.
    package func replySubject(_ token: String) -> String { prefix + "." + token }

    /// The token of `subject` if it is a reply subject of this inbox.
    package func token(of subject: String) -> Substring? {
        guard subject.count > prefix.count + 1, subject.hasPrefix(prefix + ".") else { return nil }
        let token = subject.dropFirst(prefix.count + 1)
        return token.contains(".") ? nil : token
    }
}
