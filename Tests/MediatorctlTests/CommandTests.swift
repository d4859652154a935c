import ArgumentParser
import Testing

@testable import mediatorctl

/// How the verbs parse (no daemon needed).
@Suite struct CommandTests {
    @Test(arguments: ["start", "stop", "status"])
    func targetVerbs(verb: String) throws {
        let command = try Mediatorctl.parseAsRoot([verb, "Weather", "--socket", "/tmp/x.sock"])
        switch verb {
        case "start": #expect((command as? Start)?.target.target == "Weather")
        case "stop": #expect((command as? Stop)?.target.target == "Weather")
        default: #expect((command as? Status)?.target.target == "Weather")
        }
        #expect(throws: (any Error).self) { try Mediatorctl.parseAsRoot([verb]) }
        #expect(throws: (any Error).self) { try Mediatorctl.parseAsRoot([verb, "1bad"]) }
        #expect(throws: (any Error).self) { try Mediatorctl.parseAsRoot([verb, "A", "B"]) }
    }

    @Test("Each new verb's help says what it does")
    func help() {
        #expect(Mediatorctl.helpMessage(for: Start.self).contains("Start a component from its manifest"))
        #expect(Mediatorctl.helpMessage(for: Stop.self).contains("Stop a component: the daemon sends it mediator.stop"))
        #expect(Mediatorctl.helpMessage(for: Status.self).contains("Show a target's state"))
        let root = Mediatorctl.helpMessage()
        for verb in ["start", "stop", "status"] { #expect(root.contains("  \(verb) ")) }
        #expect(Mediatorctl.helpMessage(for: List.self).contains("--table"))
    }

    /// A verb without `commandName` is named by `String(describing:)` on its
    /// type, a scan of every conformance record at each start of
    /// mediatorctl (docs/benchmark.md, "mediatorctl gains too").
    @Test("Every verb, at every level, gives its name")
    func verbsNameThemselves() {
        var unnamed: [String] = []
        var commands: [any ParsableCommand.Type] = [Mediatorctl.self]
        while let command = commands.popLast() {
            if command.configuration.commandName == nil { unnamed.append("\(command)") }
            commands.append(contentsOf: command.configuration.subcommands)
        }
        #expect(unnamed.isEmpty, "verbs without commandName: \(unnamed)")
    }

    @Test("list: --table forces the table; --json and --pretty force JSON; --table excludes them")
    func listFormat() throws {
        #expect(try (Mediatorctl.parseAsRoot(["list", "--table"]) as? List)?.asTable == true)
        #expect(try (Mediatorctl.parseAsRoot(["list", "--json"]) as? List)?.asTable == false)
        #expect(try (Mediatorctl.parseAsRoot(["--pretty", "list"]) as? List)?.asTable == false)
        #expect(throws: (any Error).self) { try Mediatorctl.parseAsRoot(["list", "--table", "--json"]) }
        #expect(throws: (any Error).self) { try Mediatorctl.parseAsRoot(["list", "--table", "--pretty"]) }
    }

    @Test("describe and status: --table forces the text; --json and --pretty force JSON; --lines of status")
    func describeAndStatusFormat() throws {
        #expect(try (Mediatorctl.parseAsRoot(["describe", "T", "--table"]) as? Describe)?.asTable == true)
        #expect(try (Mediatorctl.parseAsRoot(["describe", "T", "--json"]) as? Describe)?.asTable == false)
        #expect(try (Mediatorctl.parseAsRoot(["status", "T", "--table"]) as? Status)?.asTable == true)
        #expect(try (Mediatorctl.parseAsRoot(["--pretty", "status", "T"]) as? Status)?.asTable == false)
        #expect(try (Mediatorctl.parseAsRoot(["status", "T"]) as? Status)?.lines == Journal.defaultLines)
        #expect(try (Mediatorctl.parseAsRoot(["status", "T", "-n", "0"]) as? Status)?.lines == 0)
        #expect(throws: (any Error).self) { try Mediatorctl.parseAsRoot(["status", "T", "--lines", "-1"]) }
        #expect(throws: (any Error).self) { try Mediatorctl.parseAsRoot(["describe", "T", "--table", "--json"]) }
    }

    @Test("verify: paths, --manifest or --policy (not both); listed among the verbs, its exit status in the help")
    func verifyArguments() throws {
        let both = try #require(try Mediatorctl.parseAsRoot(["verify", "a.json", "components.d"]) as? Verify)
        #expect(both.paths == ["a.json", "components.d"] && both.kind == nil)
        #expect(try (Mediatorctl.parseAsRoot(["verify", "--manifest", "a"]) as? Verify)?.kind == .manifest)
        #expect(try (Mediatorctl.parseAsRoot(["verify", "a", "--policy"]) as? Verify)?.kind == .policy)
        #expect(throws: (any Error).self) { try Mediatorctl.parseAsRoot(["verify"]) }
        #expect(throws: (any Error).self) { try Mediatorctl.parseAsRoot(["verify", "a", "--manifest", "--policy"]) }
        #expect(Mediatorctl.helpMessage().contains("  verify "))
        #expect(Mediatorctl.helpMessage(for: Verify.self).contains("65  a problem in at least one file (EX_DATAERR)"))
    }
}

/// What `mediatorctl` prints of an error's data.
@Suite struct ErrorOutputTests {
    @Test func deliveredIsLeftOutOfThePrintedData() {
        #expect(Output.shownData(["delivered": false]) == nil)
        #expect(Output.shownData(["quota": "q", "delivered": true]) == ["quota": "q"])
        #expect(Output.shownData(["id": 3]) == ["id": 3])
        #expect(Output.shownData([1, 2]) == [1, 2])
        #expect(Output.shownData(nil) == nil)
    }
}
