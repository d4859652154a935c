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
    output.result(try await askDaemon(action, options, target))
}

/// The result of one of the daemon's component actions for TARGET.
private func askDaemon(_ action: String, _ options: GlobalOptions, _ target: TargetArgument) async throws -> JSONValue {
    let params: JSONValue = ["target": .string(target.target)]
    return try await options.withClient(wait: .timeout) { client in
        try await client.call(target: ProtocolConstants.daemonTarget, action: action, params: params)
    }
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

struct Status: AsyncParsableCommand, PeopleViewVerb {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show a target's state, activation, instances, restarts, last exit and calls served.",
        discussion: """
            On a terminal, like systemctl status: a bullet (● running, starting or stopping; ○ not \
            running; × failed) with the target and its description, then State (and the \
            activation: exec, unit, or registered itself), PID(s), Since (when it registered, and \
            when its process started), Restarts, Last exit, Manifest, Unit, Held calls and Calls; \
            for a component its manifest starts as a systemd unit, the unit's last journal lines \
            (journalctl -u UNIT -n LINES --no-pager -o short-iso --quiet, with --user for \
            mediatorctl --user; left out when journalctl is missing or fails). The output of a component the \
            daemon starts itself is in the daemon's journal (journalctl -u mediatord \
            MEDIATOR_TARGET=TARGET) and is not shown. Otherwise (stdout not a terminal, or --json \
            or --pretty) the daemon's status as JSON: "state", "activation", "description", \
            "instances", "pids", "restarts", "last_exit" (for example "exited with status 3"), \
            "calls_served", "held_calls", "uptime_s" while running, "process_uptime_s", \
            "manifest" and "unit"; --table gives the text anywhere. Exit 1 with target_not_found \
            for a target neither registered nor in a manifest.
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var view: PeopleView
    @OptionGroup var target: TargetArgument

    @Option(name: [.customShort("n"), .long], help: ArgumentHelp(
        "How many of the unit's journal lines to show (0: none).", valueName: "count"))
    var lines = Journal.defaultLines

    func validate() throws {
        try view.validate(with: options)
        if lines < 0 { throw ValidationError("--lines must be 0 or more") }
    }

    func run() async throws {
        guard asTable else { return try await callDaemon("status", options, target) }
        let status = try await askDaemon("status", options, target)
        var journal: [String] = []
        if let unit = status["unit"]?.stringValue {
            journal = await Journal.lines(unit: unit, count: lines, user: options.user, within: options.timeoutSeconds)
        }
        let now = Double(Date().timeIntervalSince1970)
        Output.write(STDOUT_FILENO, StatusText.render(status, journal: journal, now: now, width: Terminal.columns(STDOUT_FILENO)))
    }
}

struct DaemonReexec: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon-reexec",
        abstract: "Re-execute mediatord's binary in place, keeping every connection, call and registration.",
        discussion: """
            Like systemctl daemon-reexec: the daemon hands its sockets and state to a new image \
            of its binary as installed now (an upgrade runs the new one), under the same pid, so \
            its components stay its children. Prints {"pid", "version", "reexecs"} once the new \
            image serves. Allowed to root and the daemon's own user (policy: mediator/reexec). \
            SIGUSR2 to mediatord does the same without a client.
            """
    )

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let output = options.output
        output.result(try await options.withClient(wait: .timeout) { client in
            try await client.call(target: ProtocolConstants.daemonTarget, action: "reexec", params: [:])
        })
    }
}
