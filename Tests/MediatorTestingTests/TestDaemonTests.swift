import MediatorClient
import MediatorProtocol
import MediatorTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The harness itself: the daemon's lifetime, and that a component's
/// mistakes show as mediatord would show them.
@Suite struct TestDaemonTests {
    static func echo(target: String = "Echo") -> Component {
        var component = Component(target: target)
        component.addAction("echo") { context in context.params }
        return component
    }

    @Test func theSocketExistsWhileTheBodyRunsAndIsGoneAfter() async throws {
        let path = try await withTestDaemon { daemon in
            #expect(access(daemon.socketPath, F_OK) == 0)
            try await daemon.withClient { client in try await client.ping() }
            return daemon.socketPath
        }
        #expect(access(path, F_OK) != 0)
        // Its private directory goes too.
        #expect(access(String(path.dropLast("/mediator.sock".count)), F_OK) != 0)
    }

    @Test func daemonsInParallelHaveTheirOwnSockets() async throws {
        try await withTestDaemon { first in
            try await withTestDaemon { second in
                #expect(first.socketPath != second.socketPath)
                try await first.serving(Self.echo()) {
                    try await second.withClient { client in
                        let error = await #expect(throws: MediatorError.self) {
                            try await client.call(target: "Echo", action: "echo")
                        }
                        #expect(error?.code == .targetNotFound)
                    }
                }
            }
        }
    }

    @Test func aServedComponentAnswersAndIsGoneAfterwards() async throws {
        try await withTestDaemon { daemon in
            try await daemon.withClient { client in
                try await daemon.serving(Self.echo()) {
                    let answer = try await client.call(target: "Echo", action: "echo", params: ["word": "hi"])
                    #expect(answer == ["word": "hi"])
                }
                let error = await #expect(throws: MediatorError.self) {
                    try await client.call(target: "Echo", action: "echo")
                }
                #expect(error?.code == .targetNotFound)
            }
        }
    }

    /// The daemon's registration checks run: a second exclusive component
    /// of the same target is refused, and serving throws its error.
    @Test func aSecondExclusiveComponentIsRefused() async throws {
        try await withTestDaemon { daemon in
            try await daemon.serving(Self.echo()) {
                let error = await #expect(throws: MediatorError.self) {
                    try await daemon.serving(Self.echo()) {}
                }
                #expect(error?.code == .alreadyRegistered)
            }
        }
    }

    /// A registration the daemon refuses (a target name outside its name
    /// rules) fails serving at once, with the daemon's `bad_request`.
    @Test func aRegistrationTheDaemonRefusesFailsServing() async throws {
        try await withTestDaemon { daemon in
            let error = await #expect(throws: MediatorError.self) {
                try await daemon.serving(Self.echo(target: "not a name")) {}
            }
            #expect(error?.code == .badRequest)
        }
    }

    @Test func theBodysValueAndErrorPassThrough() async throws {
        struct Expected: Error {}
        #expect(try await withTestDaemon { _ in 42 } == 42)
        await #expect(throws: Expected.self) {
            try await withTestDaemon { daemon in
                try await daemon.serving(Self.echo()) { throw Expected() }
            }
        }
    }
}
