import Foundation
import MediatorCodegen
import MediatorProtocol
import Testing

/// Generation is linear in the size of the interface (issue 23, point 14):
/// each member that names a type looked it up by scanning every declaration,
/// so 10,000 actions took 444 s in a debug build (2 s once linear). The bound
/// is generous (a loaded machine), far below the quadratic time.
///
/// The two cases run one after the other, each on a thread of its own: a
/// long synchronous test on Swift's cooperative pool (two threads on a
/// 2-core machine) stalls every async test that runs beside it, and their
/// bounded waits then fail for no fault of theirs.
@Suite(.serialized) struct GenerationScaleTests {
    static let actions = 10_000
    static let bound: Duration = .seconds(60)

    static let interface: JSONValue = [
        "target": "Big",
        "actions": .array((0..<actions).map { index in
            [
                "name": .string("action\(index)"),
                "params": [
                    "type": "object", "required": ["text"],
                    "properties": ["text": ["type": "string"], "kind": ["type": "string", "enum": ["a", "b"]]],
                ],
                "result": ["type": "object", "properties": ["id": ["type": "integer"]]],
            ]
        }),
    ]

    @Test("10,000 actions generate well within the bound", arguments: ["swift", "python"])
    func manyActions(language: String) async throws {
        let (elapsed, source) = try await Self.onOwnThread {
            let interface = Self.interface
            var source = ""
            let elapsed = try ContinuousClock().measure {
                source = language == "swift"
                    ? try SwiftGenerator.generate(interface: interface, fileName: "Big.mediator.json")
                    : try PythonGenerator.generate(interface: interface, fileName: "Big.mediator.json")
            }
            return (elapsed, source)
        }
        #expect(elapsed < Self.bound, "\(language): \(elapsed) for \(Self.actions) actions")
        #expect(source.contains("Action9999Params"))
    }

    static func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }
}
