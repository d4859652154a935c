import ArgumentParser
import Dispatch

/// The entry point: parses the command line, runs the daemon in a task, and
/// keeps the main thread waiting until the daemon is done.
///
/// Not `AsyncParsableCommand`'s own `main`, on purpose: an async main gives
/// the main thread to `dispatch_main`, which leaves it through
/// `pthread_exit`, and glibc unwinds the main thread's stack to do that. The
/// unwinder then reads half a MiB of the binary's unwind tables that
/// nothing else reads, and they stay in the daemon's memory for its whole
/// life (docs/benchmark.md, "Footprint"). Nothing in the daemon runs on the
/// main actor, so the main thread has nothing else to do.
@main
enum MediatordMain {
    static func main() {
        let parsed: any ParsableCommand
        do {
            parsed = try MediatorDaemonCommand.parseAsRoot()
        } catch {
            MediatorDaemonCommand.exit(withError: error)
        }
        // `help` and the like are synchronous commands of their own.
        guard let daemon = parsed as? MediatorDaemonCommand else {
            var command = parsed
            do { try command.run() } catch { MediatorDaemonCommand.exit(withError: error) }
            MediatorDaemonCommand.exit()
        }
        let finished = DispatchSemaphore(value: 0)
        // Detached: `main` is on the main actor, whose queue never runs while this thread waits.
        Task.detached {
            do { try await daemon.run() } catch { MediatorDaemonCommand.exit(withError: error) }
            finished.signal()
        }
        finished.wait()
    }
}
