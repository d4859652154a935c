import Foundation
import MediatorProtocol
import Testing

extension Integration {
    /// Issue 10: a line of only spaces or tabs is an empty line, which the
    /// contract says receivers ignore (it used to get `bad_request`).
    @Suite("Blank lines")
    struct BlankLines {
        @Test("the daemon ignores lines of spaces and tabs, with LF or CR LF")
        func daemonIgnoresBlankLines() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let peer = try world.peer(daemon)
            for line in [" ", "\t", " \t  \t", " \r", "\t\t\r", String(repeating: " ", count: 100)] {
                try peer.write(Array(line.utf8) + [0x0A])
            }
            // Nothing answered them: the ping's reply is the very next line.
            try peer.expectNothingPendingBeforePing()
            // Around a request on the same write, too.
            try peer.write(Array(" \t\r\n{\"id\":\"p\",\"target\":\"mediator\",\"action\":\"ping\"}\n\t \n".utf8))
            #expect(try peer.receive()["id"] == "p")
            try peer.expectNothingPendingBeforePing()
        }
    }
}
