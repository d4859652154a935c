import MediatorClient
import MediatorNATS
import MediatorProtocol

/// The descriptor side of ``BridgeBlobs``: sealed memfds read to be sent,
/// and received bytes made new sealed memfds.
enum BlobDescriptors {
    /// The seals that make a memfd's content fixed: without them its
    /// sender could change or shrink it while it is read.
    private static let fixed = OwnedFileDescriptor.immutableSeals & ~sealSeal
    private static let sealSeal: Int32 = 0x0001

    /// The contents of `descriptors`, mapped: each must be a sealed memfd.
    ///
    /// - Throws: `fds_not_supported` for any other descriptor (nothing is
    ///   sent); `frame_too_large` when together they are over `limit` bytes.
    static func contents(_ descriptors: [OwnedFileDescriptor], limit: Int) throws(MediatorError) -> [MappedMemory] {
        var memories: [MappedMemory] = []
        for (index, descriptor) in descriptors.enumerated() {
            guard let seals = descriptor.seals, seals & fixed == fixed else {
                throw MediatorError(
                    .fdsNotSupported,
                    "only sealed memfds cross hosts (descriptor \(index) is not one): their bytes are sent, other descriptors cannot be",
                    data: ["fd": .int(Int64(index))])
            }
            memories.append(try MappedMemory(mapping: descriptor))
        }
        if let error = BridgeBlobs.checkTotal(memories.map(\.count), limit: limit) { throw error }
        return memories
    }

    /// Publishes the chunks of `memories` on `subject`, in order, each at
    /// most what the server takes.
    static func send(_ memories: [MappedMemory], to subject: String, over connection: NATSConnection) throws(NATSError) {
        // 0 while disconnected: then the publish fails anyway.
        let maxPayload = connection.maxPayload > 0 ? connection.maxPayload : defaultMaxPayload
        let chunks = BridgeBlobs.chunks(sizes: memories.map(\.count), chunkBytes: BridgeBlobs.chunkBytes(maxPayload: maxPayload))
        for chunk in chunks {
            let payload = memories[chunk.blob].withUnsafeBytes { bytes in
                Array(bytes[chunk.offset..<(chunk.offset + chunk.count)])
            }
            try connection.publish(subject, headers: [BridgeBlobs.chunkHeader: [chunk.header]], payload: payload)
        }
    }

    /// NATS's default max payload.
    static let defaultMaxPayload = 1 << 20

    /// The received blobs as new sealed memfds, in order.
    static func descriptors(_ assembly: BridgeBlobs.Assembly) throws(MediatorError) -> [OwnedFileDescriptor] {
        var descriptors: [OwnedFileDescriptor] = []
        for blob in assembly.blobs {
            descriptors.append(try OwnedFileDescriptor.sealedMemory(blob, name: "mediator-nats"))
        }
        return descriptors
    }

    /// The blob `message` carries, if it is a chunk: where it goes and its bytes.
    static func chunk(_ message: NATSMessage) -> (blob: Int, offset: Int)? {
        message.header(BridgeBlobs.chunkHeader).flatMap(BridgeBlobs.parseHeader)
    }
}
