import MediatorProtocol
import Testing

@testable import mediatorctl

/// What mediatorctl prints for people holds the daemon's and components'
/// strings escaped (issue 23, point 8).
@Suite struct OutputTests {
    @Test("The error line escapes the code and message, and the data's C1 controls as JSON escapes")
    func errorLineEscaped() {
        let error = MediatorError(
            ErrorCode("bad\u{1b}]0;pwned\u{7}"), "line\n\u{1b}[2Jforged", data: ["why": "\u{9b}31m\n"])
        #expect(Output.errorText(error) == #"mediatorctl: bad\x1b]0;pwned\x07: line\n\x1b[2Jforged"# + "\n" + #"{"why":"\u009b31m\n"}"# + "\n")
        #expect(Output.errorText(MediatorError(.timeout, "no reply")) == "mediatorctl: timeout: no reply\n")
    }
}
