import MediatorConfiguration
import MediatorProtocol
import MediatorTransport
import NIOCore
import Testing

@testable import MediatorDaemon

/// Drives a ``Broker`` with no sockets: fake peers connect with credentials,
/// send JSON lines, and the lines each peer would receive are collected per
/// connection. Time is a `NIODeadline` the test moves by hand.
final class BrokerDriver {
    let broker: Broker
    let start: NIODeadline
    private(set) var now: NIODeadline
    private var inboxes: [ConnectionID: [String]] = [:]
    /// Every `.close` effect, in order.
    private(set) var closed: [ConnectionID] = []
    /// Every `.wakeUp` effect, in order.
    private(set) var wakeUps: [NIODeadline] = []
    /// How often the test hook asked to block the event loop.
    private(set) var blockRequests = 0
    /// `mediator/reexec` calls the broker passed on to its host.
    private(set) var reexecRequests: [ConnectionID] = []
    /// Component effects, in order.
    var spawns: [SpawnOrder] = []
    var signals: [(pid: Int32, signal: Int32)] = []
    var unitStarts: [String] = []
    var unitStops: [String] = []
    var bootCompleted = false
    /// Stored processes adopted after a crash, and those ended unclaimed (spawn ids).
    var adoptedStored: [(spawnID: Int, pid: Int32, target: String)] = []
    var endedStored: [Int] = []
    /// The effects of the last input, as returned by the broker.
    private(set) var lastEffects: [BrokerEffect] = []
    /// Descriptors handed to the broker and not yet sent on or released:
    /// each must end in exactly one of the two.
    private(set) var descriptorsHeld: Set<PassedDescriptors> = []
    /// Descriptors sent, by the connection they went to, in order.
    private(set) var descriptorsSent: [ConnectionID: [PassedDescriptors]] = [:]
    private(set) var descriptorsReleased: [PassedDescriptors] = []
    private var nextDescriptorHandle: UInt64 = 1

    init(version: String = "9.8.7-test", _ configure: (inout DaemonConfiguration) -> Void = { _ in }) {
        var configuration = DaemonConfiguration()
        configure(&configuration)
        broker = Broker(configuration: configuration, version: version, logger: .init(label: "mediator-daemon-tests"))
        broker.logger.logLevel = .critical
        // Routing tests are not about access: everyone may do anything here;
        // the policy's own tests install their policies.
        broker.loadPolicy(Policy(rules: [Policy.Rule(match: .everyone, allow: .everything)]))
        start = .uptimeNanoseconds(7_000_000_000)
        now = start
    }

    /// A driver around a broker made elsewhere (one restored from a
    /// snapshot), its clock starting at `start` and now at `now`.
    init(broker: Broker, start: NIODeadline, now: NIODeadline) {
        self.broker = broker
        self.start = start
        self.now = now
    }

    /// Distinct credentials per connection: pid 4100+c, uid 1000+c, gid 2000+c.
    static func credentials(_ connection: ConnectionID) -> PeerCredentials {
        PeerCredentials(pid: Int32(4100 + connection), uid: UInt32(1000 + connection), gid: UInt32(2000 + connection))
    }

    /// The `caller` member the daemon must build for a connection.
    static func callerJSON(_ connection: ConnectionID, name: String? = nil) -> String {
        let c = credentials(connection)
        if let name {
            return #"{"gid":\#(c.gid),"name":"\#(name)","pid":\#(c.pid),"uid":\#(c.uid)}"#
        }
        return #"{"gid":\#(c.gid),"pid":\#(c.pid),"uid":\#(c.uid)}"#
    }

    func connect(_ connection: ConnectionID, credentials: PeerCredentials? = nil) {
        broker.connect(connection, credentials: credentials ?? Self.credentials(connection))
        inboxes[connection] = inboxes[connection] ?? []
    }

    /// Sends one line (without its LF). The frame is handed over as a slice
    /// that does not start at index 0 of its storage, as a decoder may give it.
    @discardableResult
    func send(_ line: String, from connection: ConnectionID) -> [BrokerEffect] {
        var buffer = ByteBufferAllocator().buffer(capacity: line.utf8.count + 16)
        buffer.writeString("JUNK\n")
        buffer.writeString(line)
        buffer.moveReaderIndex(forwardBy: 5)
        return apply(broker.receive(.frame(buffer), from: connection, now: now))
    }

    /// Sends one line with `count` descriptors (as the host hands them over:
    /// a handle, counted as held until an effect sends or releases it).
    @discardableResult
    func send(_ line: String, descriptors count: Int, from connection: ConnectionID) -> PassedDescriptors {
        let passed = PassedDescriptors(
            handle: nextDescriptorHandle, count: count, uid: broker.credentials(of: connection)?.uid ?? 0)
        nextDescriptorHandle += 1
        descriptorsHeld.insert(passed)
        var buffer = ByteBufferAllocator().buffer(capacity: line.utf8.count)
        buffer.writeString(line)
        apply(broker.receive(.frame(buffer), from: connection, descriptors: passed, now: now))
        return passed
    }

    @discardableResult
    func sendTooLarge(from connection: ConnectionID) -> [BrokerEffect] {
        apply(broker.receive(.tooLarge, from: connection, now: now))
    }

    @discardableResult
    func disconnect(_ connection: ConnectionID) -> [BrokerEffect] {
        apply(broker.disconnect(connection, now: now))
    }

    /// Moves the clock forward; does not fire anything by itself.
    func advance(ms: Int64) { now = now + .milliseconds(ms) }
    func advance(ns: Int64) { now = now + .nanoseconds(ns) }
    /// `start` plus some milliseconds.
    func at(ms: Int64) -> NIODeadline { start + .milliseconds(ms) }

    /// What the host does when a wake-up fires.
    @discardableResult
    func expire() -> [BrokerEffect] { apply(broker.expireCalls(now: now)) }

    @discardableResult
    func answerAllPending(_ error: MediatorError) -> [BrokerEffect] { apply(broker.answerAllPending(error)) }

    @discardableResult
    func apply(_ effects: [BrokerEffect]) -> [BrokerEffect] {
        lastEffects = effects
        for effect in effects {
            switch effect {
            case .send(let connection, let buffer):
                deliver(buffer, to: connection)
            case .sendWithDescriptors(let connection, let buffer, let passed):
                #expect(descriptorsHeld.remove(passed) != nil, "\(passed) sent twice, or after a release")
                descriptorsSent[connection, default: []].append(passed)
                deliver(buffer, to: connection)
            case .releaseDescriptors(let passed):
                #expect(descriptorsHeld.remove(passed) != nil, "\(passed) released twice, or after a send")
                descriptorsReleased.append(passed)
            case .close(let connection):
                closed.append(connection)
            case .wakeUp(let deadline):
                wakeUps.append(deadline)
            case .blockEventLoop:
                blockRequests += 1
            case .spawn(let order):
                spawns.append(order)
            case .signal(let pid, let signal, _):
                signals.append((pid, signal))
            case .startUnit(let unit, _):
                unitStarts.append(unit)
            case .stopUnit(let unit):
                unitStops.append(unit)
            case .bootComplete:
                bootCompleted = true
            case .adoptStoredProcess(let spawnID, let pid, let target):
                adoptedStored.append((spawnID, pid, target))
            case .endStoredProcesses(let spawnIDs):
                endedStored += spawnIDs
            case .reexec(let connection, _):
                reexecRequests.append(connection)
            }
        }
        return effects
    }

    private func deliver(_ buffer: ByteBuffer, to connection: ConnectionID) {
        let text = String(buffer: buffer)
        #expect(text.hasSuffix("\n"), "every line ends with LF: \(text)")
        #expect(text.dropLast().firstIndex(of: "\n") == nil, "no raw LF inside a line: \(text)")
        inboxes[connection, default: []].append(String(text.dropLast()))
    }

    /// The lines a connection received since the last take, and forgets them.
    func take(_ connection: ConnectionID) -> [String] {
        defer { inboxes[connection] = [] }
        return inboxes[connection] ?? []
    }

    /// Like ``take(_:)`` but parsed.
    func takeJSON(_ connection: ConnectionID, sourceLocation: SourceLocation = #_sourceLocation) -> [JSONValue] {
        take(connection).compactMap { line in
            do { return try JSONParser.parse(line) } catch {
                Issue.record("unparseable line \(line): \(error)", sourceLocation: sourceLocation)
                return nil
            }
        }
    }

    /// The one line a connection received, parsed; records an issue otherwise.
    func takeOne(_ connection: ConnectionID, sourceLocation: SourceLocation = #_sourceLocation) -> JSONValue? {
        let values = takeJSON(connection, sourceLocation: sourceLocation)
        guard values.count == 1 else {
            Issue.record("expected exactly one line for connection \(connection), got \(values)", sourceLocation: sourceLocation)
            return nil
        }
        return values[0]
    }

    /// Lines waiting, without taking them.
    func peek(_ connection: ConnectionID) -> [String] { inboxes[connection] ?? [] }

    func wakeUpEffects(_ effects: [BrokerEffect]) -> [NIODeadline] {
        effects.compactMap { if case .wakeUp(let at) = $0 { return at } else { return nil } }
    }

    // MARK: - Conveniences for the daemon's own target

    /// Sends a `mediator` request and returns the parsed answer(s) to `connection`.
    func daemon(
        _ action: String, _ params: String = "{}", id: String = #""d""#, from connection: ConnectionID,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> JSONValue? {
        send(#"{"id":\#(id),"target":"mediator","action":"\#(action)","params":\#(params)}"#, from: connection)
        return takeOne(connection, sourceLocation: sourceLocation)
    }

    /// Registers a target and requires success; returns the instance number.
    @discardableResult
    func register(
        _ target: String, actions: String = #"["a"]"#, mode: String? = nil, description: String? = nil,
        from connection: ConnectionID, sourceLocation: SourceLocation = #_sourceLocation
    ) -> Int64? {
        var params = #"{"target":"\#(target)","actions":\#(actions)"#
        if let mode { params += #","mode":"\#(mode)""# }
        if let description { params += #","description":"\#(description)""# }
        params += "}"
        send(#"{"id":"reg","target":"mediator","action":"register","params":\#(params)}"#, from: connection)
        let lines = peek(connection).filter { $0.hasPrefix(#"{"id":"reg""#) }
        _ = take(connection)
        guard lines.count == 1, let answer = try? JSONParser.parse(lines[0]),
            answer["result"]?["target"] == .string(target), let instance = answer["result"]?["instance"]?.intValue
        else {
            Issue.record("register \(target) failed: \(lines)", sourceLocation: sourceLocation)
            return nil
        }
        return instance
    }

    func subscribe(_ patterns: [String], from connection: ConnectionID, sourceLocation: SourceLocation = #_sourceLocation) {
        let list = patterns.map { #""\#($0)""# }.joined(separator: ",")
        let answer = daemon("subscribe", #"{"events":[\#(list)]}"#, from: connection, sourceLocation: sourceLocation)
        #expect(answer == #"{"id":"d","result":{}}"#.json, sourceLocation: sourceLocation)
    }
}

extension String {
    /// Parses a JSON text written in a test; traps on a typo in the test itself.
    var json: JSONValue {
        do { return try JSONParser.parse(self) } catch { fatalError("bad JSON in test: \(self): \(error)") }
    }
}

/// An error line, as the daemon writes it (members of `error` sorted),
/// with the `data.delivered` every error the daemon makes for a request has
/// (nil: null, unknown).
func errorLine(id: String, _ code: String, _ message: String, delivered: Bool?) -> String {
    var escaped: [UInt8] = []
    JSONValue.encodeString(message, into: &escaped)
    let data = delivered.map { $0 ? "true" : "false" } ?? "null"
    return #"{"id":\#(id),"error":{"code":"\#(code)","data":{"delivered":\#(data)},"message":\#(String(decoding: escaped, as: UTF8.self))}}"#
}

/// The error code and id of a parsed line, for looser checks.
func errorCode(_ value: JSONValue?) -> String? { value?["error"]?["code"]?.stringValue }
