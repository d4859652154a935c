import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// The daemon out of file descriptors (issue 10, defect 8): it used to
    /// spin on accept4 = EMFILE at full CPU, log nothing, and leave new peers
    /// hanging.
    @Suite("Out of file descriptors")
    struct FileDescriptorExhaustion {
        static let prlimit = ["/usr/bin/prlimit", "/bin/prlimit"].first { FileManager.default.isExecutableFile(atPath: $0) }
        /// The daemon's open file limit, soft and hard (it raises soft to hard).
        static let limit = 64
        static let warning = "out of file descriptors"

        /// Whether `reply` is the refusal for want of descriptors.
        /// What a process has open, for a failure message: each descriptor's target.
        static func openDescriptors(_ pid: pid_t) -> String {
            let directory = "/proc/\(pid)/fd"
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            let targets = entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + $0) }
            return "\(entries.count): " + Dictionary(grouping: targets) { $0.hasPrefix("socket:") ? "socket" : $0 }
                .map { "\($0.key) ×\($0.value.count)" }.sorted().joined(separator: ", ")
        }

        static func isRefusal(_ reply: JSONValue) -> Bool {
            reply["id"] == .null && reply.errorCode == "overloaded"
                && reply["error"]?["message"]?.stringValue?.contains("out of file descriptors") == true
        }

        /// After the refusal, the daemon has closed: end of stream (or a
        /// reset, if the kernel saw our unread bytes), never another line.
        static func expectClosed(_ peer: RawPeer, sourceLocation: SourceLocation = #_sourceLocation) {
            do {
                let line = try peer.readLine(within: .seconds(5))
                Issue.record("a second line after the refusal: \(String(decoding: line, as: UTF8.self))", sourceLocation: sourceLocation)
            } catch is RawPeer.PeerClosed {
            } catch {
                #expect("\(error)".contains("reset"), "\(error)", sourceLocation: sourceLocation)
            }
        }

        /// What the limit above counts on: a child gets stdin, stdout and
        /// stderr and nothing the test process had open, even without
        /// close-on-exec (tests run in parallel in one process).
        @Test("A child process inherits no descriptor beyond stdin, stdout and stderr")
        func childrenInheritOnlyTheStandardDescriptors() throws {
            let world = try World()
            defer { world.close() }
            var fds: [Int32] = [-1, -1]
            try #require(pipe(&fds) == 0)
            defer { close(fds[0]); close(fds[1]) }
            // No close-on-exec on purpose.
            let child = try world.spawn("/bin/sh", ["-c", "ls /proc/$$/fd"], label: "fds")
            #expect(try child.waitForExit() == .exited(0))
            let open = Set(child.stdoutLines.compactMap { Int32($0) })
            #expect(open == [0, 1, 2], "the child had open: \(open.sorted())")
        }

        @Test(
            "New peers get one overloaded line and are closed, the daemon stays idle and warns once, and serves again once files are free",
            .enabled(if: prlimit != nil, "needs prlimit (util-linux)"))
        func refusesIdlesAndRecovers() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(
                ["--log-target", "stderr"], launcher: [Self.prlimit ?? "prlimit", "--nofile=\(Self.limit):\(Self.limit)"])

            // Connections that are served (answer a ping), until one is refused.
            var held: [RawPeer] = []
            defer { for peer in held { peer.close() } }
            var refusedWhileFilling: RawPeer?
            for _ in 0..<(Self.limit * 2) {
                let peer = try daemon.connect()
                // The next message, whatever its id: a refusal has none.
                try peer.request("mediator", "ping")
                let reply = try peer.receive(within: .seconds(5))
                if Self.isRefusal(reply) {
                    refusedWhileFilling = peer
                    break
                }
                #expect(reply["result"] == [:], "\(reply.jsonText)")
                held.append(peer)
            }
            let firstRefused = try #require(
                refusedWhileFilling, "\(held.count) connections and none refused\(daemon.process.logTail())")
            Self.expectClosed(firstRefused)
            #expect(
                held.count > 10,
                "the daemon took only \(held.count) connections; its descriptors: \(Self.openDescriptors(daemon.pid))")

            // A new peer that says nothing: exactly one line, then the end.
            let fresh = try daemon.connect()
            let refusal = try JSONParser.parse(try fresh.readLine(within: .seconds(5)))
            #expect(Self.isRefusal(refusal), "\(refusal.jsonText)")
            Self.expectClosed(fresh)

            // Exhausted and idle: a bound well above an idle loop's few percent, far
            // below the spin's 100%.
            let share = try ProcessCPU.share(of: daemon.pid, over: .seconds(1))
            #expect(share < 0.3, "the daemon used \(Int(share * 100))% of a CPU while out of descriptors")
            // Still refusing after the pause, not hanging.
            let later = try daemon.connect()
            #expect(Self.isRefusal(try JSONParser.parse(try later.readLine(within: .seconds(5)))))
            Self.expectClosed(later)

            let warnings = daemon.process.stderrLines.filter { $0.contains("warning") && $0.contains(Self.warning) }
            #expect(warnings.count == 1, "one warning per episode\(daemon.process.logTail())")
            #expect(warnings.first?.contains("errno=EMFILE") == true && warnings.first?.contains("limit=\(Self.limit)") == true)

            // Files free again: a new client is served, and the log says so.
            for peer in held { peer.close() }
            held.removeAll()
            try waitUntil("the daemon to answer ping again\(daemon.process.logTail())") {
                DaemonProcess.answersPing(daemon.socketPath)
            }
            try waitUntil("the notice that accepting works again\(daemon.process.logTail())") {
                daemon.process.stderrLines.contains { $0.contains("notice") && $0.contains("accepting connections again") }
            }
            #expect(daemon.process.stderrLines.filter { $0.contains(Self.warning) }.count == 1)
        }
    }
}
