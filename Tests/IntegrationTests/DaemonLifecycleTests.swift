import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// Starting, refusing to start, and stopping the daemon.
    @Suite("Daemon lifecycle")
    struct DaemonLifecycle {
        @Test("A second daemon on a socket where a live daemon answers exits non-zero with a clear message")
        func refusesLiveSocket() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let second = try ChildProcess.run(
                Paths.mediatord, ["--socket", daemon.socketPath], within: .seconds(20),
                directory: world.directory.path)
            #expect(second.status != nil && second.status != 0, "\(second)")
            #expect(second.stderr.contains("another mediatord is answering"), "\(second)")
            #expect(second.stderr.contains(daemon.socketPath), "\(second)")
            // The first one is untouched.
            #expect(daemon.process.isRunning)
            #expect(DaemonProcess.answersPing(daemon.socketPath))
            #expect(FileManager.default.fileExists(atPath: daemon.socketPath))
        }

        @Test("A stale socket file (nobody listening) is replaced")
        func replacesStaleSocket() throws {
            let world = try World()
            defer { world.close() }
            let path = world.directory.socket()
            try makeStaleSocket(path)
            #expect(FileManager.default.fileExists(atPath: path))
            #expect(!DaemonProcess.answersPing(path))
            let daemon = try world.daemon(socketPath: path)
            #expect(try daemon.connect().result("mediator", "ping") == [:])
        }

        @Test("A daemon killed with SIGKILL leaves a stale socket; the next daemon starts on it")
        func restartAfterCrash() throws {
            let world = try World()
            defer { world.close() }
            let first = try world.daemon()
            first.kill()
            #expect(FileManager.default.fileExists(atPath: first.socketPath))
            let second = try world.daemon(socketPath: first.socketPath)
            #expect(try second.connect().result("mediator", "ping") == [:])
        }

        @Test("SIGTERM: a call in flight within the grace period still gets its answer; exit status 0")
        func gracefulShutdown() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(["--shutdown-grace-ms", "5000"])
            _ = try world.notes(daemon)
            let peer = try world.peer(daemon)
            try peer.request("Notes", "sleep", params: ["ms": 800], id: "in-flight")
            try peer.expectNothingPendingBeforePing()  // the sleep is in flight

            daemon.terminate()
            let reply = try peer.response(to: "in-flight", within: .seconds(10))
            #expect(reply["result"] == ["slept": 800], "\(reply.jsonText)")
            let ended = try daemon.process.waitForExit(within: .seconds(15))
            #expect(ended == .exited(0), "\(daemon.process.logTail())")
            #expect(!FileManager.default.fileExists(atPath: daemon.socketPath), "the socket file is left behind")
        }

        @Test("SIGTERM: every peer gets mediator.restarting, then the answer to its call in flight, then EOF")
        func restartingBeforeClose() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(["--shutdown-grace-ms", "1"])
            _ = try world.notes(daemon)
            let idle = try world.peer(daemon)
            #expect(try idle.result("mediator", "ping") == [:])
            let caller = try world.peer(daemon)
            try caller.request("Notes", "sleep", params: ["ms": 5000], id: "in-flight")
            try caller.expectNothingPendingBeforePing()

            daemon.terminate()
            for peer in [idle, caller] {
                var lines: [JSONValue] = []
                do {
                    while true { lines.append(try peer.receive(within: .seconds(10))) }
                } catch is RawPeer.PeerClosed {}
                let restarting: JSONValue = ["event": "mediator.restarting", "data": ["reason": "stopping"]]
                // The last line before EOF, once, after any answer.
                #expect(lines.last == restarting, "\(lines.map(\.jsonText))")
                #expect(lines.filter { $0 == restarting }.count == 1)
                if peer === caller { #expect(lines.first?["error"]?["code"] == "component_unavailable", "\(lines.map(\.jsonText))") }
            }
            #expect(try daemon.process.waitForExit(within: .seconds(15)) == .exited(0))
        }

        @Test("SIGTERM with nothing in flight: exits 0 promptly")
        func idleShutdown() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            daemon.terminate()
            #expect(try daemon.process.waitForExit(within: .seconds(10)) == .exited(0))
        }

        @Test("Usage errors: a bad flag value exits non-zero")
        func badFlags() throws {
            let world = try World()
            defer { world.close() }
            let outcome = try ChildProcess.run(
                Paths.mediatord, ["--socket", world.directory.socket(), "--max-frame-bytes", "0"],
                directory: world.directory.path)
            #expect(outcome.status != 0 && outcome.status != nil, "\(outcome)")
            #expect(outcome.stderr.contains("max-frame-bytes"), "\(outcome)")
        }

        @Test("A config file that cannot be read: exit 64, and the system's reason")
        func unreadableConfig() throws {
            let world = try World()
            defer { world.close() }
            let missing = world.directory.path + "/missing.json"
            let outcome = try ChildProcess.run(
                Paths.mediatord, ["--socket", world.directory.socket(), "--config", missing],
                directory: world.directory.path)
            #expect(outcome.status == 64, "\(outcome)")
            #expect(outcome.stderr.contains("cannot read config \(missing): No such file or directory"), "\(outcome)")
        }

        @Test("The Python component with --reconnect registers again after a daemon restart")
        func pythonReconnects() throws {
            let world = try World()
            defer { world.close() }
            let first = try world.daemon()
            let notes = try world.notes(first, reconnect: true)
            #expect(try first.connect().result("Notes", "whoami")["pid"]?.intValue == Int64(notes.pid))
            first.terminate()
            try first.process.waitForExit()
            let second = try world.daemon(socketPath: first.socketPath)
            try notes.waitUntilReady(count: 2)
            #expect(try second.connect().result("Notes", "whoami")["pid"]?.intValue == Int64(notes.pid))
        }
    }
}

/// Leaves a socket file that nobody listens on, as a crashed daemon would.
func makeStaleSocket(_ path: String) throws {
    close(try boundSocket(path))
}

/// A socket at `path` that accepts connections (the kernel queues them) but
/// never reads or answers: a daemon that hangs. The caller closes it.
func makeSilentListener(_ path: String) throws -> Int32 {
    let fd = try boundSocket(path)
    guard listen(fd, 8) == 0 else {
        let reason = String(cString: strerror(errno))
        close(fd)
        throw HarnessError("listen \(path): \(reason)")
    }
    return fd
}

private func boundSocket(_ path: String) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw HarnessError("socket failed") }
    let bound: Int32
    do {
        bound = try UnixAddress(path).bind(fd)
    } catch {
        close(fd)
        throw error
    }
    guard bound == 0 else {
        let reason = String(cString: strerror(errno))
        close(fd)
        throw HarnessError("bind \(path): \(reason)")
    }
    return fd
}
