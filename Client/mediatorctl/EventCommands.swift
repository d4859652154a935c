import ArgumentParser
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

struct Listen: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Subscribe to events and print each as a line {\"event\": ..., \"data\": ...}.",
        discussion: """
            Patterns: an exact event name, a prefix ending in .* (user.* matches user.login), \
            or * for all (the default). Runs until interrupted (exit 0) or until the daemon \
            goes away (exit 69). Lines are compact JSON unless --pretty is given.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "Event patterns (default: *).")
    var patterns: [String] = []

    func validate() throws {
        for pattern in patterns where !NameRules.isValidEventPattern(pattern) {
            throw ValidationError("invalid event pattern \"\(pattern)\"")
        }
    }

    func run() async throws {
        let patterns = patterns.isEmpty ? ["*"] : patterns
        try await followEvents(options, start: { try await $0.events(patterns) }, line: { event in
            var line: [String: JSONValue] = ["event": .string(event.name)]
            if let data = event.data { line["data"] = data }
            return .object(line)
        })
    }
}

struct Emit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "emit",
        abstract: "Publish an event; prints {\"delivered\": N}, the number of connections that got it.",
        discussion: """
            The data is one JSON value ('{"user": "ann"}', 5, '"text"'), or key=value words \
            as for call. Names that begin with mediator. are the daemon's own (forbidden).
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The event name.")
    var event: String

    @Argument(help: ArgumentHelp("The event's data: a JSON value or key=value words.", valueName: "data"))
    var data: [String] = []

    func validate() throws {
        guard NameRules.isValidEvent(event) else {
            throw ValidationError("invalid event name \"\(event)\": expected [A-Za-z][A-Za-z0-9_.-]*")
        }
        _ = try dataValue()
    }

    func dataValue() throws -> JSONValue? {
        do {
            return try ParamsParser.data(data)
        } catch {
            throw ValidationError(error.message)
        }
    }

    func run() async throws {
        let (event, data) = (event, try dataValue())
        let output = options.output
        let delivered = try await options.withClient(wait: .timeout) { client in try await client.publish(event, data: data) }
        output.result(["delivered": .int(Int64(delivered))])
    }
}
