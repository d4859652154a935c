import Foundation

/// A real nats-server (Debian's) on a random loopback port, for one test.
/// Stopped (SIGKILL) by `stop()`; its ports file tells where it listens.
final class NATSServerProcess: @unchecked Sendable {
    static let executable = ["/usr/sbin/nats-server", "/usr/bin/nats-server"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    static var isInstalled: Bool { executable != nil }

    let process = Process()
    let directory: URL
    private(set) var port: Int = 0
    var url: String { "nats://127.0.0.1:\(port)" }

    /// Starts it with `arguments` added (auth options) on `port` (0: any free
    /// one) and waits, bounded, until its ports file names the client port.
    init(port: Int = 0, arguments: [String] = []) throws {
        guard let executable = Self.executable else { throw NATSTestError("nats-server is not installed") }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("nats-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-a", "127.0.0.1", "-p", port == 0 ? "-1" : String(port),
                             "--ports_file_dir", directory.path] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        do {
            self.port = try waitForPort()
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    private func waitForPort() throws -> Int {
        let file = directory.appendingPathComponent("nats-server_\(process.processIdentifier).ports")
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            guard process.isRunning else { throw NATSTestError("nats-server exited at start") }
            if let data = try? Data(contentsOf: file),
               let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
               let nats = json["nats"] as? [String], let first = nats.first,
               let port = first.split(separator: ":").last.flatMap({ Int($0) }) {
                return port
            }
            usleep(20_000)
        }
        throw NATSTestError("nats-server wrote no ports file within 10 s")
    }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }
}

struct NATSTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Values posted from other threads, awaited with a bound.
final class Inbox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Value] = []

    func post(_ value: Value) {
        lock.lock()
        values.append(value)
        lock.unlock()
    }

    var items: [Value] {
        lock.lock()
        defer { lock.unlock() }
        return values
    }

    /// Waits until `count` values match, at most `seconds`.
    func wait(for count: Int = 1, _ what: String, seconds: Double = 10, where match: (Value) -> Bool = { _ in true })
        async throws -> [Value]
    {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let matching = items.filter(match)
            if matching.count >= count { return matching }
            try await Task.sleep(for: .milliseconds(10))
        }
        // A last look: on a busy machine the task may resume only after the
        // deadline, with what it waited for already there.
        let matching = items.filter(match)
        if matching.count >= count { return matching }
        throw NATSTestError("timed out waiting for \(what) (have \(matching.count) of \(count))")
    }
}
