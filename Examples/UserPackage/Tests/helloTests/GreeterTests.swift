// Tests of the Hello component without a running mediatord: MediatorTesting
// starts the daemon's own broker inside the test process, on a private
// socket, and the component and the generated client talk to it through the
// real protocol, checked against Hello.mediator.json as mediatord checks.
import MediatorClient
import MediatorTesting
import Testing

@testable import hello

@Suite struct GreeterTests {
    @Test func greetsByName() async throws {
        try await withTestDaemon { daemon in
            try await daemon.serving(Component(serving: Greeter())) {
                try await daemon.withClient { client in
                    let result = try await HelloClient(client).greet(GreetParams(name: "Ann"))
                    #expect(result.greeting == "Hello, Ann!")
                }
            }
        }
    }

    /// The interface says minLength 1: the daemon refuses an empty name
    /// before Greeter sees it.
    @Test func anEmptyNameIsRefused() async throws {
        try await withTestDaemon { daemon in
            try await daemon.serving(Component(serving: Greeter())) {
                try await daemon.withClient { client in
                    let error = await #expect(throws: MediatorError.self) {
                        try await HelloClient(client).greet(GreetParams(name: ""))
                    }
                    #expect(error?.code == .invalidParams)
                }
            }
        }
    }
}
