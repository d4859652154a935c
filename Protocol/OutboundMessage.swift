/// Builders for the frames a peer sends, each a complete line ending in LF.
public enum OutboundMessage {
    // Members are written straight into the line, in name order (the order
    // JSONValue.encode gives an object), without building a dictionary
    // first: these frames are built for every call.

    /// A request line: `id` nil makes it oneway; `timeoutMs` nil leaves the
    /// daemon's default; `more` asks for partial results; `traceparent` and
    /// `tracestate` carry the caller's trace context; `remoteCaller` is for
    /// the NATS bridge only.
    public static func request(
        id: MessageID?, target: String, action: String, params: JSONValue = .object([:]),
        timeoutMs: Int64? = nil, more: Bool = false, traceparent: String? = nil, tracestate: String? = nil,
        remoteCaller: JSONValue? = nil
    ) -> [UInt8] {
        request(id, target, action, timeoutMs, more, traceparent, tracestate, remoteCaller) { params.encode(into: &$0) }
    }

    /// A request whose params are given as JSON text: one object, compact
    /// (no LF), as a JSON encoder writes it. Written as is.
    public static func request(
        id: MessageID?, target: String, action: String, encodedParams: [UInt8],
        timeoutMs: Int64? = nil, more: Bool = false, traceparent: String? = nil, tracestate: String? = nil
    ) -> [UInt8] {
        request(id, target, action, timeoutMs, more, traceparent, tracestate, nil) { $0.append(contentsOf: encodedParams) }
    }

    /// A request whose params `writeParams` appends as JSON text: one
    /// object, compact (no LF). Typed calls write their params this way,
    /// without a JSONValue in between.
    public static func request(
        id: MessageID?, target: String, action: String, timeoutMs: Int64? = nil, more: Bool = false,
        traceparent: String? = nil, tracestate: String? = nil, writingParams writeParams: (inout [UInt8]) -> Void
    ) -> [UInt8] {
        request(id, target, action, timeoutMs, more, traceparent, tracestate, nil, params: writeParams)
    }

    /// The request builders above, building in `storage` (its bytes
    /// dropped, its capacity kept): a connection hands in the storage of a
    /// frame it has written, so that a call's frame allocates nothing.
    public static func request(
        reusing storage: consuming [UInt8], id: MessageID?, target: String, action: String, params: JSONValue,
        timeoutMs: Int64? = nil, more: Bool = false, traceparent: String? = nil, tracestate: String? = nil,
        remoteCaller: JSONValue? = nil
    ) -> [UInt8] {
        request(id, target, action, timeoutMs, more, traceparent, tracestate, remoteCaller, storage: storage) {
            params.encode(into: &$0)
        }
    }

    /// ``request(id:target:action:encodedParams:timeoutMs:more:traceparent:tracestate:)`` in `storage`.
    public static func request(
        reusing storage: consuming [UInt8], id: MessageID?, target: String, action: String, encodedParams: [UInt8],
        timeoutMs: Int64? = nil, traceparent: String? = nil, tracestate: String? = nil
    ) -> [UInt8] {
        request(id, target, action, timeoutMs, false, traceparent, tracestate, nil, storage: storage) {
            $0.append(contentsOf: encodedParams)
        }
    }

    /// ``request(id:target:action:timeoutMs:more:traceparent:tracestate:writingParams:)`` in `storage`.
    public static func request(
        reusing storage: consuming [UInt8], id: MessageID?, target: String, action: String, timeoutMs: Int64? = nil,
        traceparent: String? = nil, tracestate: String? = nil, writingParams writeParams: (inout [UInt8]) -> Void
    ) -> [UInt8] {
        request(id, target, action, timeoutMs, false, traceparent, tracestate, nil, storage: storage, params: writeParams)
    }

    // The members in name order, as JSONValue.encode orders an object's;
    // each fixed name with its quotes, comma and colon is one append.
    private static func request(
        _ id: MessageID?, _ target: String, _ action: String, _ timeoutMs: Int64?, _ more: Bool,
        _ traceparent: String?, _ tracestate: String?, _ remoteCaller: JSONValue?, storage: consuming [UInt8] = [],
        params writeParams: (inout [UInt8]) -> Void
    ) -> [UInt8] {
        var output = storage
        if !output.isEmpty { output.removeAll(keepingCapacity: true) }
        output.reserveCapacity(256)
        append(#"{"action":"#, to: &output)
        JSONValue.encodeString(action, into: &output)
        switch id {
        case .int(let number)?:
            append(#","id":"#, to: &output)
            JSONValue.encodeInteger(number, into: &output)
        case .string(let text)?:
            append(#","id":"#, to: &output)
            JSONValue.encodeString(text, into: &output)
        case nil: break
        }
        if more { append(#","more":true"#, to: &output) }
        append(#","params":"#, to: &output)
        writeParams(&output)
        // Our extension: who called on another host (mediatord's own NATS bridge only).
        if let remoteCaller {
            append(#","remote_caller":"#, to: &output)
            remoteCaller.encode(into: &output)
        }
        append(#","target":"#, to: &output)
        JSONValue.encodeString(target, into: &output)
        if let timeoutMs {
            append(#","timeout_ms":"#, to: &output)
            JSONValue.encodeInteger(timeoutMs, into: &output)
        }
        if let traceparent {
            append(#","traceparent":"#, to: &output)
            JSONValue.encodeString(traceparent, into: &output)
        }
        if let tracestate {
            append(#","tracestate":"#, to: &output)
            JSONValue.encodeString(tracestate, into: &output)
        }
        output.append(UInt8(ascii: "}"))
        output.append(0x0A)
        return output
    }

    @inline(__always)
    private static func append(_ text: StaticString, to output: inout [UInt8]) {
        text.withUTF8Buffer { output.append(contentsOf: $0) }
    }

    /// A result line for `id` (nil: `"id": null`); `continues` marks a partial result.
    public static func result(id: MessageID?, _ result: JSONValue, continues: Bool = false) -> [UInt8] {
        response(id, continues) { result.encode(into: &$0) }
    }

    /// A response whose result `writeResult` appends as JSON text (compact,
    /// no LF): typed results, written without a JSONValue in between.
    public static func result(
        id: MessageID?, continues: Bool = false, writingResult writeResult: (inout [UInt8]) -> Void
    ) -> [UInt8] {
        response(id, continues, writeResult)
    }

    /// ``result(id:_:continues:)`` built in `storage` (its bytes dropped,
    /// its capacity kept), as ``request(reusing:id:target:action:params:timeoutMs:more:traceparent:tracestate:remoteCaller:)``.
    public static func result(reusing storage: consuming [UInt8], id: MessageID?, _ result: JSONValue) -> [UInt8] {
        response(id, false, storage: storage) { result.encode(into: &$0) }
    }

    /// ``result(id:continues:writingResult:)`` built in `storage`.
    public static func result(
        reusing storage: consuming [UInt8], id: MessageID?, writingResult writeResult: (inout [UInt8]) -> Void
    ) -> [UInt8] {
        response(id, false, storage: storage, writeResult)
    }

    // Inlined into both: the closure then costs nothing on the JSONValue path.
    @inline(__always)
    private static func response(
        _ id: MessageID?, _ continues: Bool, storage: consuming [UInt8] = [], _ writeResult: (inout [UInt8]) -> Void
    ) -> [UInt8] {
        var output = storage
        if !output.isEmpty { output.removeAll(keepingCapacity: true) }
        output.reserveCapacity(256)
        append(continues ? #"{"continues":true,"id":"# : #"{"id":"#, to: &output)
        switch id {
        case .int(let number)?: JSONValue.encodeInteger(number, into: &output)
        case .string(let text)?: JSONValue.encodeString(text, into: &output)
        case nil: append("null", to: &output)
        }
        append(#","result":"#, to: &output)
        writeResult(&output)
        output.append(UInt8(ascii: "}"))
        output.append(0x0A)
        return output
    }

    /// An error response line for `id` (nil: `"id": null`).
    public static func error(id: MessageID?, _ error: MediatorError) -> [UInt8] {
        var writer = MemberWriter()
        writer.member("error") { error.json.encode(into: &$0) }
        writer.member("id") { (id?.json ?? .null).encode(into: &$0) }
        return writer.line()
    }

    /// An event line; `data` nil leaves the member out.
    public static func event(_ name: String, data: JSONValue? = nil) -> [UInt8] {
        var writer = MemberWriter()
        if let data { writer.member("data") { data.encode(into: &$0) } }
        writer.member("event") { JSONValue.encodeString(name, into: &$0) }
        return writer.line()
    }

    /// Any value as one compact line ending in LF.
    public static func line(_ value: JSONValue) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        value.encode(into: &output)
        output.append(0x0A)
        return output
    }

    /// One JSON object written member by member; the caller keeps the
    /// names in order and unique (they are constants here).
    private struct MemberWriter {
        private var output: [UInt8]

        init() {
            output = []
            output.reserveCapacity(256)
            output.append(UInt8(ascii: "{"))
        }

        mutating func member(_ name: StaticString, _ value: (inout [UInt8]) -> Void) {
            if output.count > 1 { output.append(UInt8(ascii: ",")) }
            output.append(UInt8(ascii: "\""))
            name.withUTF8Buffer { output.append(contentsOf: $0) }
            output.append(UInt8(ascii: "\""))
            output.append(UInt8(ascii: ":"))
            value(&output)
        }

        // Mutating, not consuming: a consuming method on this copyable
        // struct copied it first, and the appends below then copied the
        // whole line into a new array (an allocation per frame).
        mutating func line() -> [UInt8] {
            output.append(UInt8(ascii: "}"))
            output.append(0x0A)
            return output
        }
    }
}
