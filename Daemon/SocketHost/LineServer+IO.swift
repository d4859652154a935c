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
            guard let socket else { return }
            let id = nextID
            nextID += 1
            let connection = Connection(id: id, socket: socket, maxLineBytes: maxLineBytes)
            do {
                try watch(connection)
            } catch {
                try? socket.close()
                continue
            }
            // In the table first, so that the handler may send a parting line.
            connections[id] = connection
            guard handlers.accepted(id, socket) else {
                connections[id] = nil
                unwatch(connection)
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

    /// The epoll set is readable: serves every connection that is ready,
    /// then writes what their lines queued.
    func connectionsReady() {
        let batch = epoll.ready()
        // Retained first: a handler may drop a connection that comes later
        // in the batch, and only a reference keeps it alive until then.
        for entry in batch { if let token = entry.data.ptr { _ = Unmanaged<Connection>.fromOpaque(token).retain() } }
        servingReadiness = true
        for entry in batch {
            guard let token = entry.data.ptr else { continue }
            let connection = Unmanaged<Connection>.fromOpaque(token).takeRetainedValue()
            if !connection.isDropped { ready(connection.id, connection, entry.events) }
        }
        servingReadiness = false
        flushDirty()
    }

    /// Watches `connection`'s socket for its ``Connection/events``.
    func watch(_ connection: Connection) throws(SDEventError) {
        guard let fd = connection.socket.descriptor.rawValue else { throw SDEventError("epoll_ctl(ADD)", errno: EBADF) }
        try epoll.add(fd, events: connection.events, token: Unmanaged.passUnretained(connection).toOpaque())
        connection.watchedDescriptor = fd
    }

    /// After ``Connection/events`` changed.
    func rewatch(_ connection: Connection) {
        guard connection.watchedDescriptor >= 0 else { return }
        try? epoll.modify(
            connection.watchedDescriptor, events: connection.events, token: Unmanaged.passUnretained(connection).toOpaque())
    }

    /// Before the connection's socket is closed or handed over, and before
    /// the server lets go of it (the epoll entry's pointer is unretained).
    func unwatch(_ connection: Connection) {
        guard connection.watchedDescriptor >= 0 else { return }
        epoll.remove(connection.watchedDescriptor)
        connection.watchedDescriptor = -1
    }

    /// `events` as epoll reports them (tested as bits: IOEvents' `contains`
    /// is a generic call from this module).
    func ready(_ id: ConnectionID, _ connection: Connection, _ events: UInt32) {
        if events & IOEvents.writable.rawValue != 0 {
            flush(id, connection)
            // The flush may have dropped it.
            guard !connection.isDropped else { return }
        }
        if events & (IOEvents.readable.rawValue | IOEvents.hangup.rawValue | IOEvents.error.rawValue) != 0 { read(id, connection) }
    }

    /// Reads what is there, a read at a time, and hands each line over;
    /// stops at a read that did not fill its room (see `lastReadFilledRoom`).
    func read(_ id: ConnectionID, _ connection: Connection) {
        while true {
            let received: InboundFrames.Received
            do {
                received = try connection.inbound.receive(from: connection.socket, controlSpace: controlSpace)
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
        while true {
            // A struct, not `nextFrame()`'s optional enum (see FrameCut).
            let cut = connection.inbound.nextCut()
            switch cut.kind {
            case .needMore:
                return true
            case .tooLarge:
                handlers.tooLarge(id)
            case .line:
                let line = cut.line
                // Without descriptors queued there is nothing to
                // attribute: the line goes as it is (its reader
                // checks that it declares none).
                guard connection.inbound.hasQueuedDescriptors else {
                    line.withUnsafeBytes { handlers.line(id, $0, []) }
                    break
                }
                let declared = handlers.declaredDescriptors(line.bytes) ?? 0
                switch connection.inbound.takeDescriptors(declared, for: line) {
                case .descriptors(let descriptors):
                    line.withUnsafeBytes { handlers.line(id, $0, descriptors) }
                case let claim:
                    handlers.descriptorMismatch(id, line.bytes, claim)
                }
            }
            // A handler may have closed it.
            guard !connection.isDropped else { return false }
        }
    }

    // MARK: - Writing

    func markDirty(_ open: Connection, _ id: ConnectionID) {
        guard !open.isDirty else { return }
        open.isDirty = true
        dirty.append(open)
        // Within a readiness dispatch the flush follows at its end.
        if !servingReadiness && !flushArmed {
            flushArmed = true
            try? flushSource?.setEnablement(.oneShot)
        }
    }

    func flushDirty() {
        guard !dirty.isEmpty else { return }
        // Swapped, not copied: a flush's handlers may queue more, for the next one.
        swap(&dirty, &flushing)
        for connection in flushing where !connection.isDropped {
            connection.isDirty = false
            flush(connection.id, connection)
        }
        // One by one: cheaper than removeAll's general replaceSubrange for a few.
        while !flushing.isEmpty { flushing.removeLast() }
    }

    func flush(_ id: ConnectionID, _ connection: Connection) {
        // Descriptors written are reported even when the bytes left are
        // the same as before (none): their sender's count goes down then.
        let descriptorsBefore = connection.outbound.queuedDescriptorCount
        let outcome: WriteOutcome
        do {
            outcome = try connection.outbound.write(to: connection.socket, spare: &spareChunk)
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
                rewatch(connection)
            }
        case .wouldBlock:
            // A close does not wait for a peer that does not read.
            if connection.closing {
                drop(id)
                return
            }
            if !connection.waitingToWrite {
                connection.waitingToWrite = true
                rewatch(connection)
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
        unwatch(connection)
        connection.inbound.close()
        connection.outbound.close()
        try? connection.socket.close()
        handlers.closed(id)
    }
}
