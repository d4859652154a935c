import MediatorProtocol

/// The JSON carried in NATS messages between bridges (docs/protocol.md,
/// "Across hosts through NATS"). Pure: bytes in, values out.
package enum BridgeMessages {
    /// Headers a call carries: who made it, for information only (nothing
    /// from the network is a local credential).
    package enum Header {
        package static let host = "Mediator-Host"
        static let callerUID = "Mediator-Caller-Uid"
        static let callerPID = "Mediator-Caller-Pid"
        static let callerName = "Mediator-Caller-Name"
        package static let traceparent = "traceparent"
        package static let tracestate = "tracestate"
    }

    /// A call sent to `<prefix>.call.<target>`.
    package struct CallRequest: Sendable, Equatable {
        package var action: String
        package var params: JSONValue
        package var timeoutMs: Int64?
        package var more: Bool
        /// How often the caller asks to hear that the call still runs
        /// (``Reply/alive(host:)``); nil: it does not ask (a plain NATS
        /// client, an older bridge).
        var keepAliveMs: Int64?
        /// The version of ``BridgeBlobs`` the caller takes in results (nil:
        /// it takes none, an older bridge or a plain NATS client).
        package var fds: Int64?
        /// The sizes of the blobs the request carries (``BridgeBlobs``): its
        /// params refer to blob I as `{"$fd": I}`. The serving bridge
        /// answers `{"send_blobs": SUBJECT}` first, and the caller sends their
        /// chunks there.
        package var blobs: [Int]

        /// The range of `keepalive_ms` a serving bridge honours: a caller
        /// cannot make it publish more often than every 100 ms.
        static let keepAliveRange: ClosedRange<Int64> = 100...60_000

        package init(
            action: String, params: JSONValue, timeoutMs: Int64?, more: Bool, keepAliveMs: Int64? = nil, fds: Int64? = nil,
            blobs: [Int] = []
        ) {
            self.fds = fds
            self.blobs = blobs
            self.action = action
            self.params = params
            self.timeoutMs = timeoutMs
            self.more = more
            self.keepAliveMs = keepAliveMs
        }

        package var encoded: [UInt8] {
            var members: [String: JSONValue] = ["action": .string(action), "params": params]
            if let timeoutMs { members["timeout_ms"] = .int(timeoutMs) }
            if more { members["more"] = .bool(true) }
            if let keepAliveMs { members["keepalive_ms"] = .int(keepAliveMs) }
            if let fds { members["fds"] = .int(fds) }
            if !blobs.isEmpty { members["blobs"] = .array(blobs.map { .int(Int64($0)) }) }
            return JSONValue.object(members).encoded
        }

        /// The request in `payload`, checked as the daemon checks a request's
        /// members; the error is the `bad_request` to answer (`frame_too_large`
        /// for blobs over `maxBlobBytes`).
        package static func decode(
            _ payload: [UInt8], maxBlobBytes: Int = BridgeBlobs.defaultMaxBytesPerCall
        ) -> Result<CallRequest, MediatorError> {
            guard let value = try? JSONParser.parse(payload), case .object(let members) = value else {
                return .failure(MediatorError(.badRequest, "the bridge request is not a JSON object"))
            }
            guard let action = members["action"]?.stringValue, NameRules.isValidAction(action) else {
                return .failure(MediatorError(.badRequest, "the bridge request has no valid \"action\""))
            }
            let params = members["params"] ?? .object([:])
            guard case .object = params else { return .failure(MediatorError(.badRequest, "\"params\" must be an object")) }
            var positive: [String: Int64] = [:]
            for name in ["timeout_ms", "keepalive_ms"] {
                guard let value = members[name] else { continue }
                guard let number = value.intValue, number > 0 else {
                    return .failure(MediatorError(.badRequest, "\"\(name)\" must be a positive integer"))
                }
                positive[name] = number
            }
            let blobs: [Int]
            switch BridgeBlobs.sizes(members["blobs"], limit: maxBlobBytes) {
            case .success(let sizes): blobs = sizes
            case .failure(let error): return .failure(error)
            }
            if !blobs.isEmpty && members["fds"]?.intValue != BridgeBlobs.version {
                return .failure(MediatorError(.badRequest, "\"blobs\" need \"fds\": \(BridgeBlobs.version)"))
            }
            if !blobs.isEmpty {
                do {
                    _ = try FileDescriptorReferences.indexes(in: params, fds: blobs.count, root: "params")
                } catch {
                    return .failure(error)
                }
            }
            return .success(CallRequest(
                action: action, params: params, timeoutMs: positive["timeout_ms"], more: members["more"] == .bool(true),
                keepAliveMs: positive["keepalive_ms"].map { min(max($0, keepAliveRange.lowerBound), keepAliveRange.upperBound) },
                fds: members["fds"]?.intValue, blobs: blobs))
        }
    }

    /// One answer on a call's reply subject: a result (a partial one when
    /// `continues`), or an error; or, not an answer, a keep-alive.
    package enum Reply: Sendable, Equatable {
        case result(JSONValue, continues: Bool)
        /// A result whose `{"$fd": I}` values mean the blobs of `sizes`,
        /// whose chunks follow on the same subject (``BridgeBlobs``).
        case resultWithBlobs(JSONValue, continues: Bool, sizes: [Int])
        /// The serving host waits for the request's blobs on `subject`.
        case sendBlobs(subject: String)
        case error(MediatorError)
        /// The call still runs on `host` (sent every `keepalive_ms` to a
        /// caller that asked): neither a partial nor an answer.
        case alive(host: String)

        package var encoded: [UInt8] {
            switch self {
            case .result(let value, let continues):
                var members: [String: JSONValue] = ["result": value]
                if continues { members["continues"] = .bool(true) }
                return JSONValue.object(members).encoded
            case .resultWithBlobs(let value, let continues, let sizes):
                var members: [String: JSONValue] = ["result": value, "blobs": .array(sizes.map { .int(Int64($0)) })]
                if continues { members["continues"] = .bool(true) }
                return JSONValue.object(members).encoded
            case .sendBlobs(let subject):
                return JSONValue.object(["send_blobs": .string(subject)]).encoded
            case .error(let error):
                return JSONValue.object(["error": error.json]).encoded
            case .alive(let host):
                return JSONValue.object(["alive": .bool(true), "host": .string(host)]).encoded
            }
        }

        /// nil when `payload` is neither form.
        /// Blobs over `maxBlobBytes` (or unreadable sizes) make an error.
        package static func decode(_ payload: [UInt8], maxBlobBytes: Int = BridgeBlobs.defaultMaxBytesPerCall) -> Reply? {
            guard let value = try? JSONParser.parse(payload), case .object(let members) = value else { return nil }
            if let error = members["error"] {
                return .error(MediatorError(json: error) ?? MediatorError(.internal, "unreadable error from the remote host"))
            }
            if members["alive"] == .bool(true) { return .alive(host: members["host"]?.stringValue ?? "") }
            if let subject = members["send_blobs"]?.stringValue { return .sendBlobs(subject: subject) }
            guard let result = members["result"] else { return nil }
            let continues = members["continues"] == .bool(true)
            switch BridgeBlobs.sizes(members["blobs"], limit: maxBlobBytes) {
            case .success(let sizes) where sizes.isEmpty: return .result(result, continues: continues)
            case .success(let sizes): return .resultWithBlobs(result, continues: continues, sizes: sizes)
            case .failure(let error): return .error(error)
            }
        }
    }

    /// What a host exports, published on `<prefix>.hosts`.
    package struct Announcement: Sendable, Equatable {
        package struct Target: Sendable, Equatable {
            package var name: String
            package var description: String?
            package var actions: [ActionSpec]

            package init(name: String, description: String?, actions: [ActionSpec]) {
                self.name = name
                self.description = description
                self.actions = actions
            }
        }

        package var host: String
        package var targets: [Target]
        /// How often the host announces; its targets are dropped after three
        /// intervals without news.
        package var intervalMs: Int64
        /// The host's bridge is stopping: drop its targets now.
        package var leaving: Bool
        /// A token of the daemon process that announces: two daemons that
        /// announce the same host name differ by it (nil from bridges that
        /// predate it).
        package var instance: String?
        /// The host sends keep-alives on the calls that ask for them
        /// (`keepalive_ms`): a caller may then give up on a call to it that
        /// goes silent. False from a bridge that predates them.
        var keepsAlive: Bool
        /// The version of ``BridgeBlobs`` the host takes in calls (nil from
        /// a bridge that predates descriptors across hosts).
        package var fds: Int64?

        package init(
            host: String, targets: [Target], intervalMs: Int64, leaving: Bool = false, instance: String? = nil,
            keepsAlive: Bool = true, fds: Int64? = BridgeBlobs.version
        ) {
            self.fds = fds
            self.host = host
            self.targets = targets
            self.intervalMs = intervalMs
            self.leaving = leaving
            self.instance = instance
            self.keepsAlive = keepsAlive
        }

        package var encoded: [UInt8] {
            let list: [JSONValue] = targets.map { target in
                var members: [String: JSONValue] = ["target": .string(target.name), "actions": .array(target.actions.map(\.json))]
                if let description = target.description { members["description"] = .string(description) }
                return .object(members)
            }
            var members: [String: JSONValue] = ["host": .string(host), "targets": .array(list), "interval_ms": .int(intervalMs)]
            if leaving { members["leaving"] = .bool(true) }
            if let instance { members["instance"] = .string(instance) }
            if keepsAlive { members["keepalive"] = .bool(true) }
            if let fds { members["fds"] = .int(fds) }
            return JSONValue.object(members).encoded
        }

        /// nil when `payload` is not an announcement; targets with bad names
        /// or specs are left out.
        package static func decode(_ payload: [UInt8]) -> Announcement? {
            guard let value = try? JSONParser.parse(payload), case .object(let members) = value,
                  let host = members["host"]?.stringValue, !host.isEmpty,
                  let interval = members["interval_ms"]?.intValue, interval > 0
            else { return nil }
            var targets: [Target] = []
            for item in members["targets"]?.arrayValue ?? [] {
                guard let name = item["target"]?.stringValue, NameRules.isValidTarget(name) else { continue }
                let specs = (item["actions"]?.arrayValue ?? []).compactMap { try? ActionSpec(json: $0) }
                targets.append(Target(name: name, description: item["description"]?.stringValue, actions: specs))
            }
            return Announcement(
                host: host, targets: targets, intervalMs: interval, leaving: members["leaving"] == .bool(true),
                instance: members["instance"]?.stringValue.map { String($0.prefix(64)) },
                keepsAlive: members["keepalive"] == .bool(true), fds: members["fds"]?.intValue)
        }
    }
}
