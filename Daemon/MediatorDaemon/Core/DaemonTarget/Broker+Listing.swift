import MediatorConfiguration
import MediatorProtocol
import NIOCore

/// What the daemon tells about targets: `list` (in pages), `describe` and
/// `status`, for registered targets, those known from manifests and those
/// whose manifest was skipped (Broker+SkippedManifests.swift).
extension Broker {
    func instancesJSON(_ entry: Registry.Target) -> JSONValue {
        .array(entry.instances.map { instance in
            var members: [String: JSONValue] = [
                "instance": .int(Int64(instance.instance)), "pid": .int(Int64(instance.credentials.pid)),
                "uid": .int(Int64(instance.credentials.uid)), "gid": .int(Int64(instance.credentials.gid)),
                "in_flight": .int(Int64(instance.inFlight)),
            ]
            if let name = instance.name { members["name"] = .string(name) }
            if let host = instance.remoteHost { members["remote_host"] = .string(host) }
            if let executable = instance.credentials.executable { members["exe"] = .string(executable) }
            if !instance.credentials.groups.isEmpty {
                members["groups"] = .array(instance.credentials.groups.map { .int(Int64($0)) })
            }
            return .object(members)
        })
    }

    /// `list`, in pages: a reply the daemon builds must fit well within what
    /// a peer may have queued (`max_outbound_bytes`), or asking for it would
    /// disconnect the asker as a peer that does not read. A page holds the
    /// targets after `after` (by name, byte by byte), at most `limit` of them
    /// and about ``listPageBytes`` of JSON; when more follow, `next` names
    /// its last target, to pass as `after`.
    func list(_ params: [String: JSONValue], now: NIODeadline) -> Result<JSONValue, MediatorError> {
        var after: [UInt8]?
        if let raw = params["after"] {
            guard let text = raw.stringValue else { return .failure(MediatorError(.badRequest, "\"after\" must be a target name")) }
            after = Array(text.utf8)
        }
        var limit = Int.max
        if let raw = params["limit"] {
            // A URL (`app://mediator/list?limit=10`) carries it as a string.
            guard let number = raw.intValue ?? raw.stringValue.flatMap({ Int64($0) }), number > 0 else {
                return .failure(MediatorError(.badRequest, "\"limit\" must be a positive integer"))
            }
            limit = Int(clamping: number)
        }
        let invalid = invalidTargets
        var names = Set(registry.targets.keys)
        names.formUnion(activation.components.keys)
        names.formUnion(invalid.keys)
        var sorted = names.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
        if let after { sorted.removeAll { !after.lexicographicallyPrecedes($0) } }
        var entries: [JSONValue] = []
        var bytes = 0
        var next: String?
        for name in sorted {
            let target = String(decoding: name, as: UTF8.self)
            let entry = invalid[target].map { invalidTargetSummary(target, $0, actions: true) }
                ?? targetSummary(target, now: now, fullSpecs: false)
            let size = entry.encoded.count
            if entries.count == limit || (!entries.isEmpty && bytes + size > listPageBytes) {
                next = entries.last?["target"]?.stringValue
                break
            }
            entries.append(entry)
            bytes += size
        }
        var result: [String: JSONValue] = ["targets": .array(entries)]
        if let next { result["next"] = .string(next) }
        // The files no target stands for, once: on the first page.
        if after == nil {
            let unattributed = unattributedSkippedManifests(besides: invalid)
            if !unattributed.isEmpty { result["invalid_manifests"] = .array(unattributed) }
            if activation.skippedManifestsLeftOut > 0 {
                result["invalid_manifests_omitted"] = .int(Int64(activation.skippedManifestsLeftOut))
            }
        }
        return .success(.object(result))
    }

    /// How much JSON one page of `list` holds: a quarter of the outbound
    /// limit, at most 1 MiB.
    var listPageBytes: Int { min(1 << 20, configuration.maxOutboundBytes / 4) }

    /// One target as `list` and `describe` show it: registered, or known
    /// from a manifest, or both.
    func targetSummary(_ name: String, now: NIODeadline, fullSpecs: Bool) -> JSONValue {
        let entry = registry.target(name)
        let component = activation.components[name]
        let specs = entry?.actions ?? component?.manifest.actions ?? []
        var members: [String: JSONValue] = [
            "target": .string(name),
            "description": .string(entry?.description ?? component?.manifest.description ?? ""),
            "actions": .array(fullSpecs ? specs.map(\.json) : specs.map { .string($0.name) }),
            "mode": .string((entry?.mode ?? component?.manifest.mode ?? .exclusive).rawValue),
            "instances": entry.map(instancesJSON) ?? .array([]),
            "state": .string(component?.state.rawValue ?? "running"),
            "calls_served": .int(Int64(statistics.calls(ofTarget: name))),
        ]
        if let component {
            members["activation"] = .string(component.activationKind)
            if let since = component.runningSince, component.state == .running {
                members["uptime_s"] = Self.seconds(now - since)
            }
        }
        return .object(members)
    }

    /// A duration as `uptime_s` gives it: seconds, to the millisecond.
    static func seconds(_ duration: TimeAmount) -> JSONValue {
        .double(Double(duration.nanoseconds / 1_000_000) / 1000)
    }

    func describe(_ params: [String: JSONValue], now: NIODeadline) -> Result<JSONValue, MediatorError> {
        guard let target = params["target"]?.stringValue else {
            return .failure(MediatorError(.badRequest, "\"target\" must be a string"))
        }
        if target == ProtocolConstants.daemonTarget { return .success(DaemonTargetDescription.json) }
        guard registry.target(target) != nil || activation.components[target] != nil else {
            return .failure(targetNotFound(target))
        }
        return .success(targetSummary(target, now: now, fullSpecs: true))
    }

    func status(_ params: [String: JSONValue], now: NIODeadline) -> Result<JSONValue, MediatorError> {
        if let target = params["target"]?.stringValue, let skipped = invalidManifest(of: target) {
            return .success(invalidTargetSummary(target, skipped, actions: false))
        }
        guard case .success(var summary) = describe(params, now: now), var members = summary.objectValue,
            let target = params["target"]?.stringValue
        else { return describe(params, now: now) }
        members["actions"] = nil
        if let component = activation.components[target] {
            members["restarts"] = .int(Int64(component.restarts))
            members["manifest"] = .string(component.manifest.file)
            members["held_calls"] = .int(Int64(component.held.count))
            members["pids"] = .array(component.processes.compactMap(\.pid).map { .int(Int64($0)) })
            if let lastExit = component.lastExit { members["last_exit"] = .string(lastExit) }
            if case .unit(let unit) = component.manifest.launch { members["unit"] = .string(unit) }
            // Since the oldest live process the daemon started: `uptime_s`
            // counts from registration, and restarts or pool members do not reset it.
            if let started = component.processes.filter({ $0.pid != nil }).map(\.startedAt).min() {
                members["process_uptime_s"] = Self.seconds(now - started)
            }
        }
        summary = .object(members)
        return .success(summary)
    }
}
