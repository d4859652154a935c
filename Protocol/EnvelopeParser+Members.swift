/// The member names the parser knows, matched on their bytes, and where
/// each one's value sits in the frame.
extension EnvelopeParser {
    /// The top-level members the contract gives a meaning to.
    enum Member: CaseIterable {
        case id, target, action, params, timeoutMs, more, caller, result, error, continues, event, data
        case traceparent, tracestate
        /// Our extension (docs/protocol.md): who called on another host,
        /// honoured only from mediatord's own NATS bridge.
        case remoteCaller
        /// How many descriptors came with the message (contract section 8).
        case fds

        var name: String {
            switch self {
            case .id: return "id"
            case .target: return "target"
            case .action: return "action"
            case .params: return "params"
            case .timeoutMs: return "timeout_ms"
            case .more: return "more"
            case .caller: return "caller"
            case .result: return "result"
            case .error: return "error"
            case .continues: return "continues"
            case .event: return "event"
            case .data: return "data"
            case .traceparent: return "traceparent"
            case .tracestate: return "tracestate"
            case .remoteCaller: return "remote_caller"
            case .fds: return "fds"
            }
        }

        /// The member a name without escapes stands for, matched on its bytes.
        init?(plainName name: UnsafeRawBufferPointer) {
            func equals(_ literal: StaticString) -> Bool {
                guard literal.utf8CodeUnitCount == name.count else { return false }
                let bytes = literal.utf8Start
                for index in 0..<name.count where name[index] != bytes[index] { return false }
                return true
            }
            switch name.count {
            case 2 where equals("id"): self = .id
            case 3 where equals("fds"): self = .fds
            case 4 where equals("more"): self = .more
            case 4 where equals("data"): self = .data
            case 5 where equals("error"): self = .error
            case 5 where equals("event"): self = .event
            case 6 where equals("target"): self = .target
            case 6 where equals("action"): self = .action
            case 6 where equals("params"): self = .params
            case 6 where equals("caller"): self = .caller
            case 6 where equals("result"): self = .result
            case 9 where equals("continues"): self = .continues
            case 10 where equals("timeout_ms"): self = .timeoutMs
            case 10 where equals("tracestate"): self = .tracestate
            case 11 where equals("traceparent"): self = .traceparent
            case 13 where equals("remote_caller"): self = .remoteCaller
            default: return nil
            }
        }

        /// The member the `count` (at most 16) plain ASCII bytes at `offset`
        /// name; 16 bytes must be readable there. The bytes, zero-filled to
        /// two little-endian words, are compared with each name's (no plain
        /// name holds a zero byte, so the length need not be compared).
        init?(packedName bytes: UnsafeRawBufferPointer, at offset: Int, count: Int) {
            func mask(_ length: Int) -> UInt64 { length >= 8 ? ~0 : (1 << (8 * UInt64(length))) - 1 }
            let low = WordScan.word(bytes, at: offset) & mask(count)
            let high = count > 8 ? WordScan.word(bytes, at: offset + 8) & mask(count - 8) : 0
            switch (low, high) {
            case (0x6469, 0): self = .id
            case (0x6572_6f6d, 0): self = .more
            case (0x6174_6164, 0): self = .data
            case (0x72_6f72_7265, 0): self = .error
            case (0x74_6e65_7665, 0): self = .event
            case (0x7465_6772_6174, 0): self = .target
            case (0x6e6f_6974_6361, 0): self = .action
            case (0x736d_6172_6170, 0): self = .params
            case (0x7265_6c6c_6163, 0): self = .caller
            case (0x746c_7573_6572, 0): self = .result
            case (0x6575_6e69_746e_6f63, 0x73): self = .continues
            case (0x5f74_756f_656d_6974, 0x736d): self = .timeoutMs
            case (0x6174_7365_6361_7274, 0x6574): self = .tracestate
            case (0x7261_7065_6361_7274, 0x74_6e65): self = .traceparent
            case (0x635f_6574_6f6d_6572, 0x72_656c_6c61): self = .remoteCaller
            // Last: the members every call has are matched before it.
            case (0x73_6466, 0): self = .fds
            default: return nil
            }
        }

        /// The member a decoded name (one written with escapes) stands for.
        init?(decodedName name: String) {
            guard let member = Member.allCases.first(where: { $0.name == name }) else { return nil }
            self = member
        }
    }

    /// Where each known member's value is in the frame; the last of a repeated name.
    struct Ranges {
        var id, target, action, params, timeoutMs, more, caller, result, error, continues, event, data: Range<Int>?
        var traceparent, tracestate, remoteCaller, fds: Range<Int>?

        subscript(member: Member) -> Range<Int>? {
            get {
                switch member {
                case .id: return id
                case .target: return target
                case .action: return action
                case .params: return params
                case .timeoutMs: return timeoutMs
                case .more: return more
                case .caller: return caller
                case .result: return result
                case .error: return error
                case .continues: return continues
                case .event: return event
                case .data: return data
                case .traceparent: return traceparent
                case .tracestate: return tracestate
                case .remoteCaller: return remoteCaller
                case .fds: return fds
                }
            }
            set {
                switch member {
                case .id: id = newValue
                case .target: target = newValue
                case .action: action = newValue
                case .params: params = newValue
                case .timeoutMs: timeoutMs = newValue
                case .more: more = newValue
                case .caller: caller = newValue
                case .result: result = newValue
                case .error: error = newValue
                case .continues: continues = newValue
                case .event: event = newValue
                case .data: data = newValue
                case .traceparent: traceparent = newValue
                case .tracestate: tracestate = newValue
                case .remoteCaller: remoteCaller = newValue
                case .fds: fds = newValue
                }
            }
        }
    }
}
