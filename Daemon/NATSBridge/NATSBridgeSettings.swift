import MediatorNATS
import MediatorProtocol

/// What `mediatord --nats-url ...` asks of the bridge (docs/scale-out.md).
package struct NATSBridgeSettings: Sendable, Equatable {
    /// The NATS servers and credentials.
    package var nats: NATSOptions
    /// Local targets served to the other hosts.
    package var exports: [TargetPattern]
    /// Remote targets made callable here.
    package var imports: [TargetPattern]
    /// Event patterns forwarded between hosts, both ways (`mediator.*`
    /// events never are).
    package var events: [String] = []
    /// The first token(s) of every subject: one Mediator domain.
    package var prefix = "mediator"
    /// This host's name in announcements and in the calls it forwards
    /// (default ``defaultHost(machine:userUID:socketPath:socketIsDefault:)``).
    package var host: String
    /// The local daemon's socket, which the bridge uses as a client and to
    /// register the imported targets.
    package var socketPath: String
    /// How often this host says what it exports (and checks what it has).
    package var announceInterval: Duration = .seconds(2)
    /// How long a call sent to a host that sends keep-alives may go without
    /// a word (keep-alive, partial, answer) before that host is taken for
    /// gone and the call answered `component_unavailable`.
    package var livenessTimeout: Duration = .seconds(3)

    /// The shortest liveness timeout: three keep-alives at the fastest
    /// rate a serving bridge sends them (every 100 ms).
    static let minimumLivenessTimeout: Duration = .milliseconds(300)
    /// Remote targets imported at most, in all and from one host: a host
    /// that announces more cannot take the daemon's registrations and
    /// memory (the others are refused, logged once and counted).
    package var maxImports = 4096
    package var maxImportsPerHost = 1024
    /// Bytes of sealed memfds one call may carry across hosts, in its
    /// request and in its result each (``BridgeBlobs``): more is refused
    /// `frame_too_large` before anything is sent.
    package var maxFdBytes = BridgeBlobs.defaultMaxBytesPerCall

    package init(nats: NATSOptions, exports: [TargetPattern], imports: [TargetPattern], host: String, socketPath: String) {
        self.nats = nats
        self.exports = exports
        self.imports = imports
        self.host = host
        self.socketPath = socketPath
    }

    /// The host name when none is given: unique per daemon instance on a
    /// machine, so that two daemons bridged to one NATS (the system one and
    /// a user's, or two in a test) do not take each other's announcements
    /// for their own. The machine's name for the system instance on its
    /// default socket; `/user:UID` added for a user instance (`--user`);
    /// `:SOCKET` added for a socket that is not the instance's default.
    package static func defaultHost(machine: String, userUID: UInt32?, socketPath: String, socketIsDefault: Bool) -> String {
        var name = machine
        if let userUID { name += "/user:\(userUID)" }
        if !socketIsDefault { name += ":" + socketPath }
        return name
    }

    package func validate() throws(NATSError) {
        try nats.validate()
        guard BridgeSubjects.isValidPrefix(prefix) else {
            throw NATSError.invalid("--nats-prefix \(prefix): tokens of letters, digits, _ and - separated by dots", "NATS bridge")
        }
        guard !host.isEmpty else { throw NATSError.invalid("the host name is empty", "NATS bridge") }
        guard livenessTimeout >= Self.minimumLivenessTimeout else {
            throw NATSError.invalid("liveness_timeout_ms: at least 300", "NATS bridge")
        }
        guard maxImports > 0, maxImportsPerHost > 0 else {
            throw NATSError.invalid("--nats-max-imports and --nats-max-imports-per-host must be positive", "NATS bridge")
        }
        guard maxFdBytes >= 0 else {
            throw NATSError.invalid("--nats-max-fd-bytes must not be negative", "NATS bridge")
        }
        for pattern in events where !NameRules.isValidEventPattern(pattern) {
            throw NATSError.invalid("--nats-events \(pattern): an event name, PREFIX.* or *", "NATS bridge")
        }
    }
}
