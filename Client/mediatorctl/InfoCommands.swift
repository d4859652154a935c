import ArgumentParser
import MediatorClient
import MediatorProtocol

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the registered targets, their actions and instances.")

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let output = options.output
        let result = try await options.withClient(wait: .timeout) { client in try await client.list() }
        output.result(result)
    }
}

struct Describe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a target's action specs (params and result schemas) and instances.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The target.")
    var target: String

    func validate() throws {
        guard NameRules.isValidTarget(target) else {
            throw ValidationError("invalid target name \"\(target)\": expected [A-Za-z][A-Za-z0-9_.-]*")
        }
    }

    func run() async throws {
        let (output, target) = (options.output, target)
        let result = try await options.withClient(wait: .timeout) { client in try await client.describe(target) }
        output.result(result)
    }
}

struct Ping: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check that the daemon answers; prints nothing, exits 0 if it does (69 if unreachable).")

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try await options.withClient(wait: .timeout) { client in try await client.ping() }
    }
}
