import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import MediatorClient
import MediatorProtocol

/// Shell completion of `call` and `stream`'s target and action from the
/// running daemon, as busctl completes names from the bus. Without a daemon
/// (or without an answer in time) there is simply nothing to offer.
enum DaemonCompletion {
    /// How long completion waits for the daemon: a shell must not hang on a
    /// stuck one, and a local answer takes milliseconds.
    static let bound: Double = 1

    /// The registered targets (and `mediator`) that start with `prefix`;
    /// not those whose manifest is invalid, which no call reaches.
    static func targets(words: [String], prefix: String) async -> [String] {
        guard let line = CompletionLine.read(words) else { return [] }
        let names = await ask(line) { client in
            let listing = try await client.list()
            return (listing["targets"]?.arrayValue ?? []).filter { $0["state"]?.stringValue != "invalid" }
                .compactMap { $0["target"]?.stringValue }
        }
        return matching(names + [ProtocolConstants.daemonTarget], prefix)
    }

    /// The actions of the target on the command line that start with `prefix`.
    static func actions(words: [String], prefix: String) async -> [String] {
        guard let line = CompletionLine.read(words), let target = line.target else { return [] }
        let names = await ask(line) { client in
            let described = try await client.describe(target)
            return (described["actions"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
        }
        return matching(names, prefix)
    }

    /// The names that start with `prefix`, sorted, without repeats.
    static func matching(_ names: [String], _ prefix: String) -> [String] {
        Set(names.filter { $0.hasPrefix(prefix) }).sorted()
    }

    /// `body`'s names from the daemon the command line names; none on any failure.
    private static func ask(
        _ line: CompletionLine, _ body: @Sendable @escaping (MediatorClient) async throws -> [String]
    ) async -> [String] {
        guard let path = try? line.options.socketPath else { return [] }
        return (try? await Deadline.run(seconds: bound) {
            let client = try await MediatorClient.connect(socketPath: path, name: line.options.name)
            let names = try? await body(client)
            await client.close()
            return names ?? []
        }) ?? []
    }
}

/// The words of a `call` or `stream` line being completed, read with the
/// verbs' own options, so that an option's value (`--timeout 5`) is not
/// taken for the target.
struct CompletionLine: ParsableArguments {
    @OptionGroup var options: GlobalOptions
    @OptionGroup var trace: TraceOptions
    @Argument(parsing: .allUnrecognized) var rest: [String] = []

    /// The verbs whose first argument is a target.
    static let verbs: Set<String> = ["call", "stream"]

    /// The line's words (the first is the program); nil when they do not parse.
    static func read(_ words: [String]) -> CompletionLine? {
        try? parse(Array(words.dropFirst()))
    }

    /// The word after the verb, skipping flags; nil before it is typed.
    var target: String? {
        let positionals = rest.filter { !$0.hasPrefix("-") }
        guard let verb = positionals.firstIndex(where: Self.verbs.contains), verb + 1 < positionals.count else {
            return nil
        }
        return positionals[verb + 1]
    }
}
