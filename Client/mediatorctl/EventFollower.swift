#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import MediatorClient
import MediatorProtocol

/// What `listen` and `monitor` share: connect, start a stream of events
/// within --timeout, print a line per event until interrupted, and fail
/// with `disconnected` if the daemon ends the stream.
func followEvents(
    _ options: GlobalOptions,
    start: @escaping @Sendable (MediatorClient) async throws -> MediatorStream<MediatorEvent>,
    line: (MediatorEvent) -> JSONValue,
    text: ((MediatorEvent) -> String)? = nil
) async throws {
    Signals.onTerminate { Glibc.exit(0) }
    let output = options.output
    let client: MediatorClient
    do {
        client = try await options.connect()
    } catch {
        throw output.fail(error)
    }
    let events: MediatorStream<MediatorEvent>
    do {
        events = try await Deadline.run(seconds: options.timeoutSeconds) { try await start(client) }
    } catch let error as MediatorError {
        throw output.fail(error)
    }
    do throws(MediatorError) {
        for try await event in events {
            if let text {
                Output.write(STDOUT_FILENO, text(event) + "\n")
            } else {
                output.line(line(event))
            }
        }
    } catch {
        // The connection was lost: the library says how.
        throw output.fail(error)
    }
    if Task.isCancelled { return }
    throw output.fail(MediatorError(.disconnected, "the daemon closed the connection"))
}
