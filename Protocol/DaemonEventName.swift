/// Events the daemon sends a peer about the daemon itself, unasked (no
/// subscription needed); the libraries act on them by themselves.
public enum DaemonEventName {
    /// The daemon is about to close every connection and expects a daemon
    /// (itself or its successor) to listen on the same socket again:
    /// reconnect as soon as the socket accepts instead of backing off.
    /// `data`: `{"reason"}`.
    public static let restarting = "mediator.restarting"
    /// The daemon kept this connection but lost what it knew of it:
    /// register every target again and subscribe every pattern again.
    /// `data`: `{"reason"}`.
    public static let reregister = "mediator.reregister"
}
