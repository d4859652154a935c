import MediatorProtocol
import Testing

@Suite struct SocketPathTests {
    @Test func userInstanceLivesUnderTheRuntimeDirectory() throws {
        let runtime = ["XDG_RUNTIME_DIR": "/run/user/1000"]
        #expect(try ProtocolConstants.socketPath(explicit: nil, environment: runtime, userInstance: true)
            == "/run/user/1000/mediator/mediator.sock")
        #expect(try ProtocolConstants.socketPath(explicit: nil, environment: runtime, userInstance: false)
            == ProtocolConstants.systemSocketPath)
        #expect(ProtocolConstants.socketPath(explicit: nil, environment: runtime) == ProtocolConstants.systemSocketPath)
    }

    @Test func userInstanceWithoutRuntimeDirectoryIsRefusedNotTheSystemOne() throws {
        for environment in [[:], ["XDG_RUNTIME_DIR": ""]] {
            #expect(throws: UserRuntimeDirectoryUnset.self) {
                try ProtocolConstants.socketPath(explicit: nil, environment: environment, userInstance: true)
            }
        }
        // A socket given needs no runtime folder.
        #expect(try ProtocolConstants.socketPath(explicit: "/tmp/m.sock", environment: [:], userInstance: true) == "/tmp/m.sock")
        #expect(try ProtocolConstants.socketPath(
            explicit: nil, environment: ["MEDIATOR_SOCKET": "/tmp/e.sock"], userInstance: true) == "/tmp/e.sock")
    }
}
