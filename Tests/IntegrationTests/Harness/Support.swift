import Foundation
import MediatorProtocol

#if canImport(Glibc)
import Glibc
#endif

/// A failure of the harness itself (a bound passed, a process died, a read
/// found no message), with enough context to see what happened.
struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Bounded polling: checks `condition` every `interval` until it holds or
/// `bound` passes, then throws. This is the only way the tests wait for a
/// state (never a fixed sleep).
func waitUntil(
    _ what: @autoclosure () -> String,
    within bound: Duration = .seconds(10),
    every interval: Duration = .milliseconds(20),
    _ condition: () throws -> Bool
) throws {
    let deadline = ContinuousClock.now + bound
    while true {
        if try condition() { return }
        if ContinuousClock.now >= deadline {
            throw HarnessError("timed out after \(bound) waiting for \(what())")
        }
        sleep(for: interval)
    }
}

/// The async variant, for tests that must not hold a thread of the
/// cooperative pool while they wait.
func waitUntilAsync(
    _ what: @autoclosure () -> String,
    within bound: Duration = .seconds(10),
    every interval: Duration = .milliseconds(20),
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + bound
    while true {
        if try await condition() { return }
        if ContinuousClock.now >= deadline {
            throw HarnessError("timed out after \(bound) waiting for \(what())")
        }
        try await Task.sleep(for: interval)
    }
}

/// Blocks the calling thread (only used between polls).
func sleep(for duration: Duration) {
    Thread.sleep(forTimeInterval: duration.seconds)
}

extension Duration {
    var seconds: Double {
        let (whole, atto) = components
        return Double(whole) + Double(atto) / 1e18
    }
    var milliseconds: Int64 {
        let (whole, atto) = components
        return whole * 1000 + atto / 1_000_000_000_000_000
    }
}

/// Where the executables and the examples are.
enum Paths {
    /// The package root: the nearest folder above this file that holds
    /// Package.swift (works from a fresh clone and from any working folder).
    static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
                return url.path
            }
            url.deleteLastPathComponent()
        }
        return FileManager.default.currentDirectoryPath
    }()

    /// The folder of the built products. `swift test` builds the executables
    /// next to the test bundle, so the first choice is the folder of the
    /// running test binary (/proc/self/exe, which also gives the right
    /// configuration for `swift test -c release`); then, on macOS, the folder
    /// above the .xctest bundle; then `.build/debug` under the package root.
    /// `MEDIATOR_BIN_DIR` overrides all of them.
    static let binDirectory: String = {
        let fileManager = FileManager.default
        if let explicit = ProcessInfo.processInfo.environment["MEDIATOR_BIN_DIR"], !explicit.isEmpty {
            return explicit
        }
        var candidates: [String] = []
        var executables: [String] = []
        if let resolved = try? fileManager.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            executables.append(resolved)
        }
        if let main = Bundle.main.executablePath { executables.append(main) }
        executables.append(CommandLine.arguments[0])
        for executable in executables {
            var folder = URL(fileURLWithPath: executable).resolvingSymlinksInPath().deletingLastPathComponent()
            for _ in 0..<4 {
                candidates.append(folder.path)
                folder.deleteLastPathComponent()
            }
        }
        candidates.append(packageRoot + "/.build/debug")
        for candidate in candidates where fileManager.isExecutableFile(atPath: candidate + "/mediatord") {
            return candidate
        }
        return packageRoot + "/.build/debug"
    }()

    static func executable(_ name: String) -> String { binDirectory + "/" + name }

    static var mediatord: String { executable("mediatord") }
    static var mediatorctl: String { executable("mediatorctl") }
    static var exampleComponent: String { executable("example-component") }
    static var notesComponent: String { packageRoot + "/Examples/python/notes_component.py" }
    static var greeter: String { packageRoot + "/Examples/shell/greeter.sh" }

    /// The Python interpreter itself (not a pyenv shim), so that the pid of
    /// the process we start is the pid the component reports.
    static let python: String = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        var found = "/usr/bin/python3"
        for folder in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(folder)/python3") {
            found = "\(folder)/python3"
            break
        }
        if let resolved = try? ChildProcess.run(found, ["-c", "import sys; print(sys.executable)"], within: .seconds(20)),
           resolved.status == 0
        {
            let text = resolved.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            if !text.isEmpty, FileManager.default.isExecutableFile(atPath: text) { return text }
        }
        return found
    }()
}

/// A fresh folder per test, with a short path (a Unix socket path must fit
/// in 108 bytes): `/tmp/mi.PID.N`. It holds the sockets and every process's
/// stdout and stderr; it is removed by `remove()` unless
/// `MEDIATOR_KEEP_TEST_FILES` is set.
final class TestDirectory: @unchecked Sendable {
    let path: String
    private static let counter = Counter()

    init() throws {
        let base = ProcessInfo.processInfo.environment["MEDIATOR_TEST_TMP"] ?? "/tmp"
        var made: String?
        for _ in 0..<100 {
            let candidate = "\(base)/mi.\(getpid()).\(Self.counter.next())"
            if mkdir(candidate, 0o700) == 0 {
                made = candidate
                break
            }
            if errno != EEXIST { throw HarnessError("mkdir \(candidate): \(String(cString: strerror(errno)))") }
        }
        guard let made else { throw HarnessError("cannot make a test folder under \(base)") }
        path = made
    }

    /// A socket path in this folder.
    func socket(_ name: String = "d") -> String { "\(path)/\(name).sock" }

    func file(_ name: String) -> String { "\(path)/\(name)" }

    func remove() {
        if ProcessInfo.processInfo.environment["MEDIATOR_KEEP_TEST_FILES"] != nil { return }
        try? FileManager.default.removeItem(atPath: path)
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value
    }
}

/// Threads for blocking work that runs at the same time (raw peers), so that
/// the cooperative pool is never filled with blocked tasks. Joins them with a
/// bound; returns each body's outcome.
func onThreads<T: Sendable>(
    _ count: Int, within bound: Duration = .seconds(60), _ body: @escaping @Sendable (Int) throws -> T
) throws -> [T] {
    let results = ThreadResults<T>()
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        let thread = Thread {
            let outcome = Result { try body(index) }
            results.lock.lock()
            results.values[index] = outcome
            results.lock.unlock()
            group.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    let seconds = bound.seconds
    guard group.wait(timeout: .now() + seconds) == .success else {
        throw HarnessError("threads did not finish within \(bound)")
    }
    return try (0..<count).map { index in try results.values[index]!.get() }
}

final class ThreadResults<T>: @unchecked Sendable {
    let lock = NSLock()
    var values: [Int: Result<T, any Error>] = [:]
}

extension JSONValue {
    /// Parses one JSON text (test convenience).
    static func parse(_ text: String) throws -> JSONValue { try JSONParser.parse(text) }
}
