import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import MediatorClient
import MediatorProtocol

/// How mediatorctl prints: results on stdout, errors on stderr, each write
/// unbuffered so that a line is out as soon as it is known.
struct Output: Sendable {
    enum Style: Sendable { case compact, pretty }

    /// For single results: `--json`, `--pretty`, else pretty on a terminal.
    var style: Style
    /// Whether `--pretty` was given: line-per-value verbs (`listen`,
    /// `stream`) stay compact unless it was.
    var prettyAsked: Bool
    /// Whether JSON goes to people (a terminal, or `--pretty`) rather than to
    /// a program (`--json`, or compact JSON into a pipe): then the C1 and
    /// bidirectional controls that JSON leaves raw are written as `\u0085`
    /// escapes (``ControlEscaping``), the same JSON value. `--json` output
    /// is never touched.
    var forPeople: Bool

    /// The exit statuses (`--help` lists them).
    enum Status {
        static let error: Int32 = 1
        static let usage: Int32 = 2
        static let dataError: Int32 = 65  // EX_DATAERR: verify found a problem in a file
        static let unavailable: Int32 = 69  // EX_UNAVAILABLE
    }

    /// A single result.
    func result(_ value: JSONValue) {
        json(style == .pretty ? value.prettyText() : value.jsonText)
    }

    /// One of many values, one per line.
    func line(_ value: JSONValue) {
        json(prettyAsked ? value.prettyText() : value.jsonText)
    }

    private func json(_ text: String) {
        Self.write(STDOUT_FILENO, (forPeople ? ControlEscaping.escaped(text, .json) : text) + "\n")
    }

    /// Prints `mediatorctl: CODE: message` (and the data on a second line) and
    /// gives the exit status to throw: 69 when the daemon could not be
    /// reached or went away before replying, else 1.
    func fail(_ error: MediatorError) -> ExitCode {
        Self.error(error)
        return ExitCode(Self.status(for: error))
    }

    /// The code and message come from the daemon or a component: escaped,
    /// so that they cannot drive the terminal or forge a line.
    static func error(_ error: MediatorError) {
        write(STDERR_FILENO, errorText(error))
    }

    static func errorText(_ error: MediatorError) -> String {
        var text = "mediatorctl: \(escaped(error.code.rawValue)): \(escaped(error.message))\n"
        if let data = shownData(error.data) { text += ControlEscaping.escaped(data.jsonText, .json) + "\n" }
        return text
    }

    /// Text for people that may hold a peer's strings, with its control
    /// characters shown as systemctl shows them (`\x1b`, `\n`; see
    /// ``ControlEscaping``). Everything printed for people but JSON goes
    /// through here.
    static func escaped(_ text: String) -> String {
        ControlEscaping.escaped(text, .terminal)
    }

    /// An error's data as printed: without `delivered`, which every error
    /// of the daemon has and which is for programs that retry, not for
    /// the person at the terminal (nil when nothing else is left).
    static func shownData(_ data: JSONValue?) -> JSONValue? {
        guard case .object(var members)? = data else { return data }
        members[MediatorError.deliveredMember] = nil
        return members.isEmpty ? nil : .object(members)
    }

    static func status(for error: MediatorError) -> Int32 {
        error.code == .unreachable || error.code == .disconnected ? Status.unavailable : Status.error
    }

    /// A line on stderr for the operator (`serving TARGET`), escaped: it may
    /// name what a file or the daemon said.
    static func log(_ message: String) {
        write(STDERR_FILENO, "mediatorctl: \(escaped(message))\n")
    }

    /// `2.5`, `30` (no trailing `.0`).
    static func seconds(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    /// Writes all of `text`, retrying on EINTR and short writes.
    ///
    /// SwiftNIO ignores SIGPIPE, so a reader that went away (`listen | head
    /// -1`) shows as EPIPE: on stdout that ends the process as SIGPIPE
    /// would, rather than writing into nothing for ever.
    static func write(_ fd: Int32, _ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { write(fd, bytes: $0) }
    }

    /// Writes all of `bytes` as ``write(_:_:)`` does; false (errno set) when
    /// a write failed other than on stdout's EPIPE.
    @discardableResult
    static func write(_ fd: Int32, bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var offset = 0
        while offset < bytes.count {
            let count = Glibc.write(fd, base + offset, bytes.count - offset)
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE && fd == STDOUT_FILENO {
                    signal(SIGPIPE, SIG_DFL)
                    raise(SIGPIPE)
                    Glibc.exit(141)
                }
                return false
            }
            offset += count
        }
        return true
    }

    /// Everything `fd` gives until its end (stdin for `call ... -`).
    static func readAll(_ fd: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and line ends.
    var trimmingWhitespace: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
