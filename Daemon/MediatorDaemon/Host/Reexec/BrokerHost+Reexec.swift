import Logging
import MediatorProtocol
import MediatorSocket
import MediatorSocketHost
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Re-executing the daemon's binary in place (issue 28), the old image's
/// side: stop reading, take the sockets' hand-over, the broker's snapshot
/// and the host's state, put them in a sealed memfd, keep exactly their
/// descriptors open across the exec, and `execve` the binary on disk. The
/// new image carries on (BrokerHost+Resume.swift). If the exec fails, this
/// image takes its sockets back and answers the callers with the error.
extension BrokerHost {
    /// How long a re-exec waits for the held calls its snapshot cannot
    /// carry (with descriptors, from the NATS bridge, in the
    /// re-registration hold) to go out; the others are carried.
    static let reexecHoldWait: Duration = .seconds(10)

    /// Asks for a re-exec (`mediator/reexec`, a signal, a reload that found
    /// a new binary): from a timer, after the effects under way are
    /// carried out; asks before it join it. On the loop's thread.
    func requestReexec(_ requester: HostHandOverState.Requester?) {
        let refusal: String? =
            stopping || restartHandOverUnderway ? "mediatord is stopping"
            : reexecSettings == nil ? "mediatord cannot re-execute itself: the path of its binary is not known" : nil
        if let refusal {
            if let requester { answerReexec([requester], .failure(MediatorError(.internal, refusal))) }
            logger.warning("re-exec refused", metadata: ["reason": "\(refusal)"])
            return
        }
        if pendingReexec != nil {
            if let requester { pendingReexec?.requesters.append(requester) }
            return
        }
        pendingReexec = PendingReexec(
            requesters: requester.map { [$0] } ?? [], waitUntil: .now + Self.reexecHoldWait)
        scheduleReexecAttempt(after: .zero)
    }

    /// The timer of a re-exec waiting for its turn (a source lives as long as its object).
    private func scheduleReexecAttempt(after delay: Duration) {
        do {
            reexecTimer = try loop.addTimer(after: delay, accuracy: .milliseconds(1)) { [unowned self] _, _ in
                reexecTimer = nil
                attemptReexec()
            }
        } catch {
            // No timer (the loop is out of memory or descriptors): no re-exec either.
            logger.error("re-exec abandoned: no timer", metadata: ["error": "\(error)"])
            let requesters = pendingReexec?.requesters ?? []
            pendingReexec = nil
            answerReexec(requesters, .failure(MediatorError(.internal, "re-exec abandoned: \(error)")))
        }
    }

    private func attemptReexec() {
        guard pendingReexec != nil else { return }
        if stopping, let pending = pendingReexec {
            pendingReexec = nil
            answerReexec(pending.requesters, .failure(MediatorError(.internal, "mediatord is stopping")))
            return
        }
        // Lines queued for their turn go now: the descriptors they brought
        // are then on their way, not held (and asks among them join this one).
        dispatch?.drain()
        guard let pending = pendingReexec else { return }
        // Held calls with descriptors (or from the bridge) are not in the
        // snapshot: wait for them to go out, within a bound; and for a
        // process spawned to report its pid, or the new image could not watch it.
        if broker.hasUncarriedHeldCalls || descriptors.isHoldingAny || processes.isStartingAny, ContinuousClock.now < pending.waitUntil {
            scheduleReexecAttempt(after: .milliseconds(10))
            return
        }
        pendingReexec = nil
        if broker.hasUncarriedHeldCalls {
            apply(broker.answerUncarriedHeldCalls(MediatorError(.componentUnavailable, "mediatord re-executed while the call waited for its component"), now: .now()))
        }
        reexec(pending.requesters)
    }

    private func reexec(_ asked: [HostHandOverState.Requester]) {
        guard let settings = reexecSettings, let server else { return }
        settings.announce(.starting)
        // Lines read and queued for their turn are handled now: the
        // successor starts with no queue. Their answers join the output handed over.
        dispatch?.drain()
        // A `mediator/reexec` among them is this re-exec too: its caller is answered with the others.
        var requesters = asked
        if let late = pendingReexec {
            requesters += late.requesters
            pendingReexec = nil
            reexecTimer?.cancel()
            reexecTimer = nil
        }
        let now = NIODeadline.now()
        let snapshot = broker.snapshot(now: now)
        guard let sockets = server.handOver() else { return }
        let kept = ReexecHandOver.descriptors(of: sockets)
        let state = HostHandOverState(
            boundPath: boundPath, advertisedPath: advertisedPath, requesters: requesters,
            descriptors: descriptors.handOver, reexecs: reexecs + 1, processes: processes.handOver())
        let handOver = ReexecHandOver(
            descriptors: kept, host: state,
            broker: snapshot.encoded(version: settings.snapshotVersion ?? BrokerSnapshot.currentVersion),
            sockets: sockets.encoded())
        let bytes = handOver.encoded()
        let failure: ReexecError
        do {
            let memfd = try SealedMemfd.create(bytes, name: "mediatord-handover")
            let passed = kept.map(\.fd) + state.processDescriptors + [memfd]
            if let code = CloseOnExec.set(false, on: passed) {
                failure = .system("clearing FD_CLOEXEC", code)
            } else {
                logger.notice(
                    "re-executing", metadata: [
                        "binary": "\(settings.image.executablePath)", "connections": "\(sockets.connections.count)",
                        "calls_in_flight": "\(snapshot.calls.count)", "handover_bytes": "\(bytes.count)",
                        "descriptors": "\(passed.count)", "component_processes": "\(state.processes.count)",
                    ])
                let code = settings.image.exec(environment: Self.environment(handOverFD: memfd))
                failure = .system("execve \(settings.image.executablePath)", code)
            }
            CloseOnExec.set(true, on: passed)
            close(memfd)
        } catch {
            failure = error
        }
        resumeAfterFailedReexec(sockets, requesters, failure)
    }

    /// The exec did not happen: the sockets come back to this image.
    private func resumeAfterFailedReexec(
        _ sockets: LineServerHandOver, _ requesters: [HostHandOverState.Requester], _ failure: ReexecError
    ) {
        logger.error("re-exec failed; this image carries on", metadata: ["error": "\(failure)"])
        do {
            server = try LineServer(
                loop: loop, adopting: sockets, maxLineBytes: broker.configuration.maxFrameBytes, handlers: lineHandlers())
        } catch {
            logger.critical("after a failed re-exec the listener cannot be taken back", metadata: ["error": "\(error)"])
        }
        answerReexec(requesters, .failure(MediatorError(.internal, "re-exec failed: \(failure)")))
        reexecSettings?.announce(.failed("\(failure)"))
    }

    func answerReexec(_ requesters: [HostHandOverState.Requester], _ outcome: Result<JSONValue, MediatorError>) {
        for requester in requesters {
            let idBytes = requester.idBytes.map { bytes -> ByteBuffer in
                var buffer = ByteBufferAllocator().buffer(capacity: bytes.count)
                buffer.writeBytes(bytes)
                return buffer
            }
            apply(broker.answerReexec(idBytes, on: requester.connection, outcome))
        }
    }

    /// This process's environment with `MEDIATORD_HANDOVER_FD` naming the memfd.
    private static func environment(handOverFD: Int32) -> [String] {
        let prefix = ReexecHandOver.environmentVariable + "="
        var entries: [String] = []
        var cursor = environ
        while let entry = cursor.pointee {
            let text = String(cString: entry)
            if !text.hasPrefix(prefix) { entries.append(text) }
            cursor = cursor.advanced(by: 1)
        }
        return entries + [prefix + "\(handOverFD)"]
    }
}
