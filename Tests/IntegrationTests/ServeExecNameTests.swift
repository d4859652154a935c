import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// Issue 10, defect 7: `serve --exec` runs `PROGRAM ACTION`, so an action
    /// name that breaks the rules must never become argv, however the call
    /// reaches the component (a `notFound` call sent directly, or through a URL).
    @Suite("serve --exec and bad action names")
    struct ServeExecNames {
        /// `notFound` params that no action name rule allows.
        static let badNotFoundParams: [JSONValue] = [
            ["action": "../../x; rm -rf", "params": [:]],
            ["action": "-rf"],
            ["action": ""],
            ["action": .string(String(repeating: "a", count: 129))],
            ["action": 42],
            ["params": ["a": 1]],
            ["action": "ok\nrm -rf /"],
            ["action": "zap", "params": 5],
        ]

        @Test("a notFound call with a bad action never starts the program")
        func badNotFoundActionNeverBecomesArgv() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let argvLog = world.directory.file("argv.log")
            let script = world.directory.file("prog.sh")
            // Every run leaves its arguments behind, one line each.
            try """
                #!/bin/sh
                for argument in "$@"; do printf '%s\\n' "$argument" >> '\(argvLog)'; done
                echo '{"ran":true}'
                """.write(toFile: script, atomically: true, encoding: .utf8)
            chmod(script, 0o755)
            _ = try world.serve(daemon, target: "Prog", program: script, actions: [])  // the notFound catch-all
            let peer = try world.peer(daemon)

            // Today's daemon forwards these to the component, which refuses
            // them; a daemon that checks them first refuses them itself.
            let refusals: Set<String> = ["invalid_params", "forbidden"]
            for params in Self.badNotFoundParams {
                let answer = try peer.call("Prog", "notFound", params: params)
                #expect(refusals.contains(answer.errorCode ?? ""), "\(params.jsonText): \(answer.jsonText)")
            }
            // The same through a URL, its query item percent-encoded.
            let url = "app://Prog/notFound?action=..%2F..%2Fx%3B%20rm%20-rf"
            let opened = try peer.call("mediator", "open", params: ["url": .string(url)])
            #expect(refusals.contains(opened.errorCode ?? ""), "\(opened.jsonText)")
            #expect(!FileManager.default.fileExists(atPath: argvLog), "the program ran for a bad action")

            // The log does record runs: a good action shows up, alone.
            #expect(try peer.result("Prog", "good") == ["ran": true])
            let logged = try String(contentsOfFile: argvLog, encoding: .utf8)
            #expect(logged == "good\n")
        }
    }
}
