/// What the clients saw, added up.
struct Tally {
    var issued = 0
    var issuedByKind: [CallKind: Int] = [:]
    var results = 0
    var errorsByCode: [String: Int] = [:]
    /// `continues` responses.
    var partials = 0
    /// Streams whose final answer was a result after at least one partial.
    var streamsCompleted = 0
    /// Calls that got partials and then an error (a component killed mid-stream).
    var errorsAfterPartials = 0
    /// Component errors passed through unchanged (`chaos_failure`).
    var passedThroughErrors = 0
    var cancelsSent = 0
    var eventsReceived = 0

    var finals: Int { results + errorsByCode.values.reduce(0, +) }

    mutating func add(_ other: Tally) {
        issued += other.issued
        issuedByKind.merge(other.issuedByKind, uniquingKeysWith: +)
        results += other.results
        errorsByCode.merge(other.errorsByCode, uniquingKeysWith: +)
        partials += other.partials
        streamsCompleted += other.streamsCompleted
        errorsAfterPartials += other.errorsAfterPartials
        passedThroughErrors += other.passedThroughErrors
        cancelsSent += other.cancelsSent
        eventsReceived += other.eventsReceived
    }
}

/// Every breach of the run's rules, by category, with the first few
/// examples of each.
final class Violations {
    private(set) var counts: [String: Int] = [:]
    private(set) var examples: [String: [String]] = [:]
    private var order: [String] = []
    static let examplesKept = 5

    func add(_ category: String, _ detail: String) {
        if counts[category] == nil { order.append(category) }
        counts[category, default: 0] += 1
        if examples[category, default: []].count < Self.examplesKept { examples[category, default: []].append(detail) }
    }

    var isEmpty: Bool { counts.isEmpty }
    var total: Int { counts.values.reduce(0, +) }

    /// Categories in the order they first happened.
    var categories: [String] { order }
}
