import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// Peers' strings reach the daemon's log (issue 10, defect 4): a newline
    /// in a `hello` name or in the path of a peer's executable must not start
    /// a log line of its own, here with `--log-target stderr`.
    @Suite("Log injection")
    struct LogInjection {
        /// What a forger would like to see at the start of a line.
        static let forgedLine = "2026-01-01T00:00:00+0000 critical mediatord : uid=0 forged"

        /// The daemon's stderr lines that a forger wrote.
        static func forgedLines(_ daemon: DaemonProcess) -> [String] {
            daemon.process.stderrLines.filter { $0.hasPrefix("2026-01-01T00:00:00+0000") }
        }

        @Test("A hello name with a newline and a forged line is logged escaped, on one line")
        func helloName() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(["--log-target", "stderr"])
            let peer = try world.peer(daemon)
            let name = "x\n\(Self.forgedLine)\r\u{1b}[2K"
            _ = try peer.result("mediator", "hello", params: ["protocol": 1, "name": .string(name)])
            let escaped = #"name=x\n"# + Self.forgedLine + #"\r\u{1b}[2K"#
            try waitUntil("the hello line in the daemon's log\(daemon.process.logTail())") {
                daemon.process.stderrLines.contains { $0.contains("hello") && $0.contains(escaped) }
            }
            // Closing logs the name again ("connection closed").
            peer.close()
            try waitUntil("the closing line in the daemon's log\(daemon.process.logTail())") {
                daemon.process.stderrLines.contains { $0.contains("connection closed") && $0.contains(escaped) }
            }
            #expect(Self.forgedLines(daemon).isEmpty, "\(daemon.process.logTail())")
            #expect(!daemon.process.stderr.contains("\u{1b}"), "\(daemon.process.logTail())")
        }

        @Test(
            "An executable whose folder name holds a newline is logged escaped (an access denial names it)",
            .enabled(if: OtherUser.available, "needs root and setpriv to run a client as another uid"))
        func executablePath() throws {
            let world = try World()
            defer { world.close() }
            // nobody may call nothing, so its call is denied, and the denial
            // is logged with the caller's executable.
            let policy: JSONValue = [
                "description": "LogInjectionTests",
                "rules": [["match": ["uid": 4101], "allow": ["call": ["Svc/*"]]]],
            ]
            let daemon = try world.daemon(policy: policy, ["--log-target", "stderr"])
            let folderName = "bin\n\(Self.forgedLine)"
            let folder = world.directory.file(folderName)
            guard mkdir(folder, 0o755) == 0 else { throw HarnessError("mkdir: \(String(cString: strerror(errno)))") }
            let client = folder + "/mediatorctl"
            try FileManager.default.copyItem(atPath: Paths.mediatorctl, toPath: client)
            chmod(client, 0o755)

            let outcome = try OtherUser.nobody.run(
                client, ["call", "--socket", daemon.socketPath, "Svc", "echo"], directory: daemon.directory.path)
            #expect(outcome.status == 1, "\(outcome)")
            #expect(outcome.stderr.contains("forbidden"), "\(outcome)")

            let escaped = "exe=" + world.directory.file(#"bin\n"#) + Self.forgedLine + "/mediatorctl"
            try waitUntil("the denial naming the executable in the daemon's log\(daemon.process.logTail())") {
                daemon.process.stderrLines.contains { $0.contains("access denied") && $0.contains(escaped) }
            }
            #expect(Self.forgedLines(daemon).isEmpty, "\(daemon.process.logTail())")
        }
    }
}
