import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// What a new user meets when the daemon cannot start or the instance
    /// cannot be found: one line that says what, where and what to do.
    @Suite("Start-up errors")
    struct StartupErrors {
        /// Runs mediatord to its end as a user who may not create
        /// /run/mediator: nobody when the tests run as root.
        static func runDaemonUnprivileged(
            _ arguments: [String], environment: [String: String]? = nil, directory: String
        ) throws -> ChildProcess.Outcome {
            guard getuid() == 0 else {
                return try ChildProcess.run(
                    Paths.mediatord, arguments, within: .seconds(20), directory: directory, environment: environment)
            }
            return try OtherUser.nobody.run(
                try SharedFiles.reachable(Paths.mediatord), arguments, directory: directory, within: .seconds(20),
                environment: environment)
        }

        static let canRunUnprivileged = getuid() != 0 || OtherUser.available

        /// The environment of a shell outside a login session.
        static var withoutRuntimeDirectory: [String: String] {
            var environment = ProcessInfo.processInfo.environment
            environment["XDG_RUNTIME_DIR"] = nil
            environment["MEDIATOR_SOCKET"] = nil
            return environment
        }

        @Test("--user without XDG_RUNTIME_DIR: mediatorctl refuses (69) and never tries the system socket")
        func mediatorctlUserWithoutRuntimeDirectory() throws {
            for verb in [["ping"], ["list"], ["serve", "T", "--exec", "/bin/cat", "--action", "a"]] {
                let outcome = try ChildProcess.run(
                    Paths.mediatorctl, verb + ["--user"], within: .seconds(20), environment: Self.withoutRuntimeDirectory)
                #expect(outcome.status == 69, "\(verb): \(outcome)")
                #expect(
                    outcome.stderr.hasPrefix("mediatorctl: unreachable: --user: $XDG_RUNTIME_DIR not set"),
                    "\(verb): \(outcome)")
                #expect(!outcome.stderr.contains(ProtocolConstants.systemSocketPath), "\(verb): \(outcome)")
            }
        }

        @Test("--user without XDG_RUNTIME_DIR: mediatord exits 1 with one line, creating nothing under /run",
              .enabled(if: canRunUnprivileged, "needs a non-root uid, or root and util-linux setpriv"))
        func mediatordUserWithoutRuntimeDirectory() throws {
            let world = try World()
            defer { world.close() }
            let outcome = try Self.runDaemonUnprivileged(
                ["--user", "--log-level", "error"], environment: Self.withoutRuntimeDirectory,
                directory: world.directory.path)
            #expect(outcome.status == 1, "\(outcome)")
            let lines = ChildProcess.lines(outcome.stderr).filter { !$0.isEmpty }
            #expect(lines.count == 1, "\(outcome)")
            #expect(outcome.stderr.contains("--user: $XDG_RUNTIME_DIR not set"), "\(outcome)")
            #expect(outcome.stderr.contains("--socket PATH"), "\(outcome)")
            #expect(!outcome.stderr.contains("/run/mediator"), "\(outcome)")
        }

        /// The one line a failed start leaves on stderr with `--log-level error`.
        static func onlyLine(_ outcome: ChildProcess.Outcome) -> String? {
            let lines = ChildProcess.lines(outcome.stderr).filter { !$0.isEmpty }
            return lines.count == 1 ? lines[0] : nil
        }

        @Test("A socket folder the user may not create: one line naming it, the reason and what to do",
              .enabled(if: canRunUnprivileged, "needs a non-root uid, or root and util-linux setpriv"))
        func socketFolderWithoutPermission() throws {
            let world = try World()
            defer { world.close() }
            // The world's folder is 0700; the user must reach the locked one to be refused by it.
            chmod(world.directory.path, 0o755)
            let locked = world.directory.path + "/locked"
            #expect(mkdir(locked, 0o555) == 0)
            chmod(locked, 0o555)
            let outcome = try Self.runDaemonUnprivileged(
                ["--socket", locked + "/mediator/mediator.sock", "--log-level", "error"], directory: world.directory.path)
            #expect(outcome.status == 1, "\(outcome)")
            let line = try #require(Self.onlyLine(outcome), "\(outcome)")
            #expect(
                line.hasSuffix("cannot create \(locked)/mediator: permission denied; run as root, use --user, or --socket PATH"),
                "\(outcome)")
        }

        @Test("A metrics port already taken: one line with the address, the reason and what to do; the socket is removed")
        func metricsPortTaken() throws {
            let world = try World()
            defer { world.close() }
            let (taken, port) = try Self.listenOnLoopback()
            defer { close(taken) }
            let socketPath = world.directory.socket()
            let outcome = try ChildProcess.run(
                Paths.mediatord,
                ["--socket", socketPath, "--metrics-listen", "127.0.0.1:\(port)", "--log-level", "error"],
                within: .seconds(20), directory: world.directory.path)
            #expect(outcome.status == 1, "\(outcome)")
            let line = try #require(Self.onlyLine(outcome), "\(outcome)")
            #expect(
                line.hasSuffix(
                    "cannot listen for metrics on 127.0.0.1:\(port): address already in use; "
                        + "stop what uses it or pass another --metrics-listen"),
                "\(outcome)")
            #expect(!FileManager.default.fileExists(atPath: socketPath))
        }

        @Test("Settings that cannot be used: one line each, exit status 64, no usage text")
        func unusableSettings() throws {
            let world = try World()
            defer { world.close() }
            let missing = world.directory.path + "/missing.json"
            let cases: [(arguments: [String], line: String)] = [
                (["--config", missing], "cannot read config \(missing): No such file or directory"),
                (["--metrics-listen", "10.1.1.1:80"], "--metrics-listen: 10.1.1.1 is not a loopback address"),
                (["--max-frame-bytes", "0"], "--max-frame-bytes must be positive"),
            ]
            for (arguments, expected) in cases {
                let outcome = try ChildProcess.run(
                    Paths.mediatord, ["--socket", world.directory.socket(), "--log-level", "error"] + arguments,
                    within: .seconds(20), directory: world.directory.path)
                #expect(outcome.status == 64, "\(arguments): \(outcome)")
                let line = try #require(Self.onlyLine(outcome), "\(arguments): \(outcome)")
                #expect(line.contains(expected), "\(arguments): \(outcome)")
            }
        }

        /// A TCP socket listening on 127.0.0.1 at a port the kernel picks.
        static func listenOnLoopback() throws -> (fd: Int32, port: UInt16) {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                    bind(fd, pointer, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, pointer, &length) == 0
                }
            }
            guard bound else {
                close(fd)
                throw HarnessError("cannot listen on 127.0.0.1: \(String(cString: strerror(errno)))")
            }
            return (fd, UInt16(bigEndian: address.sin_port))
        }
    }
}
