import ArgumentParser
import ChildProcesses

// mediator-chaos: the chaos run of issue 5. Under steady load from 20
// clients, components are killed and restarted at random; afterwards every
// call issued must have had exactly one final response, the daemon must
// still answer, and its memory must be back near where it started.
//
// One executable plays every role: `run` (the default) drives the test;
// `component` is the Swift component it starts itself and that the daemon
// starts from a manifest; `__exec` is a trampoline that makes a program we
// do not own (mediatord, python3) die with this process.

ExecTrampoline.runIfRequested()
await MediatorChaos.runChosenRole()

struct MediatorChaos: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mediator-chaos",
        abstract: "Kills and restarts components at random under load, then checks every call got exactly one answer.",
        subcommands: [ChaosRun.self, ComponentRole.self],
        defaultSubcommand: ChaosRun.self)
}
