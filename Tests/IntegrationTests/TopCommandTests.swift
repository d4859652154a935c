import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// `mediatorctl top` (issue 12) on a real terminal: tmux runs it, the
    /// test types keys into it and reads its screen.
    @Suite("mediatorctl top")
    struct TopCommand {
        static let tmuxAvailable = FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux")
        /// Uid 4101 may call Notes; nobody else but root may do anything.
        static let policy: JSONValue = ["rules": [["match": ["uid": 4101], "allow": ["call": ["Notes/*"]]]]]

        @Test(
            "On a terminal: targets by calls/s, the uid being refused and by which quota, keys change the order, q restores the terminal",
            .enabled(if: tmuxAvailable, "needs tmux (scripts/install-deps installs it)"))
        func liveTableInTmux() throws {
            let world = try World()
            defer { world.close() }
            let arguments = ["--max-calls-in-flight-per-uid", "1"]
            let daemon = try OtherUser.available ? world.daemon(policy: Self.policy, arguments) : world.daemon(arguments)
            _ = try world.notes(daemon)
            let cli = CLI(daemon)
            let terminal = try Tmux(width: 160, height: 40, directory: world.directory.path)
            defer { terminal.kill() }
            try terminal.start([Paths.mediatorctl, "top", "--socket", daemon.socketPath, "--delay", "0.3"])

            try terminal.waitForScreen("the header") { $0.first?.hasPrefix("mediatorctl top") == true }
            for text in ["a", "b", "c", "d"] { _ = try cli.json("call", ["Notes", "add", "text=\(text)"]) }
            // Calls/s is over the last interval: the row shows it while calls go on.
            try terminal.waitForScreen("a Notes row with calls/s above 0", while: {
                _ = try cli.json("call", ["Notes", "add", "text=more"])
            }) { screen in
                screen.contains { line in
                    let cells = line.split(separator: " ", omittingEmptySubsequences: true)
                    return cells.first == "Notes" && (cells.count > 1 ? Double(cells[1]) ?? 0 : 0) > 0
                }
            }

            if OtherUser.available {
                // A uid past max_calls_in_flight_per_uid: top names it and the quota.
                let alice = OtherUser(uid: 4101, gid: 4101)
                let sleeper = try alice.spawnCtl(world, daemon, "call", ["Notes", "sleep", "ms=20000"], label: "alice-sleep")
                defer { sleeper.kill() }
                try terminal.waitForScreen("alice's call in flight") { screen in
                    screen.contains { $0.hasPrefix("4101 ") }
                }
                try terminal.waitForScreen("uid 4101 refused by max_calls_in_flight_per_uid", while: {
                    let refused = try alice.ctl(daemon, "call", ["Notes", "add", "text=x"])
                    #expect(refused.status == 1 && refused.stderr.contains("overloaded"), "\(refused)")
                }) { screen in
                    screen.contains { $0.hasPrefix("4101 ") && $0.contains("max_calls_in_flight_per_uid") }
                }
            }

            terminal.send("p")
            try terminal.waitForScreen("the order p99 in the header") { $0.first?.contains("order: p99") == true }
            terminal.send("n")
            try terminal.waitForScreen("the order name in the header") { $0.first?.contains("order: name") == true }

            terminal.send("q")
            // The shell around top prints its exit status once it is done.
            try terminal.waitForScreen("top's exit status") { screen in screen.contains { $0.hasPrefix("top exited ") } }
            let screen = terminal.screen()
            #expect(screen.contains("top exited 0"), "\(screen)")
            // Back on the normal screen, where top drew nothing.
            #expect(!terminal.paneState().alternateScreen)
            #expect(!screen.contains { $0.hasPrefix("mediatorctl top") }, "\(screen)")
        }

        @Test("Not on a terminal: one JSON object per refresh, no escape codes")
        func jsonLines() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let cli = CLI(daemon)
            for text in ["a", "b"] { _ = try cli.json("call", ["Notes", "add", "text=\(text)"]) }
            let outcome = try cli.run("top", ["--iterations", "2", "--delay", "0.2", "--order", "name"])
            #expect(outcome.status == 0, "\(outcome)")
            #expect(!outcome.stdout.contains("\u{1B}"))
            let lines = try outcome.jsonLines()
            #expect(lines.count == 2)
            let first = try #require(lines.first)
            #expect(first["order"] == "name")
            let notes = first["targets"]?.arrayValue?.first { $0["target"] == "Notes" }
            #expect(notes?["calls"] == 2)
            // The first refresh is since start; the second over its interval, with no calls in it.
            #expect(lines.last?["interval_s"]?.doubleValue ?? 0 > 0)
            #expect(lines.last?["targets"]?.arrayValue?.first?["calls_per_s"] == 0.0)

            // One target's actions.
            let actions = try cli.run("top", ["--iterations", "1", "--target", "Notes"])
            let entry = try #require(try actions.jsonLines().first)
            #expect(entry["target"] == "Notes" && entry["actions"]?.arrayValue?.first?["action"] == "add", "\(actions)")
        }

        @Test(
            "Without the monitor grant top fails as stats does",
            .enabled(if: OtherUser.available, "needs root and util-linux setpriv"))
        func forbidden() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(policy: Self.policy)
            let outcome = try OtherUser.nobody.ctl(daemon, "top", ["--iterations", "1"])
            #expect(outcome.status == 1 && outcome.stderr.contains("forbidden"), "\(outcome)")
        }
    }
}

/// A private tmux server with one window: a real terminal for a program.
final class Tmux {
    let socketName = "mediator-test-\(getpid())-\(UUID().uuidString.prefix(8))"
    let width: Int
    let height: Int
    let directory: String

    init(width: Int, height: Int, directory: String) throws {
        self.width = width
        self.height = height
        self.directory = directory
    }

    @discardableResult
    func tmux(_ arguments: [String]) throws -> ChildProcess.Outcome {
        try ChildProcess.run("/usr/bin/tmux", ["-L", socketName] + arguments, within: .seconds(10), directory: directory)
    }

    /// Starts `command` in a new detached session of the given size, in a
    /// shell that prints `top exited STATUS` when it ends.
    func start(_ command: [String]) throws {
        let quoted = command.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let outcome = try tmux([
            "-f", "/dev/null", "new-session", "-d", "-s", "top", "-x", String(width), "-y", String(height),
            "\(quoted); echo \"top exited $?\"; sleep 60",
        ])
        guard outcome.status == 0 else { throw HarnessError("tmux new-session failed: \(outcome)") }
    }

    func send(_ keys: String) {
        _ = try? tmux(["send-keys", "-t", "top", "-l", keys])
    }

    /// The pane's lines as shown now.
    func screen() -> [String] {
        guard let outcome = try? tmux(["capture-pane", "-p", "-t", "top"]), outcome.status == 0 else { return [] }
        return outcome.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// Whether the pane shows the alternate screen (a full-screen program's).
    struct PaneState {
        var alternateScreen = false
    }

    func paneState() -> PaneState {
        guard let outcome = try? tmux(["display-message", "-p", "-t", "top", "#{alternate_on}"]), outcome.status == 0 else {
            return PaneState()
        }
        return PaneState(alternateScreen: outcome.stdout.hasPrefix("1"))
    }

    /// Polls the screen (bounded) until `condition` holds; `while` runs between polls.
    func waitForScreen(
        _ what: String, within bound: Duration = .seconds(15), while step: () throws -> Void = {},
        _ condition: ([String]) -> Bool
    ) throws {
        try waitUntil("the screen to show \(what); it shows:\n\(screen().joined(separator: "\n"))", within: bound, every: .milliseconds(100)) {
            if condition(screen()) { return true }
            try step()
            return false
        }
    }

    func kill() {
        _ = try? tmux(["kill-server"])
    }
}
