import MediatorConfiguration
import MediatorProtocol
import NIOCore

/// A component the daemon knows from a manifest, and what it is doing now.
struct ManagedComponent {
    enum State: String, Sendable {
        /// Known, not running; the next call starts it.
        case activatable
        /// Started (or being restarted), not registered yet; calls are held.
        case starting
        case running
        /// Asked to stop (`mediator.stop`, then SIGTERM); calls are held and start it again.
        case stopping
        /// Gave up after too many restarts; `mediatorctl start` tries again.
        case failed
    }

    struct Process {
        var spawnID: Int
        var pid: Int32?
        var startedAt: NIODeadline
        var registered = false
    }

    /// A call waiting for the component to register, in arrival order.
    struct HeldCall {
        var caller: ConnectionID
        var request: Broker.RouteRequest
        /// When the call itself times out (nil for a oneway call).
        var deadline: NIODeadline?
        /// What it keeps until it goes out (its params and id, copied off the frame).
        var bytes: Int
    }

    var manifest: Manifest
    var state = State.activatable
    var processes: [Process] = []
    var held: [HeldCall] = []
    var startDeadline: NIODeadline?
    var restartAt: NIODeadline?
    var termAt: NIODeadline?
    var lastActivity: NIODeadline?
    var runningSince: NIODeadline?
    var consecutiveRestarts = 0
    var restarts = 0
    var lastExit: String?
    /// Why the daemon itself ended the process (a start timeout), which its
    /// exit report must not overwrite.
    var endedBecause: String?
    /// The manifest was removed on reload: stop once calls finish, then forget it.
    var removed = false

    init(manifest: Manifest) {
        self.manifest = manifest
    }

    var activationKind: String {
        switch manifest.launch {
        case .exec: return "exec"
        case .unit: return "unit"
        }
    }

    /// Backoff before the next restart: doubling from the manifest's base, at most 10 s.
    var restartBackoff: TimeAmount {
        let base = Int64(manifest.restartBackoffMs)
        let shift = min(max(consecutiveRestarts - 1, 0), 16)
        return .milliseconds(min(base << shift, 10_000))
    }

    /// The earliest time anything about this component is due.
    func nextDeadline(idleCheck: NIODeadline?) -> NIODeadline? {
        [startDeadline, restartAt, termAt, idleCheck, held.compactMap(\.deadline).min()].compactMap { $0 }.min()
    }
}

/// A `mediator/start` call waiting for its component to register.
struct StartWaiter {
    var connection: ConnectionID
    var id: MessageID?
    /// The caller's id, copied off the frame; nil for a oneway `start`.
    var idBytes: ByteBuffer?

    var bytes: Int { idBytes?.readableBytes ?? 0 }
}

/// How a component's process ended, in words for `activation_failed` and `status`.
package enum ProcessEnd: Sendable, Equatable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)
    case couldNotStart(String)
    /// It ended while the daemon was not its parent (a successor after
    /// `systemctl restart`): no exit status. Not clean: unless the daemon
    /// had asked it to stop, it counts as a failure.
    case unobserved

    package var description: String {
        switch self {
        case .exited(let status): return "exited with status \(status)"
        case .signaled(let signal): return "killed by signal \(signal)"
        case .couldNotStart(let reason): return "could not be started: \(reason)"
        case .unobserved: return "ended (no exit status: mediatord was not its parent)"
        }
    }

    var isClean: Bool { self == .exited(0) }
}

/// What the host must start for a component.
package struct SpawnOrder: Sendable, Equatable {
    var spawnID: Int
    package var target: String
    package var arguments: [String]
    package var environment: [String: String]
    package var workingDirectory: String?
    package var user: String?
    package var group: String?
}
