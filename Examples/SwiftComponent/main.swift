// example-component: a Mediator component in Swift, on MediatorClient.
//
//   .build/debug/example-component [--socket PATH] [--target NAME] [--name NAME] [--pool]
//
// It serves the interface Weather.mediator.json as "Weather" (or --target):
// the actions forecast, echo, countdown, slow, crash and notFound. Its types,
// the protocol WeatherService and Component(serving:) are generated from that
// file at build time by the MediatorGenerator plugin (see Package.swift);
// WeatherServer.swift implements the protocol. It prints "ready" once
// registered (again after each re-registration), reconnects if the daemon restarts, and exits
// 0 on SIGTERM or SIGINT. The socket: --socket, else $MEDIATOR_SOCKET, else
// $XDG_RUNTIME_DIR/mediator/mediator.sock, else /run/mediator/mediator.sock.
import Dispatch
import Foundation
import MediatorClient
import MediatorProtocol

struct Options {
    var socket: String?
    var target = "Weather"
    var name: String? = "example-component"
    var mode = Component.Mode.exclusive

    static let usage = "usage: example-component [--socket PATH] [--target NAME] [--name NAME] [--pool]\n"

    init(_ arguments: [String]) {
        var words = arguments.makeIterator()
        func value(_ option: String) -> String {
            guard let value = words.next() else { Self.fail("\(option) needs a value") }
            return value
        }
        while let word = words.next() {
            switch word {
            case "--socket": socket = value(word)
            case "--target": target = value(word)
            case "--name": name = value(word)
            case "--pool": mode = .pool
            case "-h", "--help":
                FileHandle.standardOutput.write(Data(Self.usage.utf8))
                exit(0)
            default: Self.fail("unknown argument \(word)")
            }
        }
        guard NameRules.isValidTarget(target) else { Self.fail("invalid target name \(target)") }
    }

    /// The socket per the examples' rule (see Examples/README.md).
    var socketPath: String {
        if let socket { return socket }
        let environment = ProcessInfo.processInfo.environment
        // The user instance where there is one, else the system's.
        return (try? ProtocolConstants.socketPath(explicit: nil, environment: environment, userInstance: true))
            ?? ProtocolConstants.socketPath(explicit: nil, environment: environment)
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("example-component: \(message)\n\(usage)".utf8))
        exit(2)
    }
}

let options = Options(Array(CommandLine.arguments.dropFirst()))
var component: Component
do {
    component = try WeatherServer.component(target: options.target, mode: options.mode)
} catch {
    FileHandle.standardError.write(Data("example-component: \(error)\n".utf8))
    exit(1)
}
component.socketPath = options.socketPath
component.connectionName = options.name
component.onRegistered = { FileHandle.standardOutput.write(Data("ready\n".utf8)) }

let service = Task { [component] in
    try await component.run()
}

// SIGTERM and SIGINT cancel the service; it then unregisters by closing.
let signalSources = Shutdown.onSignals([SIGTERM, SIGINT]) { service.cancel() }

do {
    try await service.value
    withExtendedLifetime(signalSources) {}
    exit(0)
} catch {
    if service.isCancelled { exit(0) }
    FileHandle.standardError.write(Data("example-component: \(error)\n".utf8))
    exit(1)
}
