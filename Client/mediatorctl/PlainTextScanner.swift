/// Tells, chunk by chunk, whether bytes may go to a terminal as they are:
/// mediatorctl writes the content of a received descriptor to a terminal
/// only while it is plain text, as curl refuses binary output there. Not
/// plain: a C0 control other than tab, line feed and carriage return, DEL,
/// and a C1 control in UTF-8 (U+0080–U+009F, which some terminals obey as
/// escape sequences). Pure, so that it can be unit-tested.
struct PlainTextScanner: Sendable {
    /// The last byte of the previous chunk: a C1 control's two bytes may
    /// fall in two chunks.
    private var previous: UInt8 = 0

    init() {}

    /// Whether `bytes`, following the chunks scanned before, are plain text.
    mutating func isPlain(_ bytes: UnsafeRawBufferPointer) -> Bool {
        for byte in bytes {
            defer { previous = byte }
            switch byte {
            case 0x09, 0x0A, 0x0D: continue
            case 0x00..<0x20, 0x7F: return false
            case 0x80...0x9F where previous == 0xC2: return false
            default: continue
            }
        }
        return true
    }

    /// ``isPlain(_:)-(UnsafeRawBufferPointer)`` of an array's bytes.
    mutating func isPlain(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { isPlain($0) }
    }
}
