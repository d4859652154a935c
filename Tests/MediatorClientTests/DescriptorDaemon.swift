import Foundation
import MediatorProtocol
import MediatorSocket
import Synchronization

@testable import MediatorClient

/// A stand-in for mediatord that passes descriptors (contract section 8),
/// written on MediatorSocket as the daemon's coming host is: it answers
/// `hello` with `max_fds` to a peer that says `"fds": true`, records
/// `register`, forwards requests to a registered target and the responses
/// back, each with its descriptors, and serves the target `Fake` itself:
///
/// - `echo`: answers its params with the descriptors that came;
/// - `extra` / `fewer`: the same, but declares one descriptor fewer / more
///   than it sends (a hostile peer);
/// - `give`: answers `{"file": {"$fd": 0}}` with a new memfd named
///   `params.tag`, whether or not the caller said `fds`;
/// - `late`: answers as `echo` after `params.delay_ms`;
/// - `stream`: `params.count` partials, each with a memfd named
///   `params.tag`, then a final `{}`;
/// - `smuggle`: answers, in one sendmsg with the request's descriptors, a
///   malformed response declaring them and then a well-formed one
///   declaring them too (which must not get them);
/// - `hangUp`: closes the caller's connection.
///
/// One thread polls the listener and every connection.
final class DescriptorDaemon: @unchecked Sendable {
    // @unchecked: `peers`, `components`, `forwarded` and `scheduled` are
    // the daemon thread's alone; the rest is immutable or synchronized.
    let path: String
    let maxFds: Int
    /// Every message received, with the number of descriptors that came with it.
    let received = Mailbox<(message: JSONValue, descriptorCount: Int)>()
    /// What the daemon did that a test waits for (`late sent`).
    let notes = Mailbox<String>()

    private let listener: UnixListener
    private let stopping = Atomic<Bool>(false)
    private let stopped = Mailbox<Bool>()

    private final class Peer {
        let socket: UnixStreamSocket
        var inbound = InboundFrames(maxLineBytes: ProtocolConstants.defaultMaxFrameBytes)
        var outbound = OutboundQueue()
        var saidFds = false
        var gone = false

        init(_ socket: UnixStreamSocket) { self.socket = socket }
    }

    private struct Late {
        var due: Date
        var peer: Int
        var message: JSONValue
        var descriptors: [OwnedDescriptor]
    }

    private var peers: [Int: Peer] = [:]
    private var nextPeer = 1
    private var components: [String: Int] = [:]
    /// The daemon's id of a forwarded request → the caller's connection and id.
    private var forwarded: [Int64: (peer: Int, id: JSONValue)] = [:]
    private var nextID: Int64 = 1
    private var scheduled: [Late] = []

    private init(path: String, maxFds: Int, listener: UnixListener) {
        self.path = path
        self.maxFds = maxFds
        self.listener = listener
    }

    /// Listens (ready when this returns) and starts the daemon's thread.
    static func start(maxFds: Int = 32) throws -> DescriptorDaemon {
        let path = temporarySocketPath()
        let daemon = DescriptorDaemon(path: path, maxFds: maxFds, listener: try UnixListener.listen(path: path, backlog: 64))
        let thread = Thread { daemon.run() }
        thread.start()
        return daemon
    }

    /// Stops the thread, closes every connection and removes the socket file.
    func shutdown() async throws {
        stopping.store(true, ordering: .releasing)
        _ = try await stopped.first("the fake daemon to stop") { $0 }
        unlink(path)
    }

    // MARK: - The thread

    private static let pollMilliseconds: Int32 = 10

    private func run() {
        while !stopping.load(ordering: .acquiring) {
            let numbers = Array(peers.keys)
            var entries = [pollfd(fd: listener.descriptor.rawValue ?? -1, events: Int16(POLLIN), revents: 0)]
            for number in numbers {
                let peer = peers[number]!
                let events = Int16(POLLIN) | (peer.outbound.isEmpty ? 0 : Int16(POLLOUT))
                entries.append(pollfd(fd: peer.socket.descriptor.rawValue ?? -1, events: events, revents: 0))
            }
            _ = poll(&entries, nfds_t(entries.count), Self.pollMilliseconds)
            if entries[0].revents != 0 { acceptAll() }
            for (index, number) in numbers.enumerated() where entries[index + 1].revents != 0 {
                guard let peer = peers[number] else { continue }
                if entries[index + 1].revents & Int16(POLLOUT) != 0 { flush(peer) }
                read(number, peer)
            }
            sendDueReplies()
            for (number, peer) in peers where peer.gone { drop(number) }
        }
        for number in Array(peers.keys) { drop(number) }
        try? listener.close()
        stopped.post(true)
    }

    private func acceptAll() {
        while let socket = try? listener.accept() {
            peers[nextPeer] = Peer(socket)
            nextPeer += 1
        }
    }

    private func drop(_ number: Int) {
        guard let peer = peers.removeValue(forKey: number) else { return }
        try? peer.socket.close()
        peer.inbound.close()
        peer.outbound.close()
        components = components.filter { $0.value != number }
    }

    private func read(_ number: Int, _ peer: Peer) {
        while true {
            let outcome: InboundFrames.Received
            do {
                outcome = try peer.inbound.receive(from: peer.socket)
            } catch {
                peer.gone = true
                return
            }
            guard case .bytes = outcome else {
                if outcome == .endOfStream { peer.gone = true }
                return
            }
            while let frame = peer.inbound.nextFrame() {
                guard case .line(let line) = frame else { continue }
                guard let message = try? JSONParser.parse(line.bytes) else { continue }
                let declared = message["fds"]?.intValue.map(Int.init) ?? 0
                switch peer.inbound.takeDescriptors(declared, for: line) {
                case .descriptors(let descriptors):
                    received.post((message, descriptors.count))
                    handle(message, descriptors, from: number, peer)
                case .mismatch:
                    received.post((message, -1))
                    reply(to: peer, id: message["id"], error: MediatorError(.badRequest, "descriptors do not match fds"))
                }
            }
        }
    }

    // MARK: - Messages

    private func handle(_ message: JSONValue, _ descriptors: [OwnedDescriptor], from number: Int, _ peer: Peer) {
        guard let target = message["target"]?.stringValue else {
            routeResponse(message, descriptors)
            return
        }
        let action = message["action"]?.stringValue ?? ""
        let params = message["params"] ?? [:]
        if !descriptors.isEmpty, !peer.saidFds {
            reply(to: peer, id: message["id"], error: MediatorError(.badRequest, "descriptors from a peer that did not say fds"))
            return
        }
        switch (target, action) {
        case ("mediator", "hello"):
            peer.saidFds = params["fds"] == .bool(true)
            var result: [String: JSONValue] = ["protocol": 1, "connection": .int(Int64(number)), "max_frame": .int(1 << 20)]
            if peer.saidFds { result["max_fds"] = .int(Int64(maxFds)) }
            reply(to: peer, id: message["id"], result: .object(result))
        case ("mediator", "register"):
            if let name = params["target"]?.stringValue { components[name] = number }
            reply(to: peer, id: message["id"], result: [:])
        case ("mediator", _):
            if message["id"] != nil { reply(to: peer, id: message["id"], result: [:]) }
        case ("Fake", "echo"):
            reply(to: peer, id: message["id"], result: params, descriptors: descriptors)
        case ("Fake", "extra"):
            reply(to: peer, id: message["id"], result: params, descriptors: descriptors, declaring: descriptors.count - 1)
        case ("Fake", "fewer"):
            reply(to: peer, id: message["id"], result: params, descriptors: descriptors, declaring: descriptors.count + 1)
        case ("Fake", "give"):
            let memfd = Self.memfd(named: params["tag"]?.stringValue ?? "give", contents: "given")
            reply(to: peer, id: message["id"], result: ["file": ["$fd": 0]], descriptors: memfd.map { [$0] } ?? [])
        case ("Fake", "late"):
            let delay = Double(params["delay_ms"]?.intValue ?? 100) / 1000
            scheduled.append(Late(due: Date() + delay, peer: number, message: message, descriptors: descriptors))
        case ("Fake", "stream"):
            let tag = params["tag"]?.stringValue ?? "stream"
            for index in 0..<Int(params["count"]?.intValue ?? 0) {
                let memfd = Self.memfd(named: tag, contents: "partial \(index)")
                reply(
                    to: peer, id: message["id"], result: ["index": .int(Int64(index)), "file": ["$fd": 0]],
                    descriptors: memfd.map { [$0] } ?? [], continues: true)
            }
            reply(to: peer, id: message["id"], result: [:])
        case ("Fake", "smuggle"):
            // One sendmsg: a malformed response that declares the
            // descriptor, then a well-formed one that declares one too.
            let id = (message["id"] ?? .null).jsonText
            let bytes = #"{"id":\#(id),"fds":1,"continues":"yes","result":{}}"# + "\n" + #"{"id":\#(id),"fds":1,"result":{"f":{"$fd":0}}}"#
            do {
                try peer.outbound.enqueue(line: Array(bytes.utf8), descriptors: descriptors)
            } catch {
                peer.gone = true
            }
            flush(peer)
        case ("Fake", "hangUp"):
            peer.gone = true
        default:
            forward(message, descriptors, from: number, peer, to: target)
        }
    }

    private func forward(_ message: JSONValue, _ descriptors: [OwnedDescriptor], from number: Int, _ peer: Peer, to target: String) {
        guard let componentNumber = components[target], let component = peers[componentNumber] else {
            reply(to: peer, id: message["id"], error: MediatorError(.targetNotFound, "no \(target)"))
            return
        }
        guard case .object(var members) = message else { return }
        if let id = message["id"] {
            forwarded[nextID] = (number, id)
            members["id"] = .int(nextID)
            nextID += 1
        }
        members["caller"] = ["connection": .int(Int64(number))]
        send(.object(members), descriptors: descriptors, to: component)
    }

    private func routeResponse(_ message: JSONValue, _ descriptors: [OwnedDescriptor]) {
        guard let id = message["id"]?.intValue, let route = forwarded[id], let caller = peers[route.peer],
            case .object(var members) = message
        else { return }
        if message["continues"] != .bool(true) { forwarded[id] = nil }
        members["id"] = route.id
        send(.object(members), descriptors: descriptors, to: caller)
    }

    private func sendDueReplies() {
        let now = Date()
        let due = scheduled.filter { $0.due <= now }
        scheduled.removeAll { $0.due <= now }
        for late in due {
            guard let peer = peers[late.peer] else { continue }
            reply(to: peer, id: late.message["id"], result: late.message["params"] ?? [:], descriptors: late.descriptors)
            notes.post("late sent")
        }
    }

    private func reply(
        to peer: Peer, id: JSONValue?, result: JSONValue, descriptors: [OwnedDescriptor] = [], declaring: Int? = nil,
        continues: Bool = false
    ) {
        var members: [String: JSONValue] = ["id": id ?? .null, "result": result]
        let count = declaring ?? descriptors.count
        if count > 0 { members["fds"] = .int(Int64(count)) }
        if continues { members["continues"] = true }
        send(.object(members), descriptors: descriptors, to: peer)
    }

    private func reply(to peer: Peer, id: JSONValue?, error: MediatorError) {
        guard let id else { return }
        send(["id": id, "error": error.json], descriptors: [], to: peer)
    }

    private func send(_ message: JSONValue, descriptors: [OwnedDescriptor], to peer: Peer) {
        do {
            try peer.outbound.enqueue(terminatedLine: OutboundMessage.line(message), descriptors: descriptors)
        } catch {
            peer.gone = true
        }
        flush(peer)
    }

    private func flush(_ peer: Peer) {
        do {
            _ = try peer.outbound.write(to: peer.socket)
        } catch {
            peer.gone = true
        }
    }

    /// A memfd named `name` holding `contents`, or nil.
    static func memfd(named name: String, contents: String) -> OwnedDescriptor? {
        guard let file = try? OwnedFileDescriptor.sealedMemory(Array(contents.utf8), name: name) else { return nil }
        return file.take().map { OwnedDescriptor(taking: $0) }
    }
}
