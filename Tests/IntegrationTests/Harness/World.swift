import Foundation
import MediatorProtocol

/// Everything one test starts: its folder, daemons, components and raw
/// peers. `close()` (called from the test's `defer`) kills every process
/// with SIGKILL, reaps it, closes the peers and removes the folder, also
/// when the test failed or threw.
///
///     let world = try World()
///     defer { world.close() }
///     let daemon = try world.daemon()
final class World: @unchecked Sendable {
    let directory: TestDirectory
    private let lock = NSLock()
    private var daemons: [DaemonProcess] = []
    private var components: [ComponentProcess] = []
    private var peers: [RawPeer] = []

    init() throws {
        directory = try TestDirectory()
    }

    private func keep<T>(_ value: T, _ add: (T) -> Void) -> T {
        lock.lock()
        defer { lock.unlock() }
        add(value)
        return value
    }

    /// Starts a daemon on a fresh socket (or `socketPath`) and waits for it
    /// to answer ping.
    func daemon(
        _ arguments: [String] = [], socketPath: String? = nil, waitUntilReady: Bool = true, launcher: [String] = []
    ) throws -> DaemonProcess {
        // Kept before waiting, so that cleanup kills it even if waiting fails.
        let daemon = try DaemonProcess(
            directory: directory, socketPath: socketPath, arguments: arguments, waitUntilReady: false,
            launcher: launcher)
        _ = keep(daemon) { daemons.append($0) }
        if waitUntilReady { try daemon.waitUntilReady() }
        return daemon
    }

    func notes(
        _ daemon: DaemonProcess, target: String = "Notes", pool: Bool = false, reconnect: Bool = false
    ) throws -> ComponentProcess {
        let component = try ComponentProcess.notes(
            daemon, target: target, pool: pool, reconnect: reconnect, waitUntilReady: false)
        _ = keep(component) { components.append($0) }
        try component.waitUntilReady()
        return component
    }

    func swiftExample(_ daemon: DaemonProcess, target: String = "Weather") throws -> ComponentProcess {
        let component = try ComponentProcess.swiftExample(daemon, target: target, waitUntilReady: false)
        _ = keep(component) { components.append($0) }
        try component.waitUntilReady()
        return component
    }

    func serve(
        _ daemon: DaemonProcess, target: String, program: String, actions: [String], extra: [String] = []
    ) throws -> ComponentProcess {
        let component = try ComponentProcess.serve(
            daemon, target: target, program: program, actions: actions, extra: extra)
        return keep(component) { components.append($0) }
    }

    /// Any other long-running process (e.g. `mediatorctl listen`).
    func spawn(
        _ executable: String, _ arguments: [String], label: String, environment: [String: String]? = nil
    ) throws -> ChildProcess {
        let process = try ChildProcess(
            executable, arguments, label: label, directory: directory.path, environment: environment)
        _ = keep(ComponentProcess.wrap(process)) { components.append($0) }
        return process
    }

    /// A raw connection to `daemon`, closed at cleanup.
    func peer(_ daemon: DaemonProcess) throws -> RawPeer {
        let peer = try daemon.connect()
        return keep(peer) { peers.append($0) }
    }

    func close() {
        lock.lock()
        let (daemons, components, peers) = (self.daemons, self.components, self.peers)
        self.daemons = []
        self.components = []
        self.peers = []
        lock.unlock()
        for peer in peers { peer.close() }
        for component in components { component.kill() }
        for daemon in daemons { daemon.kill() }
        directory.remove()
    }
}

extension ComponentProcess {
    static func wrap(_ process: ChildProcess) -> ComponentProcess {
        ComponentProcess(process: process, target: "")
    }
}
