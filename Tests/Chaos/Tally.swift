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
    /// Nested `mediator/open` calls answered `forbidden`, and those of them ~2,000 deep.
    var nestedOpensForbidden = 0
    var deepNestedOpensForbidden = 0
    /// Calls held for `ChaosOnDemand` and sent again with the same id; the
    /// `bad_request` answers with `"id": null` they got; their final answers.
    var heldDuplicatesSent = 0
    var duplicateIDsRefused = 0
    var heldDuplicatesAnswered = 0
    /// Calls held for `ChaosOnDemand` and cancelled; those answered `cancelled`.
    var heldCancelsSent = 0
    var heldCancelsCancelled = 0
    /// Connections that joined a pool twice; those refused `already_registered`
    /// the second time with one instance listed.
    var poolJoinProbes = 0
    var poolSecondJoinsRefused = 0
    /// Descriptors the clients sent and received (issue 26); `fdsRead` results
    /// whose descriptor came back holding the call's tag; partials that
    /// carried their descriptor.
    var descriptorsSent = 0
    var descriptorsReceived = 0
    var descriptorResults = 0
    var partialsWithDescriptors = 0

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
        nestedOpensForbidden += other.nestedOpensForbidden
        deepNestedOpensForbidden += other.deepNestedOpensForbidden
        heldDuplicatesSent += other.heldDuplicatesSent
        duplicateIDsRefused += other.duplicateIDsRefused
        heldDuplicatesAnswered += other.heldDuplicatesAnswered
        heldCancelsSent += other.heldCancelsSent
        heldCancelsCancelled += other.heldCancelsCancelled
        poolJoinProbes += other.poolJoinProbes
        poolSecondJoinsRefused += other.poolSecondJoinsRefused
        descriptorsSent += other.descriptorsSent
        descriptorsReceived += other.descriptorsReceived
        descriptorResults += other.descriptorResults
        partialsWithDescriptors += other.partialsWithDescriptors
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
