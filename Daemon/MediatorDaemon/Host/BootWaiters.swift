import Synchronization

/// Who waits until every at-boot component registered or failed
/// (`mediatord --wait-for-components`); finished once, from the loop.
final class BootWaiters: Sendable {
    private enum State {
        case waiting([CheckedContinuation<Bool, Never>])
        case ended(Bool)
    }
    private let state = Mutex(State.waiting([]))

    /// Returns true once boot completed, false when the daemon stopped first.
    func wait() async -> Bool {
        await withCheckedContinuation { continuation in
            let ended: Bool? = state.withLock { state in
                switch state {
                case .ended(let completed): return completed
                case .waiting(var waiters):
                    waiters.append(continuation)
                    state = .waiting(waiters)
                    return nil
                }
            }
            if let ended { continuation.resume(returning: ended) }
        }
    }

    func finish() { end(true) }
    func fail() { end(false) }

    private func end(_ completed: Bool) {
        let waiters: [CheckedContinuation<Bool, Never>] = state.withLock { state in
            guard case .waiting(let waiters) = state else { return [] }
            state = .ended(completed)
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: completed) }
    }
}
