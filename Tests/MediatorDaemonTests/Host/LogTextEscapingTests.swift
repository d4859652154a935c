import Foundation
import Logging
import MediatorProtocol
import Testing

@testable import MediatorDaemon

/// The escaping that keeps peers' strings from forging log lines (issue 10,
/// defect 4), and the handler that applies it to every log record.
@Suite("Log escaping: control characters in logged text cannot forge lines")
struct LogTextEscapingTests {
    @Test(
        "Control characters, DEL, C1, the line separators and backslash are escaped; other text passes",
        arguments: [
            ("plain name", "plain name"),
            ("", ""),
            ("x\n2026-01-01T00:00:00+0000 critical mediatord : uid=0 forged",
             "x\\n2026-01-01T00:00:00+0000 critical mediatord : uid=0 forged"),
            ("a\r\nb\tc", "a\\r\\nb\\tc"),
            ("\u{1b}[31mred\u{1b}[0m", "\\u{1b}[31mred\\u{1b}[0m"),
            ("nul\u{0}bell\u{7}", "nul\\u{0}bell\\u{7}"),
            ("del\u{7f}", "del\\u{7f}"),
            ("c1\u{80}nel\u{85}csi\u{9b}end\u{9f}", "c1\\u{80}nel\\u{85}csi\\u{9b}end\\u{9f}"),
            ("ls\u{2028}ps\u{2029}", "ls\\u{2028}ps\\u{2029}"),
            ("literal \\n stays distinct", "literal \\\\n stays distinct"),
            ("/usr/bin/caf\u{e9} \u{a0}\u{a0} 日本 🙂", "/usr/bin/caf\u{e9} \u{a0}\u{a0} 日本 🙂"),
            ("\u{1f}\u{20}\u{7e}\u{a0}\u{2027}\u{202a}", "\\u{1f} ~\u{a0}\u{2027}\u{202a}"),
        ])
    func escapesText(input: String, expected: String) {
        let escaped = LogTextEscaping.escaped(input)
        #expect(escaped == expected)
        #expect(!escaped.unicodeScalars.contains { ControlEscaping.isControl($0) })
    }

    @Test("Every string in nested metadata is escaped: keys, strings, descriptions, dictionaries, arrays")
    func escapesMetadata() {
        struct Described: CustomStringConvertible, Sendable { var description: String { "d\nd" } }
        let metadata: Logger.Metadata = [
            "name": "a\nb",
            "k\ney": "v",
            "convertible": .stringConvertible(Described()),
            "nested": .dictionary(["inner": .array(["x\ry", .dictionary(["deep": "\u{85}"])])]),
        ]
        let escaped = LogTextEscaping.escaped(metadata)
        #expect(escaped["name"] == "a\\nb")
        #expect(escaped["k\\ney"] == "v")
        #expect(escaped["k\ney"] == nil)
        #expect(escaped["convertible"] == "d\\nd")
        #expect(escaped["nested"] == .dictionary(["inner": .array(["x\\ry", .dictionary(["deep": "\\u{85}"])])]))
    }

    @Test("The wrapper escapes the message, statement, handler and provider metadata, and errors, before its handler sees them")
    func wrapperEscapesEverything() {
        struct Failure: Error, CustomStringConvertible { var description: String { "bad\nthing" } }
        let captured = CapturedLogEvents()
        var handler = ControlEscapingLogHandler(wrapping: CapturingLogHandler(captured: captured))
        handler.metadataProvider = Logger.MetadataProvider { ["provided": "p\nq"] }
        handler[metadataKey: "handler"] = "h\u{1b}"
        handler.logLevel = .debug
        var logger = Logger(label: "test") { _ in handler }
        logger[metadataKey: "attached"] = "a\u{2028}b"
        logger.info("hello \("x\n2026-01-01T00:00:00+0000 critical mediatord : uid=0 forged")", metadata: ["name": "n\rm"])
        // Logger has no way to attach an error here; a handler may still get one.
        handler.log(event: LogEvent(
            level: .error, message: "failed", error: Failure(), metadata: nil, source: nil, file: #fileID,
            function: #function, line: #line))
        logger.debug("debug passes")
        logger.trace("trace is below the level")

        let events = captured.events
        #expect(events.count == 3)
        guard events.count == 3 else { return }
        #expect(events[0].message == "hello x\\n2026-01-01T00:00:00+0000 critical mediatord : uid=0 forged")
        #expect(events[0].level == .info)
        #expect(events[0].metadata == [
            "name": "n\\rm", "attached": "a\\u{2028}b", "handler": "h\\u{1b}", "provided": "p\\nq",
        ])
        #expect(events[1].metadata?["error.message"] == "bad\\nthing")
        #expect(events[1].metadata?["error.type"] != nil)
        #expect(events[1].hadError == false)
        #expect(events[2].message == "debug passes")
        // The wrapped handler keeps no metadata of its own to print raw.
        #expect(captured.handlerMetadataSeen.allSatisfy { $0.isEmpty })
    }

    @Test("Text without anything to escape is passed through as is")
    func cleanTextUnchanged() {
        let captured = CapturedLogEvents()
        let handler = ControlEscapingLogHandler(wrapping: CapturingLogHandler(captured: captured))
        let logger = Logger(label: "test") { _ in handler }
        logger.info("connection opened", metadata: ["pid": "42", "uid": "1000"])
        #expect(captured.events.first?.message == "connection opened")
        #expect(captured.events.first?.metadata == ["pid": "42", "uid": "1000"])
    }
}

/// What ``CapturingLogHandler`` received.
final class CapturedLogEvents: @unchecked Sendable {
    struct Event {
        var level: Logger.Level
        var message: String
        var metadata: Logger.Metadata?
        var hadError: Bool
    }

    private let lock = NSLock()
    private var stored: [Event] = []
    private var handlerMetadata: [Logger.Metadata] = []

    var events: [Event] { lock.withLock { stored } }
    var handlerMetadataSeen: [Logger.Metadata] { lock.withLock { handlerMetadata } }

    func append(_ event: Event, handlerMetadata metadata: Logger.Metadata) {
        lock.withLock {
            stored.append(event)
            handlerMetadata.append(metadata)
        }
    }
}

/// A handler that records each event as it arrives, for tests of wrappers.
struct CapturingLogHandler: LogHandler {
    let captured: CapturedLogEvents
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        captured.append(
            .init(level: event.level, message: event.message.description, metadata: event.metadata, hadError: event.error != nil),
            handlerMetadata: metadata)
    }
}
