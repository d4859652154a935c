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
    }
}
