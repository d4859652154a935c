import MediatorClient

/// The target Hello's actions: an implementation of the protocol
/// HelloService, generated from Hello.mediator.json.
struct Greeter: HelloService {
    func greet(_ params: GreetParams, context: CallContext) async throws -> GreetResult {
        GreetResult(greeting: "Hello, \(params.name)!")
    }
}
