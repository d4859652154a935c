/// Builders for the frames a peer sends, each a complete line ending in LF.
public enum OutboundMessage {
    public static func request(
        id: MessageID?, target: String, action: String, params: JSONValue = .object([:]),
        timeoutMs: Int64? = nil, more: Bool = false, traceparent: String? = nil, tracestate: String? = nil
    ) -> [UInt8] {
        var members: [String: JSONValue] = ["target": .string(target), "action": .string(action), "params": params]
        if let id { members["id"] = id.json }
        if let timeoutMs { members["timeout_ms"] = .int(timeoutMs) }
        if more { members["more"] = .bool(true) }
        if let traceparent { members["traceparent"] = .string(traceparent) }
        if let tracestate { members["tracestate"] = .string(tracestate) }
        return line(.object(members))
    }

    public static func result(id: MessageID?, _ result: JSONValue, continues: Bool = false) -> [UInt8] {
        var members: [String: JSONValue] = ["id": id?.json ?? .null, "result": result]
        if continues { members["continues"] = .bool(true) }
        return line(.object(members))
    }

    public static func error(id: MessageID?, _ error: MediatorError) -> [UInt8] {
        line(.object(["id": id?.json ?? .null, "error": error.json]))
    }

    public static func event(_ name: String, data: JSONValue? = nil) -> [UInt8] {
        var members: [String: JSONValue] = ["event": .string(name)]
        if let data { members["data"] = data }
        return line(.object(members))
    }

    public static func line(_ value: JSONValue) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(64)
        value.encode(into: &output)
        output.append(0x0A)
        return output
    }
}
