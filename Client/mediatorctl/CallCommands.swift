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

/// The target, action and params words that `call` and `stream` share.
struct CallArguments: ParsableArguments {
    @Argument(help: "The target to call (a registered component, or mediator for the daemon).",
              completion: .custom { words, _, prefix in await DaemonCompletion.targets(words: words, prefix: prefix) })
    var target: String

    @Argument(help: "The action to call.",
              completion: .custom { words, _, prefix in await DaemonCompletion.actions(words: words, prefix: prefix) })
    var action: String

    @Argument(help: ArgumentHelp(
        "The params: one JSON object, key=value words (typed by the action's params schema; without one, JSON when they parse, else strings), key:=json words, or - to read a JSON object from stdin.",
        valueName: "params"))
    var params: [String] = []

    func validate() throws {
        guard NameRules.isValidTarget(target) else {
            throw ValidationError("invalid target name \"\(target)\": expected [A-Za-z][A-Za-z0-9_.-]*")
        }
        guard NameRules.isValidAction(action) else {
            throw ValidationError("invalid action name \"\(action)\": expected [A-Za-z_][A-Za-z0-9_.-]*")
        }
        if params != ["-"] { _ = try paramsValue() }
    }

    /// The params; `-` alone reads the JSON object from stdin (for params
    /// too large for the command line).
    func paramsValue() throws -> JSONValue {
        do {
            if params == ["-"] {
                let text = String(decoding: Output.readAll(STDIN_FILENO), as: UTF8.self)
                let value = try ParamsParser.json(text)
                guard value.objectValue != nil else { throw ParamsParser.Failure("params on stdin must be a JSON object") }
                return value
            }
            return try ParamsParser.params(params)
        } catch let error as ParamsParser.Failure {
            throw ValidationError(error.message)
        }
    }

    /// The params, with `key=value` words typed by the action's declared
    /// `params` schema. That costs a `describe`, so it is asked only for
    /// `key=value` words; without an answer, the values are guessed.
    func paramsValue(using client: MediatorClient) async throws -> JSONValue {
        guard params != ["-"], ParamsParser.isKeyValue(params) else { return try paramsValue() }
        let schema = await paramsSchema(using: client)
        do {
            return try ParamsParser.params(params, schema: schema)
        } catch {
            throw ValidationError(error.message)
        }
    }

    /// The action's `params` schema from `describe`; nil when the target or
    /// action cannot be described or declares none.
    private func paramsSchema(using client: MediatorClient) async -> Schema? {
        guard let described = try? await client.describe(target),
            let spec = described["actions"]?.arrayValue?.first(where: { $0["name"]?.stringValue == action })
        else { return nil }
        return (try? ActionSpec(json: spec))?.params
    }
}

struct Call: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: "Call an action and print its result.",
        discussion: """
            Examples:
              mediatorctl call Notes add text=hi tags='["a","b"]'
              mediatorctl call Weather forecast '{"city": "Oslo", "days": 3}'
              mediatorctl call mediator list
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var call: CallArguments

    @Flag(name: .long, help: "Send the call without waiting for a reply (no id; prints nothing).")
    var oneway = false

    @OptionGroup var trace: TraceOptions

    func run() async throws {
        let (call, target, action, timeout, oneway) = (call, call.target, call.action, options.timeoutDuration, oneway)
        let (output, options) = (options.output, options)
        let result: JSONValue? = try await trace.run {
            try await options.withClient(wait: .backstop) { client in
                let params = try await call.paramsValue(using: client)
                if oneway {
                    try await client.send(target: target, action: action, params: params)
                    return nil
                }
                return try await client.call(target: target, action: action, params: params, timeout: timeout)
            }
        }
        if let result { output.result(result) }
    }
}

struct StreamCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stream",
        abstract: "Call an action that may reply several times (\"more\"); print each result on a line.",
        discussion: "The timeout starts again with each partial result."
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var call: CallArguments
    @OptionGroup var trace: TraceOptions

    func run() async throws {
        let (call, target, action, timeout) = (call, call.target, call.action, options.timeoutDuration)
        let (output, options) = (options.output, options)
        try await trace.run { try await options.withClient(wait: .unlimited) { client in
            let params = try await call.paramsValue(using: client)
            do {
                for try await value in client.stream(target: target, action: action, params: params, timeout: timeout) {
                    output.line(value)
                }
            } catch let error as MediatorError {
                throw error
            } catch is CancellationError {
                throw MediatorError(.cancelled, "the call was cancelled")
            } catch {
                throw MediatorError(.internal, "\(error)")
            }
        } }
    }
}

struct Open: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Call the action a URL names (SCHEME://TARGET/ACTION?k=v) and print its result.",
        discussion: "Query items become string params. Actions named native* or declared \"url\": false are refused."
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The URL, for example app://Notes/add?text=hi.")
    var url: String

    func run() async throws {
        let (url, timeout) = (url, options.timeoutDuration)
        let output = options.output
        let result = try await options.withClient(wait: .backstop) { client in
            try await client.open(url, timeout: timeout)
        }
        output.result(result)
    }
}
