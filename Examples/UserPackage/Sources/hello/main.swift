// hello serve        serves the target Hello (prints "ready" once registered)
// hello call NAME    calls Hello.greet and prints the greeting
//
// The types (HelloService, HelloClient, GreetParams, GreetResult) come from
// Hello.mediator.json through the MediatorGenerator plugin; Greeter.swift
// implements the service (Tests/helloTests test it). The socket is
// $MEDIATOR_SOCKET, else the user instance's, else the system's.
import Foundation
import MediatorClient

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("hello: \(message)\n".utf8))
    exit(1)
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "serve":
        var component = try Component(serving: Greeter())
        // Unbuffered: whoever started it may wait for this line.
        component.onRegistered = { FileHandle.standardOutput.write(Data("ready\n".utf8)) }
        try await component.run()
    case "call" where arguments.count == 2:
        let client = try await MediatorClient.connect(name: "hello")
        let result = try await HelloClient(client).greet(GreetParams(name: arguments[1]))
        print(result.greeting)
        await client.close()
    default:
        fail("usage: hello serve | hello call NAME")
    }
} catch let error as MediatorError {
    fail("\(error.code): \(error.message)")
} catch {
    fail("\(error)")
}
