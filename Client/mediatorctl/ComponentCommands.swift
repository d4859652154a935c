import ArgumentParser
import MediatorClient
import MediatorProtocol

/// The TARGET word of `start`, `stop` and `status`.
struct TargetArgument: ParsableArguments {
    @Argument(help: "The target, as its manifest names it.")
    var target: String

    func validate() throws {
        guard NameRules.isValidTarget(target) else {
            throw ValidationError("invalid target name \"\(target)\": expected [A-Za-z][A-Za-z0-9_.-]*")
        }
    }
}

/// Calls one of the daemon's component actions (`start`, `stop`,
/// `status`) with `{"target": TARGET}` and prints its result.
private func callDaemon(_ action: String, _ options: GlobalOptions, _ target: TargetArgument) async throws {
    let output = options.output
    let params: JSONValue = ["target": .string(target.target)]
    let result = try await options.withClient(wait: .timeout) { client in
        try await client.call(ProtocolConstants.daemonTarget, action, params: params)
    }
    output.result(result)
}

struct Start: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "start",
        abstract: "Start a component from its manifest and wait until it has registered.",
        discussion: """
            Prints {"target": TARGET, "state": "running"} once the component has registered. \
            Errors (exit 1): target_not_found when no manifest names TARGET, activation_failed \
            (with the reason) when the component could not be started, exited or did not \
            register in time. --timeout bounds the wait (default 30 s).

            Example:
              mediatorctl start Weather
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var target: TargetArgument

    func run() async throws {
        try await callDaemon("start", options, target)
    }
}

struct Stop: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stop",
        abstract: "Stop a component: the daemon sends it mediator.stop, then SIGTERM after a grace period.",
        discussion: """
            Prints {"target": TARGET, "state": S} at once, S being "stopping" while the component \
            winds down, or "activatable" once it is gone (the daemon can start it again from its \
            manifest). Follow it with mediatorctl status TARGET.
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var target: TargetArgument

    func run() async throws {
        try await callDaemon("stop", options, target)
    }
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show a target's state, activation, instances, restarts, last exit and calls served.",
        discussion: """
            Prints the daemon's status of TARGET as JSON: "state" (running, activatable, starting, \
            stopping, failed), "activation" (exec or unit; absent for a component that registered \
            on its own), "description", "instances", "restarts", "last_exit" (for example "exited \
            with status 3"), "calls_served", "uptime_s" while running, and "manifest" (its file). \
            Exit 1 with target_not_found for a target neither registered nor in a manifest.
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var target: TargetArgument

    func run() async throws {
        try await callDaemon("status", options, target)
    }
}
