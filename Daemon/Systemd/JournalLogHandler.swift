import CSystemd
import Glibc
import Logging

/// A swift-log handler that writes to the journal with structured fields.
///
/// Metadata becomes fields: `target`, `action`, `pid` and `uid` become
/// `MEDIATOR_TARGET`, `MEDIATOR_ACTION`, `MEDIATOR_PEER_PID` and
/// `MEDIATOR_PEER_UID`; any other key becomes `MEDIATOR_<KEY>`.
package struct JournalLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level = .info
    private let label: String

    package init(label: String) {
        self.label = label
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    static let fieldNames: [String: String] = [
        "target": "MEDIATOR_TARGET", "action": "MEDIATOR_ACTION", "pid": "MEDIATOR_PEER_PID", "uid": "MEDIATOR_PEER_UID",
    ]

    package func log(event: LogEvent) {
        var fields = [
            "MESSAGE=\(event.message)", "PRIORITY=\(Self.priority(event.level))", "CODE_FILE=\(event.file)",
            "CODE_LINE=\(event.line)", "CODE_FUNC=\(event.function)", "SYSLOG_IDENTIFIER=mediatord",
            "MEDIATOR_LOGGER=\(label)",
        ]
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        for (key, value) in merged {
            fields.append("\(Self.fieldName(key))=\(value)")
        }
        Self.send(fields)
    }

    /// syslog priorities, as the journal's PRIORITY field wants them.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    /// Journal field names are upper-case letters, digits and underscores,
    /// at most 64 of them, not starting with `_` (the journal's trusted
    /// fields). One invalid name makes `sd_journal_sendv` drop the whole
    /// record, so every key maps to a valid name, whatever it holds. Values
    /// cannot add fields: each field is an iovec of its own, and the journal
    /// stores a value with newlines as one binary-safe field.
    static func fieldName(_ key: String) -> String {
        if let known = fieldNames[key] { return known }
        let cleaned = key.uppercased().unicodeScalars.prefix(maximumFieldNameLength - prefix.count).map {
            scalar -> Character in
            (("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)) ? Character(scalar) : "_"
        }
        return prefix + String(cleaned)
    }

    static let prefix = "MEDIATOR_"
    /// journald refuses longer field names (`journal_field_valid`).
    static let maximumFieldNameLength = 64

    /// `sd_journal_send` is variadic and unavailable to Swift: build the
    /// iovec array for `sd_journal_sendv` instead.
    static func send(_ fields: [String]) {
        let buffers = fields.map { Array($0.utf8) }
        var pointers: [UnsafeMutableRawPointer] = []
        defer { pointers.forEach { $0.deallocate() } }
        var vectors: [iovec] = []
        for bytes in buffers {
            let pointer = UnsafeMutableRawPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
            bytes.withUnsafeBytes { source in
                if let base = source.baseAddress { pointer.copyMemory(from: base, byteCount: bytes.count) }
            }
            pointers.append(pointer)
            vectors.append(iovec(iov_base: pointer, iov_len: bytes.count))
        }
        _ = vectors.withUnsafeBufferPointer { sd_journal_sendv($0.baseAddress, Int32($0.count)) }
    }

    /// Whether stderr is connected to the journal (`JOURNAL_STREAM` names its
    /// device and inode), as under a systemd service.
    package static var stderrIsJournal: Bool {
        guard let value = getenv("JOURNAL_STREAM").map({ String(cString: $0) }) else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(2, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }
}
