import MediatorSocket

// The byte form of a hand-over's non-descriptor part: little-endian
// integers, length-prefixed byte strings, and descriptors as indexes into
// ``LineServerHandOver/descriptors``. Binary rather than JSON: half lines
// and queued output are arbitrary bytes.
//
//   magic "MDLNSRV\n", version u32,
//   listener index u32, next connection id u64, connection count u32,
//   per connection: id u64, socket index u32, flags u8 (1 reading paused,
//     2 closing, 4 discarding a line over the limit), reported backlog u64,
//     inbound stream offset u64, inbound bytes, batch count u32,
//     per batch: range lower u64, upper u64, truncated u8, indexes;
//     write count u32, per write: bytes, indexes;
//   bytes = length u32 then the bytes; indexes = count u32 then u32 each.
extension LineServerHandOver {
    package static let magic: [UInt8] = Array("MDLNSRV\n".utf8)
    /// Raised whenever a field is added, removed or given another meaning;
    /// a reader accepts only the version it writes.
    package static let currentVersion: UInt32 = 1
    /// What ``decode(_:descriptors:limit:)`` reads at most unless told: far
    /// above a daemon's state (every connection's queued output included).
    package static let maxEncodedBytes = 1 << 30

    private enum Flag {
        static let readingPaused: UInt8 = 1
        static let closing: UInt8 = 2
        static let discardingLine: UInt8 = 4
    }

    /// The byte form; ``descriptors`` travel beside it, in their order.
    package func encoded() -> [UInt8] {
        var writer = HandOverWriter()
        var nextIndex: UInt32 = 0
        func indexes(_ count: Int) {
            writer.u32(UInt32(count))
            for _ in 0..<count {
                writer.u32(nextIndex)
                nextIndex += 1
            }
        }
        writer.bytes.append(contentsOf: Self.magic)
        writer.u32(Self.currentVersion)
        writer.u32(nextIndex)
        nextIndex += 1
        writer.u64(UInt64(nextConnectionID))
        writer.u32(UInt32(connections.count))
        for connection in connections {
            writer.u64(UInt64(connection.id))
            writer.u32(nextIndex)
            nextIndex += 1
            var flags: UInt8 = 0
            if connection.readingPaused { flags |= Flag.readingPaused }
            if connection.closing { flags |= Flag.closing }
            if connection.inbound.discardingLine { flags |= Flag.discardingLine }
            writer.bytes.append(flags)
            writer.u64(UInt64(connection.reportedBacklog))
            writer.u64(UInt64(connection.inbound.streamOffset))
            writer.byteString(connection.inbound.bytes)
            writer.u32(UInt32(connection.inbound.batches.count))
            for batch in connection.inbound.batches {
                writer.u64(UInt64(batch.range.lowerBound))
                writer.u64(UInt64(batch.range.upperBound))
                writer.bytes.append(batch.truncated ? 1 : 0)
                indexes(batch.descriptors.count)
            }
            writer.u32(UInt32(connection.outbound.count))
            for write in connection.outbound {
                writer.byteString(write.bytes)
                indexes(write.descriptors.count)
            }
        }
        return writer.bytes
    }

    /// Reads a hand-over: `descriptors` are the ones ``descriptors`` listed,
    /// in that order, and become the value's. Refuses one over `limit`
    /// bytes, one without the magic, another version, and one whose fields
    /// or descriptor indexes do not hold together, before adopting anything
    /// (on a throw the descriptors are closed as `descriptors` goes).
    package static func decode(
        _ bytes: [UInt8], descriptors: [OwnedDescriptor], limit: Int = maxEncodedBytes
    ) throws(LineServerHandOverError) -> LineServerHandOver {
        guard bytes.count <= limit else { throw .tooLarge(bytes: bytes.count, limit: limit) }
        var reader = HandOverReader(bytes: bytes)
        guard try reader.take(magic.count, "magic") == magic[...] else { throw .notAHandOver }
        let version = try reader.u32("version")
        guard version == currentVersion else { throw .unsupportedVersion(version) }
        var used = [Bool](repeating: false, count: descriptors.count)
        func descriptor(_ field: String) throws(LineServerHandOverError) -> OwnedDescriptor {
            let index = Int(try reader.u32(field))
            guard index < descriptors.count else {
                throw .descriptorMismatch("\(field) refers to descriptor \(index) of \(descriptors.count)")
            }
            guard !used[index] else { throw .descriptorMismatch("descriptor \(index) is referred to twice") }
            used[index] = true
            return descriptors[index]
        }
        func descriptorList(_ field: String) throws(LineServerHandOverError) -> [OwnedDescriptor] {
            let count = try reader.count(field, elementBytes: 4)
            guard count <= UnixStreamSocket.maxDescriptorsPerMessage else {
                throw .malformed("\(field): \(count) descriptors, more than one message carries")
            }
            var list: [OwnedDescriptor] = []
            for _ in 0..<count { list.append(try descriptor(field)) }
            return list
        }

        let listener = try descriptor("listener")
        let nextID = try reader.int("next connection id")
        // The smallest connection: its fixed fields and empty lists.
        let connectionCount = try reader.count("connections", elementBytes: 8 + 4 + 1 + 8 + 8 + 4 + 4 + 4)
        var connections: [Connection] = []
        var ids = Set<LineServer.ConnectionID>()
        for index in 0..<connectionCount {
            let field = "connections[\(index)]"
            let id = try reader.int("\(field).id")
            guard id < nextID, ids.insert(id).inserted else {
                throw .malformed("\(field).id \(id) is reused or not below the next id \(nextID)")
            }
            let socket = try descriptor("\(field).socket")
            let flags = try reader.u8("\(field).flags")
            guard flags & ~(Flag.readingPaused | Flag.closing | Flag.discardingLine) == 0 else {
                throw .malformed("\(field).flags \(flags)")
            }
            let backlog = try reader.int("\(field).backlog")
            let streamOffset = try reader.int("\(field).stream offset")
            let pending = Array(try reader.byteString("\(field).inbound"))
            guard streamOffset <= Int.max - pending.count else { throw .malformed("\(field).stream offset \(streamOffset)") }
            let streamEnd = streamOffset + pending.count
            var batches: [DescriptorBatch] = []
            for batchIndex in 0..<(try reader.count("\(field).batches", elementBytes: 8 + 8 + 1 + 4)) {
                let batchField = "\(field).batches[\(batchIndex)]"
                let lower = try reader.int("\(batchField).lower")
                let upper = try reader.int("\(batchField).upper")
                guard lower < upper, upper <= streamEnd else {
                    throw .malformed("\(batchField) range \(lower)..<\(upper) outside the stream read (up to \(streamEnd))")
                }
                let truncated = try reader.u8("\(batchField).truncated") != 0
                batches.append(DescriptorBatch(
                    range: lower..<upper, descriptors: try descriptorList("\(batchField).descriptors"), truncated: truncated))
            }
            var writes: [OutboundQueue.PendingWrite] = []
            for writeIndex in 0..<(try reader.count("\(field).writes", elementBytes: 4 + 1 + 4)) {
                let writeField = "\(field).writes[\(writeIndex)]"
                let bytes = Array(try reader.byteString("\(writeField).bytes"))
                guard !bytes.isEmpty else { throw .malformed("\(writeField) has no bytes") }
                writes.append(OutboundQueue.PendingWrite(bytes: bytes, descriptors: try descriptorList("\(writeField).descriptors")))
            }
            connections.append(Connection(
                id: id, socket: socket,
                inbound: InboundFrames.HandOver(
                    bytes: pending, streamOffset: streamOffset, discardingLine: flags & Flag.discardingLine != 0, batches: batches),
                outbound: writes, readingPaused: flags & Flag.readingPaused != 0, closing: flags & Flag.closing != 0,
                reportedBacklog: backlog))
        }
        guard reader.isAtEnd else { throw .malformed("\(reader.remaining) bytes after the last connection") }
        if let unused = used.firstIndex(of: false) {
            throw .descriptorMismatch("descriptor \(unused) of \(descriptors.count) is referred to by nothing")
        }
        return LineServerHandOver(listener: listener, connections: connections, nextConnectionID: nextID)
    }
}

/// Appends the byte form's fields.
private struct HandOverWriter {
    var bytes: [UInt8] = []

    mutating func u32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func u64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func byteString(_ string: [UInt8]) {
        u32(UInt32(string.count))
        bytes.append(contentsOf: string)
    }
}

/// Reads the byte form's fields; never past the end, and no count larger
/// than the bytes left could hold.
private struct HandOverReader {
    let bytes: [UInt8]
    var offset = 0

    var remaining: Int { bytes.count - offset }
    var isAtEnd: Bool { offset == bytes.count }

    mutating func take(_ count: Int, _ field: String) throws(LineServerHandOverError) -> ArraySlice<UInt8> {
        guard count <= remaining else { throw .truncated(field: field) }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    mutating func u8(_ field: String) throws(LineServerHandOverError) -> UInt8 {
        guard remaining >= 1 else { throw .truncated(field: field) }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u32(_ field: String) throws(LineServerHandOverError) -> UInt32 {
        try take(4, field).reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// A u64 that must fit an `Int` and not be negative.
    mutating func int(_ field: String) throws(LineServerHandOverError) -> Int {
        let value = try take(8, field).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard value <= UInt64(Int.max) else { throw .malformed("\(field) \(value) is out of range") }
        return Int(value)
    }

    /// A u32 count of elements of at least `elementBytes` each.
    mutating func count(_ field: String, elementBytes: Int) throws(LineServerHandOverError) -> Int {
        let count = Int(try u32(field))
        guard count <= remaining / elementBytes else { throw .truncated(field: field) }
        return count
    }

    mutating func byteString(_ field: String) throws(LineServerHandOverError) -> ArraySlice<UInt8> {
        try take(Int(try u32("\(field) length")), field)
    }
}
