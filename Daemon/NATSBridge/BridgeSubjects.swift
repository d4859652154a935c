/// The NATS subjects of one bridge domain (docs/protocol.md, "Across hosts
/// through NATS"). `prefix` keeps separate Mediator domains apart on one
/// NATS system.
package struct BridgeSubjects: Sendable, Equatable {
    package let prefix: String

    package init(prefix: String) {
        self.prefix = prefix
    }

    /// Where calls to `target` are sent; the exporting hosts subscribe to
    /// it in the queue group of the same name, so each call reaches one.
    package func call(_ target: String) -> String { "\(prefix).call.\(target)" }

    /// Where each host announces the targets it exports.
    package var hosts: String { "\(prefix).hosts" }

    /// Where an event named `name` crosses hosts.
    package func event(_ name: String) -> String { "\(prefix).event.\(name)" }

    /// Every event subject.
    package var events: String { "\(prefix).event.>" }

    /// The event name in an event subject; nil for another subject.
    func eventName(_ subject: String) -> String? {
        let head = "\(prefix).event."
        guard subject.hasPrefix(head), subject.count > head.count else { return nil }
        return String(subject.dropFirst(head.count))
    }

    /// Where an importer says it gave up on a call (the payload names the
    /// call's reply subject).
    package var cancel: String { "\(prefix).cancel" }

    /// Whether `prefix` is usable: tokens of letters, digits, `_` and `-`
    /// separated by dots (no wildcards, no spaces).
    static func isValidPrefix(_ prefix: String) -> Bool {
        let tokens = prefix.split(separator: ".", omittingEmptySubsequences: false)
        return !tokens.isEmpty && tokens.allSatisfy { token in
            !token.isEmpty && token.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
        }
    }
}
