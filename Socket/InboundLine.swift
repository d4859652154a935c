/// What ``InboundFrames/nextFrame()`` cut from the stream.
package enum InboundFrame: Sendable {
    case line(InboundLine)
    /// A line over the limit began; it is discarded up to its LF, and the
    /// descriptors that came with it are closed.
    case tooLarge
}

/// What ``InboundFrames/nextCut()`` cut from the stream: a struct, not an
/// optional enum as ``InboundFrames/nextFrame()`` returns, because another
/// module copies and destroys an enum of this module held in memory through
/// its value witnesses (some 75 instructions each, twice per line), and a
/// struct's fields inline.
package struct FrameCut: Sendable {
    package enum Kind: Sendable {
        case line
        /// As ``InboundFrame/tooLarge``.
        case tooLarge
        /// No complete line until more bytes arrive.
        case needMore
    }

    package let kind: Kind
    /// The line when ``kind`` is ``Kind/line``; an empty one otherwise.
    package let line: InboundLine

    init(_ kind: Kind, _ line: InboundLine = InboundLine(storage: [], range: 0..<0, streamOffset: 0, nextOffset: 0)) {
        self.kind = kind
        self.line = line
    }
}

/// One complete line, without its LF (or CR LF): where it is in the
/// connection's read buffer, which it shares rather than copies (the buffer
/// stays as it was for as long as a line holds it).
package struct InboundLine: Sendable {
    private let storage: [UInt8]
    private let range: Range<Int>
    /// The line's bytes, copied out of the buffer.
    package var bytes: [UInt8] { Array(storage[range]) }
    package var count: Int { range.count }
    /// Where the line begins in the connection's byte stream: the
    /// descriptors sent with it arrived with the read that held this byte.
    package let streamOffset: Int
    /// Where the next line may begin (just past the LF).
    let nextOffset: Int

    init(storage: [UInt8], range: Range<Int>, streamOffset: Int, nextOffset: Int) {
        self.storage = storage
        self.range = range
        self.streamOffset = streamOffset
        self.nextOffset = nextOffset
    }

    /// The line's bytes in place, valid within `body` only.
    package func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try storage.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }
}

/// The descriptors ``InboundFrames/takeDescriptors(_:for:)`` hands over for
/// a line, or why it cannot.
package enum DescriptorClaim: Sendable {
    /// Exactly the descriptors declared, in the order they were sent; the
    /// caller owns them now.
    case descriptors([OwnedDescriptor])
    /// The line declared `declared` descriptors but `arrived` came with it
    /// (zero when `truncated`: more came than the read had room for, see
    /// ``ReceiveOutcome/received(byteCount:descriptors:descriptorsTruncated:)``).
    /// The ones that arrived are closed.
    case mismatch(declared: Int, arrived: Int, truncated: Bool)
}

/// The descriptors one read brought, and which bytes of the stream that
/// read held. The kernel hands a message's descriptors to the read that
/// takes its first byte, and ends that read after the sender's bytes that
/// carried them; so a read brings at most one message's descriptors, and
/// that message begins inside `range`.
package struct DescriptorBatch: Sendable {
    package var range: Range<Int>
    package var descriptors: [OwnedDescriptor]
    /// More came than the read had room for: the batch holds none, and
    /// the line it belongs to is a mismatch.
    package var truncated: Bool

    package init(range: Range<Int>, descriptors: [OwnedDescriptor], truncated: Bool) {
        self.range = range
        self.descriptors = descriptors
        self.truncated = truncated
    }

    func contains(lineAt offset: Int) -> Bool { range.contains(offset) }

    /// Closes the descriptors now; returns how many there were.
    @discardableResult
    package func close() -> Int {
        for descriptor in descriptors { try? descriptor.close() }
        return descriptors.count
    }
}
