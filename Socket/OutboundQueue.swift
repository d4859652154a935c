/// What ``OutboundQueue/write(to:)`` left.
package enum WriteOutcome: Sendable, Equatable {
    /// Everything queued was written.
    case drained
    /// The socket took no more: write again when it is writable.
    case wouldBlock
}

/// The lines waiting to be written to one socket, with their descriptors.
///
/// Lines without descriptors are copied into one buffer and leave with one
/// sendmsg; a line with descriptors starts a new sendmsg, so they ride on
/// its first byte, as the protocol requires (lines without descriptors
/// queued after it join that sendmsg). A sendmsg that wrote part of its
/// bytes has sent its descriptors: the rest goes without them. Each
/// descriptor is closed once written, or when the queue is closed or
/// dropped. ``queuedByteCount`` is what backpressure looks at.
package struct OutboundQueue: ~Copyable, Sendable {
    /// A buffer of at least this many bytes takes no more lines: the next
    /// one starts a new sendmsg, so that one copy does not grow without end.
    package static let defaultCoalescingLimit = 64 * 1024

    /// One sendmsg's worth: bytes (lines with their LF), the descriptors
    /// that ride on the first byte, and how much was written.
    struct Chunk {
        var bytes: [UInt8]
        var descriptors: [OwnedDescriptor]
        var written = 0
    }

    package let coalescingLimit: Int
    /// The queue is `chunks[head...]`; written chunks before `head` are
    /// dropped in batches.
    private var chunks: [Chunk] = []
    private var head = 0
    package private(set) var queuedByteCount = 0
    package private(set) var queuedDescriptorCount = 0

    package init(coalescingLimit: Int = defaultCoalescingLimit) {
        self.coalescingLimit = coalescingLimit
    }

    deinit {
        for chunk in chunks[head...] { chunk.closeDescriptors() }
    }

    package var isEmpty: Bool { queuedByteCount == 0 }

    /// How many sendmsg calls the queue needs at least (one per chunk).
    var chunkCount: Int { chunks.count - head }

    /// Queues `line` (without its LF: the queue ends it) and the
    /// descriptors it declares; the queue owns them from now on. More
    /// descriptors than one message carries is refused, and they stay the
    /// caller's.
    package mutating func enqueue(line: [UInt8], descriptors: [OwnedDescriptor] = []) throws(SocketError) {
        try enqueue(line, terminated: false, descriptors: descriptors)
    }

    /// ``enqueue(line:descriptors:)`` for a line that already ends in its
    /// LF (as the libraries build their frames): queued without a copy to
    /// strip it.
    package mutating func enqueue(terminatedLine line: [UInt8], descriptors: [OwnedDescriptor] = []) throws(SocketError) {
        try enqueue(line, terminated: true, descriptors: descriptors)
    }

    private mutating func enqueue(_ line: [UInt8], terminated: Bool, descriptors: [OwnedDescriptor]) throws(SocketError) {
        guard descriptors.count <= UnixStreamSocket.maxDescriptorsPerMessage else {
            throw .tooManyDescriptors(count: descriptors.count, maximum: UnixStreamSocket.maxDescriptorsPerMessage)
        }
        let count = terminated ? line.count : line.count + 1
        queuedByteCount += count
        queuedDescriptorCount += descriptors.count
        if descriptors.isEmpty, head < chunks.count, chunks[chunks.count - 1].bytes.count < coalescingLimit {
            chunks[chunks.count - 1].bytes.append(contentsOf: line)
            if !terminated { chunks[chunks.count - 1].bytes.append(0x0A) }
            return
        }
        var bytes = line
        if !terminated { bytes.append(0x0A) }
        chunks.append(Chunk(bytes: bytes, descriptors: descriptors))
    }

    /// ``enqueue(line:descriptors:)`` for bytes that already end with their
    /// LF: copied once, into the last buffer when it has room.
    package mutating func enqueue(lineWithLF bytes: UnsafeRawBufferPointer, descriptors: [OwnedDescriptor] = []) throws(SocketError) {
        var noSpare: [UInt8] = []
        try enqueue(lineWithLF: bytes, descriptors: descriptors, spare: &noSpare)
    }

    /// ``enqueue(lineWithLF:descriptors:)`` that starts a new buffer in
    /// `spare` (storage that ``write(to:spare:)`` kept) rather than in new
    /// storage, and leaves `spare` empty then: a server that keeps one spare
    /// for all its connections allocates no buffer per line.
    package mutating func enqueue(
        lineWithLF bytes: UnsafeRawBufferPointer, descriptors: [OwnedDescriptor] = [], spare: inout [UInt8]
    ) throws(SocketError) {
        guard descriptors.count <= UnixStreamSocket.maxDescriptorsPerMessage else {
            throw .tooManyDescriptors(count: descriptors.count, maximum: UnixStreamSocket.maxDescriptorsPerMessage)
        }
        queuedByteCount += bytes.count
        queuedDescriptorCount += descriptors.count
        if descriptors.isEmpty, head < chunks.count, chunks[chunks.count - 1].bytes.count < coalescingLimit {
            chunks[chunks.count - 1].bytes.append(contentsOf: bytes)
            return
        }
        var storage: [UInt8] = []
        swap(&storage, &spare)
        storage.append(contentsOf: bytes)
        chunks.append(Chunk(bytes: storage, descriptors: descriptors))
    }

    /// Writes until the queue is empty or the socket takes no more. On an
    /// error (EPIPE when the peer is gone) the queue is as it was before
    /// the failed call; close the connection and the queue.
    package mutating func write(to socket: UnixStreamSocket) throws(SocketError) -> WriteOutcome {
        var noSpare: [UInt8] = []
        return try write(to: socket, spare: &noSpare)
    }

    /// Storage up to this size may be kept as a spare (``write(to:spare:)``).
    package static let spareCapacityLimit = 64 * 1024

    /// ``write(to:)`` that keeps the storage of a buffer it wrote out in
    /// `spare`, emptied, when `spare` has none and it is not over
    /// ``spareCapacityLimit``, for ``enqueue(lineWithLF:descriptors:spare:)``.
    package mutating func write(to socket: UnixStreamSocket, spare: inout [UInt8]) throws(SocketError) -> WriteOutcome {
        while head < chunks.count {
            let written = chunks[head].written
            let descriptors = written == 0 ? chunks[head].descriptors : []
            let result: Result<SendOutcome, SocketError> = chunks[head].bytes.withUnsafeBytes { raw in
                Result { () throws(SocketError) -> SendOutcome in
                    try socket.send(UnsafeRawBufferPointer(rebasing: raw[written...]), descriptors: descriptors)
                }
            }
            guard case .sent(let count) = try result.get() else { return .wouldBlock }
            if !descriptors.isEmpty {
                // They went with the first byte; the kernel holds its own references.
                chunks[head].closeDescriptors()
                chunks[head].descriptors = []
                queuedDescriptorCount -= descriptors.count
            }
            chunks[head].written += count
            queuedByteCount -= count
            if chunks[head].written == chunks[head].bytes.count {
                if spare.capacity == 0, chunks[head].bytes.capacity <= Self.spareCapacityLimit {
                    chunks[head].bytes.removeAll(keepingCapacity: true)
                    swap(&spare, &chunks[head].bytes)
                } else {
                    chunks[head].bytes = []
                }
                head += 1
                dropWrittenChunks()
            }
        }
        // One by one: cheaper than removeAll's general replaceSubrange for
        // the one or two (written, emptied) chunks there usually are.
        while !chunks.isEmpty { chunks.removeLast() }
        head = 0
        return .drained
    }

    /// Under steady backpressure the queue may never drain: drop the
    /// written chunks once they are half of the array.
    private mutating func dropWrittenChunks() {
        guard head >= Self.writtenChunksKept, head * 2 >= chunks.count else { return }
        chunks.removeFirst(head)
        head = 0
    }

    /// Written chunks kept at the front before they are dropped in one go.
    static let writtenChunksKept = 64

    // MARK: Hand-over

    /// What one sendmsg still has to write, for a successor process
    /// (issue 28): the bytes not yet written and, when none of them was,
    /// the descriptors that ride on the first.
    package struct PendingWrite: Sendable {
        package var bytes: [UInt8]
        package var descriptors: [OwnedDescriptor]

        package init(bytes: [UInt8], descriptors: [OwnedDescriptor] = []) {
            self.bytes = bytes
            self.descriptors = descriptors
        }
    }

    /// Takes what is queued, in order (the descriptors are the caller's
    /// now), and leaves the queue empty.
    package mutating func handOver() -> [PendingWrite] {
        let pending = chunks[head...].map { chunk in
            PendingWrite(bytes: Array(chunk.bytes[chunk.written...]), descriptors: chunk.descriptors)
        }
        chunks = []
        head = 0
        queuedByteCount = 0
        queuedDescriptorCount = 0
        return pending
    }

    /// A queue that carries on from a predecessor's ``handOver()``: each
    /// write stays one sendmsg, so descriptors ride on the same byte. The
    /// queue owns the descriptors once it returns; when it throws (a write
    /// without bytes, or with more descriptors than a message carries)
    /// they are still the caller's.
    package init(coalescingLimit: Int = defaultCoalescingLimit, resuming pending: [PendingWrite]) throws(SocketError) {
        self.init(coalescingLimit: coalescingLimit)
        for write in pending {
            guard !write.bytes.isEmpty else { throw .emptyBuffer }
            guard write.descriptors.count <= UnixStreamSocket.maxDescriptorsPerMessage else {
                throw .tooManyDescriptors(count: write.descriptors.count, maximum: UnixStreamSocket.maxDescriptorsPerMessage)
            }
        }
        chunks = pending.map { Chunk(bytes: $0.bytes, descriptors: $0.descriptors) }
        queuedByteCount = pending.reduce(0) { $0 + $1.bytes.count }
        queuedDescriptorCount = pending.reduce(0) { $0 + $1.descriptors.count }
    }

    /// Drops every queued line and closes its descriptors (the connection
    /// is closing); dropping the queue does the same.
    package mutating func close() {
        for chunk in chunks[head...] { chunk.closeDescriptors() }
        chunks = []
        head = 0
        queuedByteCount = 0
        queuedDescriptorCount = 0
    }
}

extension OutboundQueue.Chunk {
    func closeDescriptors() {
        for descriptor in descriptors { try? descriptor.close() }
    }
}
