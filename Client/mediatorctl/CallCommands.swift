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
              mediatorctl call Archive store --fd /var/log/app.log 'file:={"$fd": 0}'
              mediatorctl call Logs attach --fd 3 'out:={"$fd": 0}' 3>>app.log

            File descriptors: each --fd sends one with the call, in order; the params name \
            the I-th as {"$fd": I}. A number is the shell's open descriptor (duplicated), \
            anything else a file opened read-only (./3 for a file named 3). Descriptors \
            that come back are shown in the result as {"$fd": I, "path": "..."} (the \
            /proc/self/fd link); then the content of each (a file or memfd from its start, \
            a pipe or socket to its end) follows the result on stdout, or goes to \
            DIR/fd-I with --save-fds DIR, or nowhere with --json. On a terminal, content \
            that is not plain text is refused (exit status 1) unless --fds-to-stdout.
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var call: CallArguments

    @Flag(name: .long, help: "Send the call without waiting for a reply (no id; prints nothing).")
    var oneway = false

    @OptionGroup var descriptors: DescriptorOptions
    @OptionGroup var trace: TraceOptions

    func validate() throws {
        if oneway && !(descriptors.fds.isEmpty && descriptors.saveDirectory == nil) {
            throw ValidationError("--oneway sends no descriptors and receives none (--fd, --save-fds)")
        }
    }

    func run() async throws {
        let (call, target, action, timeout, oneway) = (call, call.target, call.action, options.timeoutDuration, oneway)
        let (output, options, descriptors) = (options.output, options, descriptors)
        let sent = try descriptors.open()
        // Every call but a oneway one says "fds": true: whether the answer
        // brings descriptors is the component's choice, and a caller that
        // did not say it would get fds_not_supported after the work was done.
        let reply: MediatorReply? = try await trace.run {
            try await options.withClient(wait: .backstop, fds: !oneway) { client in
                let params = try await call.paramsValue(using: client)
                try descriptors.check(params)
                if oneway {
                    try await client.send(target: target, action: action, params: params)
                    return nil
                }
                return try await client.call(target: target, action: action, params: params, descriptors: sent, timeout: timeout)
            }
        }
        if let reply {
            try ReceivedDescriptors(options: descriptors, output: output, jsonOnly: options.json).deliver(reply)
        }
    }
}

struct StreamCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stream",
        abstract: "Call an action that may reply several times (\"more\"); print each result on a line.",
        discussion: """
            The timeout starts again with each partial result. --fd, --save-fds and \
            --fds-to-stdout as for call; the descriptors of the N-th answer (from 0) are \
            saved as DIR/fd-N-I, and their content follows that answer's line.
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var call: CallArguments
    @OptionGroup var descriptors: DescriptorOptions
    @OptionGroup var trace: TraceOptions

    func run() async throws {
        let (call, target, action, timeout) = (call, call.target, call.action, options.timeoutDuration)
        let (output, options, descriptors) = (options.output, options, descriptors)
        let sent = try descriptors.open()
        let received = ReceivedDescriptors(options: descriptors, output: output, jsonOnly: options.json)
        try await trace.run { try await options.withClient(wait: .unlimited, fds: true) { client in
            let params = try await call.paramsValue(using: client)
            try descriptors.check(params)
            do {
                var response = 0
                for try await reply in client.stream(target: target, action: action, params: params, descriptors: sent, timeout: timeout) {
                    try received.deliver(reply, response: response, line: true)
                    response += 1
                }
            } catch let error as MediatorError {
                throw error
            } catch let error as ExitCode {
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
