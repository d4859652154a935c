import MediatorProtocol

/// One connection's inbound side: bytes in, complete lines out, and the
/// descriptors that came with them.
///
/// Lines are cut by ``LineFramer`` (the limit is exact; a longer line is
/// reported once and never buffered whole). Received descriptors wait in a
/// queue, each batch tagged with the stream bytes of the read that brought
/// it; the caller parses a line, learns from its `fds` how many it takes,
/// and asks ``takeDescriptors(_:for:)``, before asking for the next line.
/// Descriptors that no line can own any more (sent with a line that was too
/// large, or that declared none) are closed as the stream moves past them,
/// so one bad message does not shift the descriptors of the ones after it.
///
/// Noncopyable: it owns descriptors, and dropping it closes every one
/// still queued.
package struct InboundFrames: ~Copyable, Sendable {
    /// Bytes asked of one read unless the caller says otherwise.
    package static let defaultReadSize = 64 * 1024

    /// What one ``receive(from:maxBytes:descriptorCapacity:)`` did; the
    /// descriptors stay queued for ``takeDescriptors(_:for:)``.
    package enum Received: Sendable, Equatable {
        case bytes(Int)
        /// Nothing to read now (EAGAIN): wait until the socket is readable.
        case wouldBlock
        /// The peer closed its end; a last line without LF stays unread.
        case endOfStream
    }

    package let readSize: Int
    /// Bytes asked of the next read: starts small and doubles while reads
    /// fill it, up to ``readSize``, and halves while they use a quarter of
    /// it, so that thousands of idle connections do not each keep a large
    /// buffer (the buffer itself goes once read empty; see `consume`).
    private var adaptiveReadSize: Int
    /// The smallest ``adaptiveReadSize``.
    package static let minimumReadSize = 2048
    private var framer: LineFramer
    /// The pending bytes are `storage[start..<end]`.
    private var storage: [UInt8] = []
    private var start = 0
    private var end = 0
    /// The stream offset of `storage[start]`.
    private var startOffset = 0
    private var batches: [DescriptorBatch] = []
    /// The framer is discarding a line over the limit up to its LF: kept
    /// here because the framer does not say, and a hand-over must carry it.
    private var discardingLine = false
    /// Descriptors closed because no line could own them (for a log or a counter).
    package private(set) var discardedDescriptorCount = 0
    /// The last read filled all the room it was given: more may be waiting.
    /// After a shorter one the socket is most likely empty, and a caller
    /// woken by level-triggered readiness can skip the read that would
    /// only say EAGAIN (it is woken again if more came meanwhile).
    package private(set) var lastReadFilledRoom = false

    /// `maxLineBytes` counts a line without its LF (or CR LF).
    package init(maxLineBytes: Int, readSize: Int = defaultReadSize) {
        framer = LineFramer(maxFrameBytes: maxLineBytes)
        self.readSize = max(1, readSize)
        self.adaptiveReadSize = min(self.readSize, Self.minimumReadSize)
    }

    deinit {
        for batch in batches { _ = batch.close() }
    }

    /// Bytes received and not yet cut into lines.
    package var bufferedByteCount: Int { end - start }

    /// The buffer's size, read or not.
    var bufferCapacity: Int { storage.count }

    /// Descriptors received and not yet handed over or closed.
    /// Whether any descriptors (or a truncated read's mark) wait for a line.
    package var hasQueuedDescriptors: Bool { !batches.isEmpty }

    package var queuedDescriptorCount: Int { batches.reduce(0) { $0 + $1.descriptors.count } }

    /// Reads once from `socket`, at most `maxBytes` (``readSize`` unless
    /// given), with room for `descriptorCapacity` descriptors. Then take
    /// every line with ``nextFrame()`` before reading again, so that the
    /// buffer stays within one line's limit and a read.
    package mutating func receive(
        from socket: UnixStreamSocket,
        maxBytes: Int? = nil,
        descriptorCapacity: Int = UnixStreamSocket.maxDescriptorsPerMessage,
        controlSpace: ControlSpace? = nil
    ) throws(SocketError) -> Received {
        let room = max(1, maxBytes ?? adaptiveReadSize)
        makeRoom(room)
        let end = end
        let result: Result<ReceiveOutcome, SocketError> = storage.withUnsafeMutableBytes { raw in
            Result { () throws(SocketError) -> ReceiveOutcome in
                try socket.receive(
                    into: UnsafeMutableRawBufferPointer(rebasing: raw[end..<(end + room)]), descriptorCapacity: descriptorCapacity,
                    controlSpace: controlSpace)
            }
        }
        switch try result.get() {
        case .received(let count, let descriptors, let truncated):
            lastReadFilledRoom = count == room
            if maxBytes == nil {
                if count == room {
                    adaptiveReadSize = min(readSize, adaptiveReadSize * 2)
                } else if count < room / 4 {
                    adaptiveReadSize = max(min(readSize, Self.minimumReadSize), adaptiveReadSize / 2)
                }
            }
            recordArrival(byteCount: count, descriptors: descriptors, truncated: truncated)
            return .bytes(count)
        case .wouldBlock:
            // The room made for this read is not kept for an idle connection.
            if start == end, storage.count > 2 * Self.minimumReadSize { storage = [] }
            return .wouldBlock
        case .endOfStream: return .endOfStream
        }
    }

    /// The next complete line, a line over the limit, or nil until more
    /// bytes arrive.
    package mutating func nextFrame() -> InboundFrame? {
        let cut = nextCut()
        switch cut.kind {
        case .line: return .line(cut.line)
        case .tooLarge: return .tooLarge
        case .needMore: return nil
        }
    }

    /// ``nextFrame()`` as a struct (see ``FrameCut``): the read loops' way.
    package mutating func nextCut() -> FrameCut {
        let (start, end) = (start, end)
        let step = storage.withUnsafeBytes { raw in
            framer.next(UnsafeRawBufferPointer(rebasing: raw[start..<end]))
        }
        switch step {
        case .frame(let lineStart, let length, let consumed):
            let lineOffset = startOffset + lineStart
            // The buffer shared, not the line copied out of it (an
            // allocation and a copy per line).
            let line = InboundLine(
                storage: storage, range: (start + lineStart)..<(start + lineStart + length), streamOffset: lineOffset,
                nextOffset: startOffset + consumed)
            discardingLine = false
            consume(consumed)
            let nextOffset = startOffset
            // Batches that end before the line, or lie inside it without
            // holding its first byte, belong to no line any more.
            discardBatches { !$0.contains(lineAt: lineOffset) && $0.range.upperBound <= nextOffset }
            return FrameCut(.line, line)
        case .tooLarge(let consumed):
            noteDiscarding(consumed: consumed, from: start)
            consume(consumed)
            let nextOffset = startOffset
            discardBatches { $0.range.upperBound <= nextOffset }
            return FrameCut(.tooLarge)
        case .needMore(let consumed):
            noteDiscarding(consumed: consumed, from: start)
            consume(consumed)
            // The pending bytes hold no LF: only a batch with the pending
            // line's first byte can still be claimed.
            let pendingLine = startOffset
            discardBatches { !$0.contains(lineAt: pendingLine) }
            return FrameCut(.needMore)
        }
    }

    /// Hands over the `count` descriptors `line` declares (its `fds`; zero
    /// when it has none), or reports that they did not come with it. Call
    /// before ``nextFrame()`` moves on to the next line.
    ///
    /// A line that declares none but came with descriptors is a mismatch
    /// when the read that brought them ended inside this line; when that
    /// read reaches into the next line, they may be the next line's and
    /// stay queued.
    package mutating func takeDescriptors(_ count: Int, for line: InboundLine) -> DescriptorClaim {
        guard let index = batches.firstIndex(where: { $0.contains(lineAt: line.streamOffset) }) else {
            return count == 0 ? .descriptors([]) : .mismatch(declared: count, arrived: 0, truncated: false)
        }
        let batch = batches[index]
        if count == 0 && batch.range.upperBound > line.nextOffset { return .descriptors([]) }
        batches.remove(at: index)
        guard !batch.truncated, batch.descriptors.count == count else {
            return .mismatch(declared: count, arrived: batch.close(), truncated: batch.truncated)
        }
        return .descriptors(batch.descriptors)
    }

    /// Closes every queued descriptor and drops the buffered bytes (the
    /// connection is closing); dropping the value does the same.
    package mutating func close() {
        discardBatches { _ in true }
        storage = []
        start = 0
        end = 0
    }

    // MARK: Hand-over

    /// What a connection has read and not yet cut into lines, for a
    /// successor process (issue 28): ``handOver()`` takes it,
    /// ``init(maxLineBytes:readSize:resuming:)`` carries on from it.
    package struct HandOver: Sendable {
        /// The bytes received and not yet cut into lines (a half line).
        package var bytes: [UInt8]
        /// The stream offset of `bytes[0]`.
        package var streamOffset: Int
        /// A line over the limit is being discarded up to its LF.
        package var discardingLine: Bool
        /// Descriptors received and not yet handed to a line, with the
        /// stream bytes of the read that brought each batch.
        package var batches: [DescriptorBatch]

        package init(bytes: [UInt8], streamOffset: Int, discardingLine: Bool, batches: [DescriptorBatch]) {
            self.bytes = bytes
            self.streamOffset = streamOffset
            self.discardingLine = discardingLine
            self.batches = batches
        }
    }

    /// Takes the pending bytes and queued descriptors (now the caller's)
    /// and leaves this value empty; call between reads.
    package mutating func handOver() -> HandOver {
        let handOver = HandOver(
            bytes: Array(storage[start..<end]), streamOffset: startOffset, discardingLine: discardingLine, batches: batches)
        batches = []
        storage = []
        start = 0
        end = 0
        return handOver
    }

    /// Carries on from a predecessor's ``handOver()``: the half line
    /// completes with the next bytes read, and its descriptors are claimed
    /// as if they had been read here.
    package init(maxLineBytes: Int, readSize: Int = defaultReadSize, resuming handOver: HandOver) {
        self.init(maxLineBytes: maxLineBytes, readSize: readSize)
        storage = handOver.bytes
        end = storage.count
        startOffset = handOver.streamOffset
        batches = handOver.batches
        if handOver.discardingLine {
            // The framer has no way in to its discarding state but the one
            // a stream takes: a line over the limit without its LF.
            let overLimit = [UInt8](repeating: 0x20, count: maxLineBytes + 2)
            _ = overLimit.withUnsafeBytes { framer.next($0) }
            discardingLine = true
        }
    }

    /// After a step that dropped `consumed` bytes from `start`: a line
    /// over the limit is still being discarded unless they end with its LF.
    private mutating func noteDiscarding(consumed: Int, from start: Int) {
        guard consumed > 0 else { return }
        discardingLine = storage[start + consumed - 1] != 0x0A
    }

    // MARK: Buffer and queue

    private mutating func recordArrival(byteCount: Int, descriptors: [OwnedDescriptor], truncated: Bool) {
        let arrivalOffset = startOffset + (end - start)
        end += byteCount
        guard !descriptors.isEmpty || truncated else { return }
        batches.append(DescriptorBatch(range: arrivalOffset..<(arrivalOffset + byteCount), descriptors: descriptors, truncated: truncated))
    }

    private mutating func consume(_ count: Int) {
        start += count
        startOffset += count
        if start == end {
            start = 0
            end = 0
            // A long line or a burst grew the buffer: give the memory back
            // once it is read rather than keep it for an idle connection.
            if storage.count > 2 * Self.minimumReadSize { storage = [] }
        }
    }

    /// At least `room` free bytes after `end`: moves the pending bytes to
    /// the front, then grows.
    private mutating func makeRoom(_ room: Int) {
        guard storage.count - end < room else { return }
        if start > 0 {
            storage.removeSubrange(0..<start)
            end -= start
            start = 0
        }
        let missing = room - (storage.count - end)
        if missing > 0 { storage.append(contentsOf: repeatElement(0, count: missing)) }
    }

    private mutating func discardBatches(where isStale: (DescriptorBatch) -> Bool) {
        guard !batches.isEmpty else { return }
        var kept: [DescriptorBatch] = []
        for batch in batches {
            if isStale(batch) {
                discardedDescriptorCount += batch.close()
            } else {
                kept.append(batch)
            }
        }
        batches = kept
    }
}
