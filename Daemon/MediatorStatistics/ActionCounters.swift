import MediatorProtocol

/// What happened to the calls of one target's action since the daemon
/// started. Calls in flight and held are not kept here: they are read from
/// the broker's own state when a snapshot is taken.
package struct ActionCounters: Sendable, Equatable {
    /// Distinct error codes kept per action; a component inventing more
    /// has the rest counted under ``otherCode``.
    static let maxErrorCodes = 16
    package static let otherCode = "other"
    /// The longest code counted by name. A component's code travels to its
    /// caller unchanged, but what the statistics keep for the daemon's
    /// lifetime must stay small: a longer code counts as ``otherCode``.
    static let maxCodeBytes = 64

    package let target: String
    package let action: String
    /// Calls forwarded (oneway ones too), and calls held for a starting
    /// component that ended before they could be (``BrokerStatistics/heldCallEnded(_:code:)``).
    package internal(set) var calls = 0
    /// Final answers that were results.
    package internal(set) var ok = 0
    /// Final answers that were errors, by code (from the component or the daemon).
    package internal(set) var errors: [String: Int] = [:]
    package internal(set) var timeouts = 0
    /// Calls the caller cancelled (`mediator/cancel`).
    package internal(set) var cancels = 0
    /// Calls whose caller disconnected before the final answer.
    package internal(set) var callerGone = 0
    /// Calls that asked for partial results (`more`), and the partials passed on.
    package internal(set) var streams = 0
    package internal(set) var partials = 0
    /// From forwarding to the final answer.
    package internal(set) var latency = LatencyHistogram()

    package init(target: String, action: String) {
        self.target = target
        self.action = action
    }

    /// Counts as a snapshot of the daemon's state carried them, without latencies.
    package init(
        target: String, action: String, calls: Int, ok: Int, errors: [String: Int], timeouts: Int, cancels: Int,
        callerGone: Int, streams: Int, partials: Int
    ) {
        self.init(target: target, action: action)
        (self.calls, self.ok, self.errors, self.timeouts) = (calls, ok, errors, timeouts)
        (self.cancels, self.callerGone, self.streams, self.partials) = (cancels, callerGone, streams, partials)
    }

    var errorCount: Int { errors.values.reduce(0, +) }

    /// `code` when the statistics may keep it by name: 1 to ``maxCodeBytes``
    /// bytes of `[A-Za-z_][A-Za-z0-9_.-]*` (the action-name rule, which the
    /// daemon's own snake_case codes follow); else ``otherCode``.
    package static func countedCode(_ code: String) -> String {
        code.utf8.count <= maxCodeBytes && NameRules.isValidAction(code) ? code : otherCode
    }

    mutating func countError(_ code: String) {
        let code = Self.countedCode(code)
        if errors[code] != nil || errors.count < Self.maxErrorCodes {
            errors[code, default: 0] += 1
        } else {
            errors[Self.otherCode, default: 0] += 1
        }
    }
}
