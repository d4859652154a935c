import CNats

/// One message received from NATS, copied out of libnats's `natsMsg` (which
/// is destroyed right after).
package struct NATSMessage: Sendable, Equatable {
    package var subject: String
    /// Where an answer goes; nil for a plain publish.
    package var reply: String?
    /// NATS headers (names as sent; a name may carry several values).
    package var headers: [String: [String]]
    package var payload: [UInt8]
    /// The server's answer to a request that nobody subscribes to (a
    /// `503` status header and no payload).
    package var isNoResponders: Bool

    package init(subject: String, reply: String? = nil, headers: [String: [String]] = [:], payload: [UInt8] = [],
                isNoResponders: Bool = false) {
        self.subject = subject
        self.reply = reply
        self.headers = headers
        self.payload = payload
        self.isNoResponders = isNoResponders
    }

    /// The first value of header `name`.
    package func header(_ name: String) -> String? { headers[name]?.first }

    /// Copies `message` (not destroyed here).
    init(copying message: OpaquePointer) {
        subject = libnats.natsMsg_GetSubject(message).map { String(cString: $0) } ?? ""
        reply = libnats.natsMsg_GetReply(message).map { String(cString: $0) }
        let length = Int(libnats.natsMsg_GetDataLength(message))
        if length > 0, let data = libnats.natsMsg_GetData(message) {
            payload = Array(UnsafeRawBufferPointer(start: data, count: length))
        } else {
            payload = []
        }
        isNoResponders = libnats.natsMsg_IsNoResponders(message)
        headers = [:]
        var keys: UnsafeMutablePointer<UnsafePointer<CChar>?>?
        var count: Int32 = 0
        guard libnats.natsMsgHeader_Keys(message, &keys, &count) == NATS_OK, let keys else { return }
        defer { free(keys) }  // the array is ours to free, not the strings
        for index in 0..<Int(count) {
            guard let key = keys[index] else { continue }
            var values: UnsafeMutablePointer<UnsafePointer<CChar>?>?
            var valueCount: Int32 = 0
            guard libnats.natsMsgHeader_Values(message, key, &values, &valueCount) == NATS_OK, let values else { continue }
            defer { free(values) }
            headers[String(cString: key)] = (0..<Int(valueCount)).compactMap { values[$0].map { String(cString: $0) } }
        }
    }
}
