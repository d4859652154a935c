import MediatorProtocol

/// What `describe {"target": "mediator"}` answers: the daemon's own actions,
/// so tools can discover them like any component's.
enum DaemonTargetDescription {
    static let actions: [(String, String)] = [
        ("hello", "Announce the protocol version and a peer name"),
        ("register", "Serve a target from this connection"),
        ("unregister", "Stop serving a target"),
        ("list", "Every registered target"),
        ("describe", "One target with its action specs"),
        ("open", "Call an action through a URL: SCHEME://TARGET/ACTION?k=v"),
        ("subscribe", "Receive events matching patterns"),
        ("unsubscribe", "Stop receiving events matching patterns"),
        ("publish", "Send an event to its subscribers"),
        ("cancel", "Cancel one of this connection's calls in flight"),
        ("ping", "Check that the daemon answers"),
        ("status", "One target's state, processes and restarts (a managed component's too)"),
        ("start", "Start a component known from a manifest; answers once it registered"),
        ("stop", "Ask a managed component to leave, then SIGTERM after the grace period"),
        ("monitor", "Receive a record of every request, response and event routed"),
        ("stats", "What the broker counted: calls, latencies, errors, refusals, slow calls (granted like monitor)"),
        ("reexec", "Re-execute the daemon's binary in place, keeping every connection, call and registration (administrators)"),
    ]

    static let json: JSONValue = [
        "target": "mediator",
        "description": "The daemon itself",
        "actions": .array(actions.map { ["name": .string($0.0), "description": .string($0.1)] }),
        "instances": [],
    ]
}
