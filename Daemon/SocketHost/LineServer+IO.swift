import Glibc
import MediatorEventLoop
import MediatorSocket

/// Accepting, reading and writing: what the loop's readiness and the
/// flush after each iteration run.
extension LineServer {
    // MARK: - Reading

    func acceptWaiting() {
        while true {
            let socket: UnixStreamSocket?
            do {
                socket = try listener.accept()
            } catch {
                if case .system(_, let code) = error, let pause = handlers.acceptFailed(code) { pauseAccepting(for: pause) }
                return
            }
            guard let socket, let fd = socket.descriptor.rawValue else { return }
            let id = nextID
            nextID += 1
            let connection = Connection(socket: socket, maxLineBytes: maxLineBytes)
            do {
                // The connection itself, not its id: no table lookup per
                // readiness (unowned: its source, which holds this closure,
                // is cancelled when it is dropped).
                connection.source = try loop.addIO(fd: fd, events: .readable) { [unowned self, unowned connection] _, events in
                    ready(id, connection, events)
                }
            } catch {
                try? socket.close()
                continue
            }
            // In the table first, so that the handler may send a parting line.
            connections[id] = connection
            guard handlers.accepted(id, socket) else {
                connections[id] = nil
                connection.source?.cancel()
                connection.outbound.close()
                try? socket.close()
                continue
            }
        }
    }

    /// Takes the listener out of epoll for `pause` (it is level-triggered:
    /// left in, a failing accept would spin at full CPU).
    func pauseAccepting(for pause: Duration) {
        guard acceptResumption == nil, let source = listenerSource else { return }
        try? source.setEnablement(.off)
        acceptResumption = try? loop.addTimer(after: pause) { [unowned self] _, _ in
            acceptResumption = nil
            try? listenerSource?.setEnablement(.on)
        }
    }

    func ready(_ id: ConnectionID, _ connection: Connection, _ events: IOEvents) {
        if events.contains(.writable) {
            flush(id, connection)
            // The flush may have dropped it.
            guard !connection.isDropped else { return }
        }
        if events.contains(.readable) || events.contains(.hangup) || events.contains(.error) { read(id, connection) }
    }

    /// Reads what is there, a read at a time, and hands each line over;
    /// stops at a read that did not fill its room (see `lastReadFilledRoom`).
    func read(_ id: ConnectionID, _ connection: Connection) {
        while true {
            let received: InboundFrames.Received
            do {
                received = try connection.inbound.receive(from: connection.socket)
            } catch {
                drop(id)
                return
            }
            switch received {
            case .wouldBlock:
                return
            case .endOfStream:
                drop(id)
                return
            case .bytes:
                guard deliverLines(id, connection) else { return }
                // Level-triggered: a short read most likely emptied the
                // socket, and the read that would say so is a system call
                // (and 600 instructions) per line; more comes as readiness.
                guard connection.inbound.lastReadFilledRoom else { return }
            }
        }
    }

    /// Hands over every complete line buffered; false when a handler
    /// dropped the connection (or handed the server over) meanwhile.
    func deliverLines(_ id: ConnectionID, _ connection: Connection) -> Bool {
        while let frame = connection.inbound.nextFrame() {
            switch frame {
            case .tooLarge:
                handlers.tooLarge(id)
            case .line(let line):
                // Without descriptors queued there is nothing to
                // attribute: the line goes as it is (its reader
                // checks that it declares none).
                guard connection.inbound.hasQueuedDescriptors else {
                    handlers.line(id, line.bytes, [])
                    break
                }
                let declared = handlers.declaredDescriptors(line.bytes) ?? 0
                switch connection.inbound.takeDescriptors(declared, for: line) {
                case .descriptors(let descriptors):
                    handlers.line(id, line.bytes, descriptors)
                case let claim:
                    handlers.descriptorMismatch(id, line.bytes, claim)
                }
            }
            // A handler may have closed it.
            guard !connection.isDropped else { return false }
        }
        return true
    }

    // MARK: - Writing

    func markDirty(_ open: Connection, _ id: ConnectionID) {
        guard !open.isDirty else { return }
        open.isDirty = true
        dirty.append(id)
    }

    func flushDirty() {
        guard !dirty.isEmpty else { return }
        // Swapped, not copied: a flush's handlers may queue more, for the next one.
        swap(&dirty, &flushing)
        for id in flushing {
            guard let connection = connections[id] else { continue }
            connection.isDirty = false
            flush(id, connection)
        }
        flushing.removeAll(keepingCapacity: true)
    }

    func flush(_ id: ConnectionID) {
        guard let connection = connections[id] else { return }
        flush(id, connection)
    }

    func flush(_ id: ConnectionID, _ connection: Connection) {
        // Descriptors written are reported even when the bytes left are
        // the same as before (none): their sender's count goes down then.
        let descriptorsBefore = connection.outbound.queuedDescriptorCount
        let outcome: WriteOutcome
        do {
            outcome = try connection.outbound.write(to: connection.socket)
        } catch {
            drop(id)
            return
        }
        switch outcome {
        case .drained:
            if connection.closing {
                drop(id)
                return
            }
            if connection.waitingToWrite {
                connection.waitingToWrite = false
                try? connection.source?.setEvents(connection.events)
            }
        case .wouldBlock:
            // A close does not wait for a peer that does not read.
            if connection.closing {
                drop(id)
                return
            }
            if !connection.waitingToWrite {
                connection.waitingToWrite = true
                try? connection.source?.setEvents(connection.events)
            }
        }
        let backlog = connection.outbound.queuedByteCount
        if backlog != connection.reportedBacklog || connection.outbound.queuedDescriptorCount != descriptorsBefore {
            connection.reportedBacklog = backlog
            handlers.backlogChanged(id, backlog)
        }
    }

    /// Forgets a connection: its source, its socket and every descriptor it still holds.
    func drop(_ id: ConnectionID) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        connection.isDropped = true
        connection.source?.cancel()
        connection.inbound.close()
        connection.outbound.close()
        try? connection.socket.close()
        handlers.closed(id)
    }
}
