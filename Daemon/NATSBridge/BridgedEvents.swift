import Logging
import MediatorClient
import MediatorNATS
import MediatorProtocol
import Synchronization

/// Events forwarded between hosts: the local events matching the bridge's
/// patterns go out on `<prefix>.event.<name>`, and those other hosts send
/// are published here, each once, without coming back.
///
/// Loops: NATS does not echo this connection's own messages (`no_echo`),
/// and an event this bridge published locally reaches its own local
/// subscription too; it is recognized there by name and data and not sent
/// out again. The count per name and data makes that exact: as many
/// arrivals are skipped as were published, whatever the order.
final class BridgedEvents: Sendable {
    private let patterns: [String]
    private let subjects: BridgeSubjects
    private let host: String
    private let logger: Logger
    /// Events published here from other hosts, not yet seen coming back.
    private let echoes = Mutex<[Fingerprint: Int]>([:])

    private struct Fingerprint: Hashable {
        var name: String
        var data: [UInt8]
    }

    init(patterns: [String], subjects: BridgeSubjects, host: String, logger: Logger) {
        self.patterns = patterns
        self.subjects = subjects
        self.host = host
        self.logger = logger
    }

    /// Whether an event of this name crosses hosts: it matches a pattern and
    /// is not the daemon's own (`mediator.*` speaks of one daemon).
    func crosses(_ name: String) -> Bool {
        !name.hasPrefix("mediator.") && patterns.contains { NameRules.eventPattern($0, matches: name) }
    }

    /// Forwards the local events until the subscription ends.
    /// Ends when the stream does; a lost daemon ends it with an error, which
    /// the session notices on its own (its connection closes).
    func forwardLocal(_ events: MediatorStream<MediatorEvent>, to nats: NATSConnection) async {
        do throws(MediatorError) {
            try await forwardEach(events, to: nats)
        } catch {
            logger.debug("local events no longer forwarded: \(error.message)")
        }
    }

    private func forwardEach(_ events: MediatorStream<MediatorEvent>, to nats: NATSConnection) async throws(MediatorError) {
        for try await event in events where crosses(event.name) {
            let data = event.data?.encoded ?? []
            let fingerprint = Fingerprint(name: event.name, data: data)
            let wasEcho = echoes.withLock { table -> Bool in
                guard let count = table[fingerprint] else { return false }
                table[fingerprint] = count > 1 ? count - 1 : nil
                return true
            }
            if wasEcho { continue }
            do {
                try nats.publish(
                    subjects.event(event.name), headers: [BridgeMessages.Header.host: [host]], payload: data)
            } catch {
                logger.debug("an event not sent over NATS: \(error)", metadata: ["event": "\(event.name)"])
            }
        }
    }

    /// An event from another host (a libnats thread): published here.
    func received(_ message: NATSMessage, client: MediatorClient) {
        guard let name = subjects.eventName(message.subject), NameRules.isValidEvent(name), crosses(name) else { return }
        var data: JSONValue?
        if !message.payload.isEmpty {
            guard let parsed = try? JSONParser.parse(message.payload) else { return }
            data = parsed
        }
        let fingerprint = Fingerprint(name: name, data: data?.encoded ?? [])
        echoes.withLock { $0[fingerprint, default: 0] += 1 }
        Task {
            do {
                _ = try await client.publish(name, data: data)
            } catch {
                // Not published: it will not come back either.
                echoes.withLock { table in
                    if let count = table[fingerprint] { table[fingerprint] = count > 1 ? count - 1 : nil }
                }
                logger.debug("an event from another host not published here: \(error)", metadata: ["event": "\(name)"])
            }
        }
    }
}
