import Synchronization

/// Wakes one waiting task: the bridge's round waits on it until its
/// interval ends, news arrives, the settings change or the task is
/// cancelled, instead of looking every few milliseconds. A ring with
/// nobody waiting is kept for the next wait (at most one).
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    /// Wakes the waiter, or the next one to wait.
    func ring() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.rung = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns at a ring (one rung before counts), at `deadline`, or when
    /// the task is cancelled. One waiter at a time.
    func wait(until deadline: ContinuousClock.Instant) async {
        let timer = Task { [self] in
            guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return }
            ring()
        }
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.rung {
                        state.rung = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            ring()
        }
        // A second ring that came with this one (the timer's and news
        // together) is not kept: the caller looks at everything next.
        state.withLock { $0.rung = false }
    }
}
