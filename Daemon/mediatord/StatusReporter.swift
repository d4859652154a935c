import MediatorDaemon
import MediatorSystemd
import ServiceLifecycle

/// Keeps systemd's STATUS= line current: connections, targets, calls served.
struct StatusReporter: Service, CustomStringConvertible {
    var description: String { "StatusReporter" }
    let server: MediatorServer
    let notifier: SystemdNotifier

    static func summary(_ server: MediatorServer) async -> String {
        guard let stats = await server.statistics() else { return "starting" }
        return "\(stats.connections) connections, \(stats.targets) targets, \(stats.callsRouted) calls served"
    }

    func run() async throws {
        guard notifier.isActive else {
            // Nobody to tell: wait for shutdown without polling.
            try? await gracefulShutdown()
            return
        }
        try? await cancelWhenGracefulShutdown {
            // READY=1 carries the first summary; this keeps it current after.
            var last = await Self.summary(server)
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(1))
                let status = await Self.summary(server)
                if status != last {
                    notifier.status(status)
                    last = status
                }
            }
        }
    }
}
