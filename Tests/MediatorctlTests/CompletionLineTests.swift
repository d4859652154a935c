import Testing

@testable import mediatorctl

/// Reading the command line that shell completion of targets and actions gets.
@Suite struct CompletionLineTests {
    @Test("The socket and the target, wherever the options stand; option values are not the target")
    func socketAndTarget() throws {
        let line = try #require(CompletionLine.read(
            ["mediatorctl", "--socket", "/s.sock", "call", "--timeout", "5", "--oneway", "Kv", "se"]))
        #expect(try line.options.socketPath == "/s.sock")
        #expect(line.target == "Kv")
        #expect(CompletionLine.read(["mediatorctl", "stream", "Weather", "--name", "x", ""])?.target == "Weather")
        #expect(CompletionLine.read(["mediatorctl", "call", ""])?.target == "")
        #expect(CompletionLine.read(["mediatorctl", "call"])?.target == nil)
    }

    @Test("Names are offered sorted, once, by prefix")
    func matching() {
        #expect(DaemonCompletion.matching(["set", "get", "size", "set"], "s") == ["set", "size"])
        #expect(DaemonCompletion.matching(["b", "a"], "") == ["a", "b"])
    }
}
