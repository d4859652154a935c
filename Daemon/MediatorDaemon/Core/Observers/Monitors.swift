import MediatorProtocol

/// The connections that watch traffic (`mediator/monitor`), each with the
/// targets and events it asked to see. It owns this table alone; the broker
/// asks who wants a record and writes it (Broker+Monitor.swift). With no
/// monitor attached, routing pays one emptiness check (``isEmpty``).
struct Monitors {
    /// What one monitor wants: empty lists want everything.
    struct Filter: Equatable {
        var targets: [String] = []
        var events: [String] = []

        func wants(target: String) -> Bool {
            targets.isEmpty || targets.contains { NameRules.eventPattern($0, matches: target) }
        }

        func wants(event: String) -> Bool {
            events.isEmpty || events.contains { NameRules.eventPattern($0, matches: event) }
        }

        /// The filter of `mediator/monitor`'s params: `targets` and
        /// `events`, each an optional array of patterns (exact, prefix.* or *).
        static func parse(_ params: [String: JSONValue]) -> Result<Filter, MediatorError> {
            var filter = Filter()
            for (key, keyPath) in [("targets", \Filter.targets), ("events", \Filter.events)] {
                guard let value = params[key] else { continue }
                guard let items = value.arrayValue?.compactMap(\.stringValue), items.count == value.arrayValue?.count,
                    items.allSatisfy(NameRules.isValidEventPattern)
                else {
                    return .failure(MediatorError(.badRequest, "\"\(key)\" must be an array of patterns (exact, prefix.* or *)"))
                }
                filter[keyPath: keyPath] = items
            }
            return .success(filter)
        }
    }

    private(set) var filters: [ConnectionID: Filter] = [:]

    var isEmpty: Bool { filters.isEmpty }

    /// Attaches a monitor, or replaces what an attached one wants.
    mutating func attach(_ connection: ConnectionID, _ filter: Filter) {
        filters[connection] = filter
    }

    mutating func detach(_ connection: ConnectionID) {
        filters[connection] = nil
    }

    /// The monitors that want a record of traffic about `target` (a call)
    /// or `event`, other than the record's own two peers, which saw it.
    func wanting(target: String?, event: String?, from: ConnectionID, to: ConnectionID?)
        -> LazyMapSequence<LazyFilterSequence<[ConnectionID: Filter]>, ConnectionID>
    {
        filters.lazy.filter { connection, filter in
            guard connection != from, connection != to else { return false }
            return target.map(filter.wants(target:)) ?? event.map(filter.wants(event:)) ?? true
        }.map(\.key)
    }

    /// Rebuilds the table when a burst left it mostly empty; says whether it did.
    mutating func shrinkIfSparse() -> Bool {
        filters.shrinkIfSparse()
    }
}
