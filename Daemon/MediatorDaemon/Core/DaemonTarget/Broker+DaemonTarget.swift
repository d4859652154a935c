import MediatorConfiguration
import MediatorProtocol
import NIOCore

/// The daemon's own target, `mediator` (contract section 6).
extension Broker {
    /// `viaURL` is set when an `open` URL reached the daemon's own target:
    /// that action may not be `open` again, so a URL nested in a URL cannot
    /// recurse (a few thousand levels in one frame overflowed the stack).
    func handleDaemonAction(
        _ envelope: Envelope, params rawParams: ByteBuffer?, idBytes: ByteBuffer?, from connection: ConnectionID,
        now: NIODeadline, viaURL: Bool = false, trace: ForwardedTrace? = nil
    ) {
        guard let params = (rawParams.map(decode) ?? .object([:]))?.objectValue else {
            return answer(idBytes, connection, .failure(MediatorError(.badRequest, "params must be a JSON object")))
        }
        let outcome: Result<JSONValue, MediatorError>
        switch envelope.action {
        case "hello": outcome = hello(params, connection)
        case "register": outcome = register(params, connection, size: rawParams?.readableBytes ?? 0, now: now)
        case "unregister": outcome = unregister(params, connection, now: now)
        case "list": outcome = list(params, now: now)
        case "describe": outcome = describe(params, now: now)
        case "status": outcome = status(params, now: now)
        case "start", "stop":
            if let denial = denied(envelope.action, connection) {
                outcome = .failure(denial)
            } else if envelope.action == "stop" {
                outcome = stopAction(params, now: now)
            } else {
                // Answered once the component registers: held like a call to it.
                switch startAction(params, connection, id: envelope.id, idBytes: idBytes, now: now) {
                case .some(let immediate): outcome = immediate
                case .none: return
                }
            }
        case "subscribe": outcome = subscribe(params, connection, adding: true)
        case "unsubscribe": outcome = subscribe(params, connection, adding: false)
        case "publish": outcome = publishAction(params, connection, now: now)
        case "monitor": outcome = monitorAction(params, connection)
        case "cancel": outcome = cancel(params, connection, now: now)
        case "stats": outcome = statsAction(params, connection, now: now)
        case "ping": outcome = .success(.object([:]))
        case "reexec":
            // Answered by the image that carries on (Broker+Restart.swift).
            if let denial = denied(envelope.action, connection) {
                outcome = .failure(denial)
            } else {
                effects.append(.reexec(connection, idBytes: idBytes))
                return
            }
        case "_block_event_loop" where configuration.testHooks:
            logger.warning("test hook: blocking the event loop for good")
            effects.append(.blockEventLoop)
            return
        case "open" where viaURL:
            outcome = .failure(MediatorError(.forbidden, "a URL cannot reach \"mediator/open\": an open may not open another URL"))
        case "open":
            // Routed like any call; the routed call's answer is the answer.
            switch openURL(params) {
            case .failure(let error): outcome = .failure(error)
            case .success(let url) where url.target == ProtocolConstants.daemonTarget:
                // Step 1 of routing holds for URLs too: the daemon answers its own target.
                var inner = Envelope(kind: .request)
                inner.target = url.target
                inner.action = url.action
                inner.id = envelope.id
                inner.timeoutMs = envelope.timeoutMs
                var query = writer.allocator.buffer(capacity: 64)
                query.writeBytes(url.paramsJSON.encoded)
                handleDaemonAction(inner, params: query, idBytes: idBytes, from: connection, now: now, viaURL: true)
                return
            case .success(let url):
                var query = writer.allocator.buffer(capacity: 64)
                query.writeBytes(url.paramsJSON.encoded)
                route(
                    RouteRequest(
                        target: url.target, action: url.action, params: query, id: envelope.id, idBytes: idBytes,
                        timeoutMs: envelope.timeoutMs, more: envelope.more, viaURL: true, trace: trace),
                    from: connection, now: now)
                return
            }
        default:
            outcome = .failure(MediatorError(.actionNotFound, "target \"mediator\" has no action \"\(envelope.action)\""))
        }
        answer(idBytes, connection, outcome)
        if let (target, pid) = pendingRegistration {
            pendingRegistration = nil
            componentRegistered(target, pid: pid, now: now)
        }
    }

    /// The policy's word on one of the daemon's own actions that need a grant.
    func denied(_ action: String, _ connection: ConnectionID) -> MediatorError? {
        guard let credentials = peers[connection]?.credentials else { return nil }
        return checkPolicy(.call(target: ProtocolConstants.daemonTarget, action: action), credentials)
    }

    func answer(_ idBytes: ByteBuffer?, _ connection: ConnectionID, _ outcome: Result<JSONValue, MediatorError>) {
        guard let idBytes else { return }  // oneway: never an answer, not even an error
        switch outcome {
        case .success(let value): send(connection, writer.result(callerID: idBytes, value))
        case .failure(let error): send(connection, writer.error(callerID: idBytes, error, delivered: .no))
        }
    }

    func hello(_ params: [String: JSONValue], _ connection: ConnectionID) -> Result<JSONValue, MediatorError> {
        if let version = params["protocol"], version.intValue != ProtocolConstants.version {
            return .failure(MediatorError(
                .unsupportedProtocol, "protocol \(version) is not spoken here; mediatord speaks \(ProtocolConstants.version)",
                data: ["protocols": [.int(ProtocolConstants.version)]]))
        }
        // `"fds": true` is granted with `max_fds` when the host passes
        // descriptors; otherwise the answer has none and the peer sends none.
        let grantsDescriptors: Bool
        do throws(MediatorError) {
            let asked = try HelloFileDescriptors.accepts(params: params)
            grantsDescriptors = asked && passesDescriptors
            peers[connection]?.askedForDescriptors = asked
            peers[connection]?.passesDescriptors = grantsDescriptors
        } catch {
            return .failure(error)
        }
        if let name = params["name"] {
            guard let text = name.stringValue, text.utf8.count <= 256 else {
                return .failure(MediatorError(.badRequest, "\"name\" must be a string of at most 256 bytes"))
            }
            if var peer = peers[connection] {
                peer.name = text
                peer.callerMember = writer.callerMember(peer.credentials, name: text)
                peers[connection] = peer
                registry.rename(connection: connection, targets: peer.targets, to: text)
                logger.info("hello", metadata: ["connection": "\(connection)", "pid": "\(peer.credentials.pid)", "name": "\(text)"])
            }
        }
        var answer: [String: JSONValue] = [
            "protocol": .int(ProtocolConstants.version), "server": "mediatord", "version": .string(version),
            "max_frame": .int(Int64(configuration.maxFrameBytes)), "connection": .int(Int64(connection)),
        ]
        if grantsDescriptors { answer["max_fds"] = .int(Int64(configuration.maxFdsPerMessage)) }
        return .success(.object(answer))
    }

    /// `size` is the params' length as sent: what the registration costs
    /// to keep and to show in `list` and `describe`.
    func register(
        _ params: [String: JSONValue], _ connection: ConnectionID, size: Int, now: NIODeadline
    ) -> Result<JSONValue, MediatorError> {
        guard let peer = peers[connection] else { return .failure(MediatorError(.internal, "unknown connection")) }
        guard let target = params["target"]?.stringValue, NameRules.isValidTarget(target) else {
            return .failure(MediatorError(.badRequest, "\"target\" must be a valid target name"))
        }
        // One instance per connection per target: a pool instance is a
        // connection serving the target, so a connection cannot multiply
        // itself in a pool (each instance costs the registry and every call's pick).
        if peer.targets.contains(target) {
            return .failure(MediatorError(.alreadyRegistered, "this connection already serves an instance of \"\(target)\""))
        }
        if size > configuration.maxRegistrationBytes {
            return .failure(MediatorError(
                .badRequest, "the registration of \"\(target)\" takes \(size) bytes; max_registration_bytes = \(configuration.maxRegistrationBytes)",
                data: ["limit": .string("max_registration_bytes"), "value": .int(Int64(configuration.maxRegistrationBytes))]))
        }
        guard target != ProtocolConstants.daemonTarget else {
            return .failure(MediatorError(.badRequest, "the target \"mediator\" is the daemon itself and cannot be registered"))
        }
        guard let rawActions = params["actions"]?.arrayValue else {
            return .failure(MediatorError(.badRequest, "\"actions\" must be an array of action specs or names"))
        }
        var actions: [ActionSpec] = []
        var seen: Set<String> = []
        for raw in rawActions {
            let spec: ActionSpec
            do { spec = try ActionSpec(json: raw) } catch { return .failure(error) }
            guard seen.insert(spec.name).inserted else {
                return .failure(MediatorError(.badRequest, "action \"\(spec.name)\" is declared twice"))
            }
            actions.append(spec)
        }
        var mode = Registry.Mode.exclusive
        if let rawMode = params["mode"] {
            guard let text = rawMode.stringValue, let parsed = Registry.Mode(rawValue: text) else {
                return .failure(MediatorError(.badRequest, "\"mode\" must be \"exclusive\" or \"pool\""))
            }
            mode = parsed
        }
        var description: String?
        if let rawDescription = params["description"], rawDescription != .null {
            guard let text = rawDescription.stringValue else {
                return .failure(MediatorError(.badRequest, "\"description\" must be a string"))
            }
            description = text
        }
        // `"remote": {"host": H}`: a stand-in for a target served on host H,
        // which gets calls only when no local instance is registered. Only
        // the daemon's own NATS bridge (this very process) registers those.
        var remoteHost: String?
        if let remote = params["remote"] {
            guard peer.credentials.pid == ownProcessID else {
                return .failure(MediatorError(.forbidden, "only mediatord's own NATS bridge registers stand-ins for other hosts"))
            }
            guard let host = remote["host"]?.stringValue, !host.isEmpty, host.utf8.count <= 256 else {
                return .failure(MediatorError(.badRequest, "\"remote\" must be {\"host\": NAME}"))
            }
            remoteHost = host
        }
        // A process the daemon started for this target from a manifest (which
        // the administrator wrote) may register it whatever the policy says;
        // so may whoever registers a unit-launched target while the daemon
        // starts that unit (systemd does not tell it the unit's pid).
        let component = activation.components[target]
        var startedForTarget = component?.processes.contains { $0.pid == peer.credentials.pid } ?? false
        if case .unit? = component?.manifest.launch, component?.state == .starting { startedForTarget = true }
        if !startedForTarget, remoteHost == nil, let denial = checkPolicy(.register(target: target), peer.credentials) {
            return .failure(denial)
        }
        if let refusal = quotaExceeded(.registrations, credentials: peer.credentials)
            ?? quotaExceeded(.registeredBytes, credentials: peer.credentials, adding: size)
        {
            return .failure(refusal)
        }
        let instance: Int
        do {
            instance = try registry.register(
                target: target, actions: actions, mode: mode, description: description, connection: connection,
                credentials: peer.credentials, peerName: peer.name, remoteHost: remoteHost)
        } catch {
            return .failure(error)
        }
        peers[connection]?.targets.insert(target)
        peers[connection]?.registeredBytes[target] = size
        statistics.daemon.registrations += 1
        logger.info(
            "target registered",
            metadata: ["target": "\(target)", "instance": "\(instance)", "mode": "\(mode.rawValue)", "pid": "\(peer.credentials.pid)", "uid": "\(peer.credentials.uid)", "remote": "\(remoteHost ?? "-")"])
        publishDaemonEvent("mediator.registered", [
            "target": .string(target), "instance": .int(Int64(instance)), "pid": .int(Int64(peer.credentials.pid)),
        ])
        // The answer goes out before the held calls that this registration releases.
        let registeredAnswer = JSONValue.object(["target": .string(target), "instance": .int(Int64(instance))])
        pendingRegistration = (target, peer.credentials.pid)
        return .success(registeredAnswer)
    }

    func unregister(_ params: [String: JSONValue], _ connection: ConnectionID, now: NIODeadline) -> Result<JSONValue, MediatorError> {
        guard let target = params["target"]?.stringValue else {
            return .failure(MediatorError(.badRequest, "\"target\" must be a string"))
        }
        let removed: [Registry.Instance]
        do { removed = try registry.unregister(target: target, connection: connection) } catch { return .failure(error) }
        peers[connection]?.targets.remove(target)
        peers[connection]?.registeredBytes[target] = nil
        for instance in removed {
            logger.info("target unregistered", metadata: ["target": "\(target)", "instance": "\(instance.instance)", "reason": "unregistered"])
            publishDaemonEvent("mediator.unregistered", [
                "target": .string(target), "instance": .int(Int64(instance.instance)), "reason": "unregistered",
            ])
        }
        if registry.target(target) == nil { componentGone(target, now: now) }
        return .success(.object([:]))
    }

    /// `start`: starts a known component (a failed one too) and answers once it registers.
    func startAction(
        _ params: [String: JSONValue], _ connection: ConnectionID, id: MessageID?, idBytes: ByteBuffer?, now: NIODeadline
    ) -> Result<JSONValue, MediatorError>? {
        guard let target = params["target"]?.stringValue else {
            return .failure(MediatorError(.badRequest, "\"target\" must be a string"))
        }
        guard let component = activation.components[target] else { return .failure(unmanagedRefusal(target)) }
        if component.state == .running, registry.target(target) != nil {
            return .success(["target": .string(target), "state": "running"])
        }
        let waiter = StartWaiter(connection: connection, id: id, idBytes: idBytes.map(ownCopy))
        carryOut(activation.requestStart(target, waiter: waiter, now: now, registry: registry), now: now)
        return nil
    }

    /// `start` or `stop` of a target that no manifest describes. One that
    /// registered itself is running, but the daemon did not start it and may
    /// not stop it: `forbidden`, as unregistering another connection's
    /// target is (docs/components.md); `target_not_found` would say it is not there.
    func unmanagedRefusal(_ target: String) -> MediatorError {
        if registry.target(target) != nil {
            return MediatorError(
                .forbidden,
                "target \"\(target)\" is running but not managed by the daemon: it registered itself and no manifest describes it")
        }
        if let skipped = invalidManifest(of: target) {
            return MediatorError(.targetNotFound, "target \"\(target)\" is not registered and its manifest is invalid: \(skipped.problem)")
        }
        return MediatorError(.targetNotFound, "no manifest describes target \"\(target)\" and it is not registered")
    }

    func stopAction(_ params: [String: JSONValue], now: NIODeadline) -> Result<JSONValue, MediatorError> {
        guard let target = params["target"]?.stringValue else {
            return .failure(MediatorError(.badRequest, "\"target\" must be a string"))
        }
        guard let component = activation.components[target] else { return .failure(unmanagedRefusal(target)) }
        if component.state == .running || component.state == .starting { stop(target, reason: "requested", now: now) }
        return .success(["target": .string(target), "state": .string(activation.components[target]?.state.rawValue ?? "activatable")])
    }

    func subscribe(_ params: [String: JSONValue], _ connection: ConnectionID, adding: Bool) -> Result<JSONValue, MediatorError> {
        guard let items = params["events"]?.arrayValue else {
            return .failure(MediatorError(.badRequest, "\"events\" must be an array of patterns"))
        }
        var patterns: [String] = []
        for item in items {
            guard let pattern = item.stringValue, NameRules.isValidEventPattern(pattern) else {
                return .failure(MediatorError(.badRequest, "invalid event pattern \(item)"))
            }
            patterns.append(pattern)
        }
        if adding, let credentials = peers[connection]?.credentials {
            // `mediator.monitor` exactly is exempt: no event of that name is
            // ever published, and monitor records reach only connections the
            // policy let monitor; clients (mediatorctl monitor) subscribe to
            // it to route the records, so checking it would refuse a peer the
            // policy grants `monitor` unless it also granted the subscription.
            for pattern in patterns where pattern != Self.monitorRecordEvent {
                if let denial = checkPolicy(.subscribe(pattern: pattern), credentials) { return .failure(denial) }
            }
        }
        if adding {
            let new = Set(patterns).subtracting(peers[connection]?.patterns ?? [])
            if let credentials = peers[connection]?.credentials, !new.isEmpty,
                let refusal = quotaExceeded(.subscriptions, credentials: credentials, adding: new.count)
            {
                return .failure(refusal)
            }
            peers[connection]?.patterns.formUnion(patterns)
            statistics.daemon.subscriptions += new.count
        } else {
            peers[connection]?.patterns.subtract(patterns)
        }
        return .success(.object([:]))
    }

    func publishAction(_ params: [String: JSONValue], _ connection: ConnectionID, now: NIODeadline) -> Result<JSONValue, MediatorError> {
        guard let name = params["event"]?.stringValue, NameRules.isValidEvent(name) else {
            return .failure(MediatorError(.badRequest, "\"event\" must be a valid event name"))
        }
        guard !NameRules.isReservedEvent(name) else {
            return .failure(MediatorError(.forbidden, "events named \"mediator.*\" are sent only by the daemon"))
        }
        if let credentials = peers[connection]?.credentials,
            let denial = checkPolicy(.publish(event: name), credentials)
        {
            return .failure(denial)
        }
        var data: ByteBuffer?
        if let value = params["data"] {
            var buffer = writer.allocator.buffer(capacity: 64)
            buffer.writeBytes(value.encoded)
            data = buffer
        }
        let delivered = publish(name, data: data)
        monitorEvent(name, data: data, from: connection, now: now)
        return .success(["delivered": .int(Int64(delivered))])
    }

    func cancel(_ params: [String: JSONValue], _ connection: ConnectionID, now: NIODeadline) -> Result<JSONValue, MediatorError> {
        guard let raw = params["id"], let id = MessageID(json: raw) else {
            return .failure(MediatorError(.badRequest, "\"id\" must be the id of one of this connection's requests"))
        }
        if let daemonID = inFlight.daemonID(caller: connection, id: id), let call = inFlight.call(daemonID) {
            finish(daemonID)
            statistics.cancelled(call.statisticsSlot)
            recordAnswer(call, code: ErrorCode.cancelled.rawValue, now: now)
            send(connection, writer.error(
                callerID: call.callerIDBytes, MediatorError(.cancelled, "the caller cancelled the call"), delivered: forwardedDelivery(call)))
            sendCancelEvent(call)
        } else if activation.heldCalls.isEmpty || !cancelHeld(caller: connection, id: id) {
            _ = cancelReregistrationHeld(caller: connection, id: id, now: now)
        }
        return .success(.object([:]))
    }

    func openURL(_ params: [String: JSONValue]) -> Result<MediatorURL, MediatorError> {
        guard let text = params["url"]?.stringValue else {
            return .failure(MediatorError(.badRequest, "\"url\" must be a string"))
        }
        do { return .success(try MediatorURL(parsing: text)) } catch { return .failure(error) }
    }
}
