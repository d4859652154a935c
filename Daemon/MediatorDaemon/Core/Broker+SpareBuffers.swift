import NIOCore

/// A routed call writes two lines and keeps its caller's id: three
/// buffers, each two allocations to make and two to free. Their storage is
/// used again instead: the host hands a line back once it has queued its
/// bytes (``recycleLine(_:)``), a final answer hands back its call's id.
/// A buffer still shared when it is taken (a monitor's record holds the
/// line) gets new storage as it is emptied, so reuse never changes bytes
/// something else holds.
extension Broker {
    /// Storage past this is not kept: one long line must not pin its size.
    static let keptSpareCapacity = 16 * 1024

    /// `line` was queued by the host: its storage may carry the next line.
    package func recycleLine(_ line: ByteBuffer) {
        guard spareLine == nil, line.capacity <= Self.keptSpareCapacity else { return }
        spareLine = line
    }

    /// A finished call's id buffer, for the next call's id.
    func recycleID(_ id: ByteBuffer) {
        guard spareID == nil, id.capacity <= Self.keptSpareCapacity else { return }
        spareID = id
    }

    /// ``ownCopy(_:)`` for a call's id, in a finished call's storage when there is one.
    func ownIDCopy(_ bytes: ByteBuffer) -> ByteBuffer {
        guard var copy = spareID else { return ownCopy(bytes) }
        spareID = nil
        copy.clear()
        // The bytes as a pointer: `writeImmutableBuffer` went through NIO's
        // out-of-line `writeBuffer` and its exclusivity checks (~340
        // instructions for an id of a few bytes).
        bytes.withUnsafeReadableBytes { _ = copy.writeBytes($0) }
        return copy
    }
}
