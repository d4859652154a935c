import MediatorProtocol

/// Sealed memfds crossing hosts as bytes (docs/scale-out.md, "Descriptors
/// across hosts"). A call or a result that carries descriptors names the
/// sizes of their contents (`"blobs": [n0, n1, ...]`; `{"$fd": I}` in its
/// JSON is unchanged and means blob I); the bytes follow in chunk
/// messages, in order, each at most what the NATS server takes in one
/// message, and the receiver makes each blob a new sealed memfd. Pure:
/// how blobs are cut into chunks and put together again.
package enum BridgeBlobs {
    /// The version of this form: announced by a host whose bridge takes
    /// blobs (`"fds": 1` in its announcement) and sent in each call by a
    /// caller that takes them in results. A bridge that does not know the
    /// member ignores it, so a caller sends blobs only to hosts that
    /// announce this version, and a host answers with blobs only to
    /// callers that asked with it.
    package static let version: Int64 = 1

    /// The header of a chunk message: `"BLOB OFFSET"`, where the chunk's
    /// bytes go. A chunk that is not the next one expected (a message lost
    /// by a slow consumer) fails the call instead of making a wrong memfd.
    package static let chunkHeader = "Mediator-Blob-Chunk"

    /// Bytes of a NATS message left for its subject and headers: a chunk
    /// holds the server's max payload less this.
    static let messageOverhead = 1024

    /// The most bytes of blobs one call (its request, or its result) may
    /// carry, unless the settings say otherwise (`--nats-max-fd-bytes`).
    package static let defaultMaxBytesPerCall = 256 << 20

    /// Where a chunk's bytes are: blob `blob`, from `offset`, `count` bytes.
    package struct Chunk: Sendable, Equatable {
        package var blob: Int
        package var offset: Int
        package var count: Int

        package init(blob: Int, offset: Int, count: Int) {
            self.blob = blob
            self.offset = offset
            self.count = count
        }

        /// The value of ``BridgeBlobs/chunkHeader``.
        package var header: String { "\(blob) \(offset)" }
    }

    /// The bytes of blob data one chunk message holds for a server whose
    /// max payload is `maxPayload` (at least 1).
    package static func chunkBytes(maxPayload: Int) -> Int {
        max(1, maxPayload - messageOverhead)
    }

    /// The chunks for blobs of `sizes`, in the order they are sent: each
    /// blob in turn, in pieces of at most `chunkBytes`; an empty blob has none.
    package static func chunks(sizes: [Int], chunkBytes: Int) -> [Chunk] {
        let step = max(1, chunkBytes)
        var chunks: [Chunk] = []
        for (blob, size) in sizes.enumerated() {
            for offset in stride(from: 0, to: size, by: step) {
                chunks.append(Chunk(blob: blob, offset: offset, count: min(step, size - offset)))
            }
        }
        return chunks
    }

    /// `"BLOB OFFSET"` read back; nil for anything else.
    package static func parseHeader(_ header: String) -> (blob: Int, offset: Int)? {
        let parts = header.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 2, let blob = Int(parts[0]), let offset = Int(parts[1]), blob >= 0, offset >= 0 else {
            return nil
        }
        return (blob, offset)
    }

    /// The `"blobs"` member as sizes: none when absent; `bad_request` when
    /// it is not a list of sizes, `frame_too_large` when their sum is over
    /// `limit`.
    package static func sizes(_ value: JSONValue?, limit: Int) -> Result<[Int], MediatorError> {
        guard let value else { return .success([]) }
        guard let list = value.arrayValue else { return .failure(MediatorError(.badRequest, "\"blobs\" must be a list of sizes")) }
        var sizes: [Int] = []
        for item in list {
            guard let size = item.intValue.flatMap({ Int(exactly: $0) }), size >= 0 else {
                return .failure(MediatorError(.badRequest, "\"blobs\" must be a list of sizes"))
            }
            sizes.append(size)
        }
        if let error = checkTotal(sizes, limit: limit) { return .failure(error) }
        return .success(sizes)
    }

    /// `frame_too_large` when `sizes` add up to more than `limit` bytes.
    package static func checkTotal(_ sizes: [Int], limit: Int) -> MediatorError? {
        var total = 0
        for size in sizes {
            let (sum, overflow) = total.addingReportingOverflow(size)
            guard !overflow, sum <= limit else {
                return MediatorError(
                    .frameTooLarge, "descriptors across hosts carry at most \(limit) bytes per call",
                    data: ["max_fd_bytes": .int(Int64(limit))])
            }
            total = sum
        }
        return nil
    }

    /// The blobs of one call as their chunks come, in order.
    package struct Assembly: Sendable {
        package let sizes: [Int]
        /// The bytes received, blob by blob.
        package private(set) var blobs: [[UInt8]]
        /// The blob the next chunk belongs to.
        private var next = 0

        package init(sizes: [Int]) {
            self.sizes = sizes
            // Nothing reserved: the sizes are another host's word, the bytes come as they come.
            self.blobs = sizes.map { _ in [] }
            skipComplete()
        }

        /// Every blob has all its bytes.
        package var isComplete: Bool { next == sizes.count }

        /// Adds the chunk that starts at `offset` of blob `blob`; the error
        /// (`internal`) when it is not the next one expected or too long.
        package mutating func add(blob: Int, offset: Int, bytes: some Collection<UInt8>) -> MediatorError? {
            guard blob == next, next < sizes.count, offset == blobs[blob].count, !bytes.isEmpty,
                  bytes.count <= sizes[blob] - offset
            else {
                return MediatorError(.internal, "a chunk of a descriptor's bytes from another host was lost or out of order")
            }
            blobs[blob].append(contentsOf: bytes)
            skipComplete()
            return nil
        }

        private mutating func skipComplete() {
            while next < sizes.count && blobs[next].count == sizes[next] { next += 1 }
        }
    }
}
