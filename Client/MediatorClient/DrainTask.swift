import NIOConcurrencyHelpers

/// The graceful drain of one connection, started at most once; cancelled
/// when the connection ends some other way.
final class DrainTask: Sendable {
    private let task = NIOLockedValueBox<(task: Task<Void, Never>?, started: Bool)>((nil, false))

    var started: Bool { task.withLockedValue { $0.started } }

    func start(_ body: @escaping @Sendable () async -> Void) {
        task.withLockedValue { state in
            guard !state.started else { return }
            state.started = true
            state.task = Task(operation: body)
        }
    }

    func cancel() {
        task.withLockedValue { $0.task }?.cancel()
    }
}
