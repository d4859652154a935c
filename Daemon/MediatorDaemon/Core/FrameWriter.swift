import MediatorProtocol
import NIOCore

/// A request's trace context members (`traceparent`, `tracestate`), each
/// the JSON string exactly as it arrived, passed on to the component.
/// A class: a request without trace context carries one nil reference
/// instead of two empty buffers through routing, which copies it.
package final class ForwardedTrace: Sendable {
    package let traceparent: ByteBuffer
    package let tracestate: ByteBuffer?

    package init(traceparent: ByteBuffer, tracestate: ByteBuffer?) {
        self.traceparent = traceparent
        self.tracestate = tracestate
    }

    /// The bytes the two members add to a line, names included.
    var lineBytes: Int { 32 + traceparent.readableBytes + (tracestate?.readableBytes ?? 0) }
}

/// Composes the daemon's outbound lines straight into `ByteBuffer`s, splicing
/// the members that arrived (ids, params, results) in as the bytes they were,
/// so a forwarded call is never decoded and re-encoded.
package struct FrameWriter: Sendable {
    package let allocator = ByteBufferAllocator()

    package init() {}

    /// The request a component receives for a routed call.
    func forwardedRequest(
        daemonID: Int64?, target: String, action: String, params: ByteBuffer?, timeoutMs: Int64,
        more: Bool, caller: ByteBuffer, trace: ForwardedTrace? = nil, fds: Int = 0, storage: inout ByteBuffer?
    ) -> ByteBuffer {
        // Names are checked ASCII and need no escapes; anything else takes the general path.
        guard Self.isPlain(target), Self.isPlain(action) else {
            return composedRequest(
                daemonID: daemonID, target: target, action: action, params: params, timeoutMs: timeoutMs, more: more,
                caller: caller, trace: trace, fds: fds)
        }
        // Every piece is copied into one buffer sized once: this line is written for every call.
        let capacity = 112 + 2 * LineComposer.maxDecimalBytes + target.utf8.count + action.utf8.count
            + (params?.readableBytes ?? 2) + caller.readableBytes + (trace?.lineBytes ?? 0)
        var out = buffer(reusing: &storage, capacity: capacity)
        out.writeWithUnsafeMutableBytes(minimumWritableBytes: capacity) { space in
            var line = LineComposer(space)
            if let daemonID {
                line.append("{\"id\":")
                line.append(decimal: daemonID)
                line.append(",\"target\":\"")
            } else {
                line.append("{\"target\":\"")
            }
            line.append(plain: target)
            line.append("\",\"action\":\"")
            line.append(plain: action)
            line.append("\",\"params\":")
            if let params { line.append(params) } else { line.append("{}") }
            line.append(",\"timeout_ms\":")
            line.append(decimal: timeoutMs)
            line.append(more ? ",\"more\":true,\"caller\":" : ",\"caller\":")
            line.append(caller)
            if let trace { line.append(trace) }
            if fds > 0 {
                line.append(",\"fds\":")
                line.append(decimal: Int64(fds))
            }
            line.append("}\n")
            return line.count
        }
        return out
    }

    /// ``forwardedRequest(daemonID:target:action:params:timeoutMs:more:caller:trace:)``
    /// for names that need escaping (never valid names; kept general).
    func composedRequest(
        daemonID: Int64?, target: String, action: String, params: ByteBuffer?, timeoutMs: Int64,
        more: Bool, caller: ByteBuffer, trace: ForwardedTrace?, fds: Int = 0
    ) -> ByteBuffer {
        var out = allocator.buffer(
            capacity: 96 + (params?.readableBytes ?? 2) + caller.readableBytes + (trace?.lineBytes ?? 0))
        out.writeStaticString("{")
        if let daemonID {
            out.writeStaticString("\"id\":")
            out.writeString(String(daemonID))
            out.writeStaticString(",")
        }
        out.writeStaticString("\"target\":")
        writeString(target, into: &out)
        out.writeStaticString(",\"action\":")
        writeString(action, into: &out)
        out.writeStaticString(",\"params\":")
        if let params { out.writeImmutableBuffer(params) } else { out.writeStaticString("{}") }
        out.writeStaticString(",\"timeout_ms\":")
        out.writeString(String(timeoutMs))
        if more { out.writeStaticString(",\"more\":true") }
        out.writeStaticString(",\"caller\":")
        out.writeImmutableBuffer(caller)
        if let trace {
            out.writeStaticString(",\"traceparent\":")
            out.writeImmutableBuffer(trace.traceparent)
            if let tracestate = trace.tracestate {
                out.writeStaticString(",\"tracestate\":")
                out.writeImmutableBuffer(tracestate)
            }
        }
        if fds > 0 {
            out.writeStaticString(",\"fds\":")
            out.writeString(String(fds))
        }
        out.writeStaticString("}\n")
        return out
    }

    /// `storage` emptied (taken: nil after), or a new buffer; with room for
    /// `capacity` bytes either way. Taken, so that the buffer returned is
    /// its storage's one reference and emptying it keeps that storage (a
    /// shared one gets storage of its own).
    func buffer(reusing storage: inout ByteBuffer?, capacity: Int) -> ByteBuffer {
        guard var out = storage else { return allocator.buffer(capacity: capacity) }
        storage = nil
        out.clear()
        out.reserveCapacity(capacity)
        return out
    }

    /// The params of a `notFound` call: the action asked for and its params.
    func notFoundParams(action: String, params: ByteBuffer?) -> ByteBuffer {
        var out = allocator.buffer(capacity: 32 + (params?.readableBytes ?? 2))
        out.writeStaticString("{\"action\":")
        writeString(action, into: &out)
        out.writeStaticString(",\"params\":")
        if let params { out.writeImmutableBuffer(params) } else { out.writeStaticString("{}") }
        out.writeStaticString("}")
        return out
    }

    /// A component's response passed on to the caller under the caller's id.
    func forwardedResponse(
        callerID: ByteBuffer, isError: Bool, body: ByteBuffer, continues: Bool, fds: Int = 0, storage: inout ByteBuffer?
    ) -> ByteBuffer {
        let capacity = 48 + callerID.readableBytes + body.readableBytes
        var out = buffer(reusing: &storage, capacity: capacity)
        out.writeWithUnsafeMutableBytes(minimumWritableBytes: capacity) { space in
            var line = LineComposer(space)
            line.append("{\"id\":")
            line.append(callerID)
            line.append(isError ? ",\"error\":" : ",\"result\":")
            line.append(body)
            if fds > 0 {
                line.append(",\"fds\":")
                line.append(decimal: Int64(fds))
            }
            line.append(continues ? ",\"continues\":true}\n" : "}\n")
            return line.count
        }
        return out
    }

    /// An error answer; `callerID` is the id's bytes as they arrived, nil for `"id": null`.
    /// `delivered` says whether the call was handed to a component
    /// (docs/protocol.md): every error the daemon makes for a request says it.
    package func error(callerID: ByteBuffer?, _ error: MediatorError, delivered: CallDelivery) -> ByteBuffer {
        var out = allocator.buffer(capacity: 80 + error.message.utf8.count)
        out.writeStaticString("{\"id\":")
        if let callerID { out.writeImmutableBuffer(callerID) } else { out.writeStaticString("null") }
        out.writeStaticString(",\"error\":")
        out.writeBytes(error.delivered(delivered).json.encoded)
        out.writeStaticString("}\n")
        return out
    }

    package func result(callerID: ByteBuffer, _ result: JSONValue) -> ByteBuffer {
        var out = allocator.buffer(capacity: 64)
        out.writeStaticString("{\"id\":")
        out.writeImmutableBuffer(callerID)
        out.writeStaticString(",\"result\":")
        out.writeBytes(result.encoded)
        out.writeStaticString("}\n")
        return out
    }

    package func event(_ name: String, data: JSONValue?) -> ByteBuffer {
        var out = allocator.buffer(capacity: 64)
        out.writeBytes(OutboundMessage.event(name, data: data))
        return out
    }

    /// The `caller` member for a connection, built once per connection.
    func callerMember(_ credentials: PeerCredentials, name: String?) -> ByteBuffer {
        var members: [String: JSONValue] = [
            "pid": .int(Int64(credentials.pid)), "uid": .int(Int64(credentials.uid)), "gid": .int(Int64(credentials.gid)),
        ]
        if let name { members["name"] = .string(name) }
        // An extension: the caller's supplementary groups, from the kernel too.
        if !credentials.groups.isEmpty { members["groups"] = .array(credentials.groups.map { .int(Int64($0)) }) }
        var out = allocator.buffer(capacity: 64)
        out.writeBytes(JSONValue.object(members).encoded)
        return out
    }

    /// A connection's `caller` member with `"remote"` added: who called on
    /// the other host, as the bridge on this connection reported it.
    func callerMember(_ base: ByteBuffer, remote: RemoteCaller) -> ByteBuffer {
        var out = allocator.buffer(capacity: base.readableBytes + 96)
        var head = base
        // `base` is a JSON object: everything but its closing brace, then the member.
        head.moveWriterIndex(to: head.writerIndex - 1)
        out.writeBuffer(&head)
        out.writeStaticString(",\"remote\":")
        out.writeBytes(remote.json.encoded)
        out.writeStaticString("}")
        return out
    }

    /// Whether `text` can be written between quotes as it is: printable
    /// ASCII without quotes or backslashes, as every valid name is.
    static func isPlain(_ text: String) -> Bool {
        // On the contiguous bytes (a native string's): stepping the UTF-8
        // view costs some ten times as much per byte.
        var text = text
        return text.withUTF8 { bytes in
            for byte in bytes where byte < 0x20 || byte == 0x22 || byte == 0x5C || byte >= 0x80 { return false }
            return true
        }
    }

    func writeString(_ text: String, into out: inout ByteBuffer) {
        // Names are checked ASCII without quotes or backslashes; anything else
        // goes through the full escaper.
        if Self.isPlain(text) {
            out.writeStaticString("\"")
            out.writeString(text)
            out.writeStaticString("\"")
        } else {
            var bytes: [UInt8] = []
            JSONValue.encodeString(text, into: &bytes)
            out.writeBytes(bytes)
        }
    }
}

extension FrameWriter {
    /// An event line whose `data` is passed on as the bytes that arrived.
    package func event(_ name: String, rawData: ByteBuffer?) -> ByteBuffer {
        var out = allocator.buffer(capacity: 32 + (rawData?.readableBytes ?? 0))
        out.writeStaticString("{\"event\":")
        writeString(name, into: &out)
        if let rawData {
            out.writeStaticString(",\"data\":")
            out.writeImmutableBuffer(rawData)
        }
        out.writeStaticString("}\n")
        return out
    }
}
