import ArgumentParser
import MediatorProtocol
import Testing

@testable import mediatorctl

/// `--fd`, `--save-fds`, `--fds-to-stdout`, and how received descriptors
/// are shown (no daemon needed).
@Suite struct DescriptorOptionsTests {
    @Test("--fd: a number is the shell's descriptor, anything else a path; in order, repeatable")
    func fdSpecs() throws {
        let command = try #require(try Mediatorctl.parseAsRoot(
            ["call", "Files", "put", "--fd", "3", "--fd", "/etc/hosts", "--fd", "./3", #"a:={"$fd": 0}"#]) as? Call)
        #expect(command.descriptors.fds == [.inherited(3), .path("/etc/hosts"), .path("./3")])
        #expect(command.call.params == [#"a:={"$fd": 0}"#])
        let stream = try #require(try Mediatorctl.parseAsRoot(["stream", "Files", "parts", "--fd", "0"]) as? StreamCommand)
        #expect(stream.descriptors.fds == [.inherited(0)])
        #expect(DescriptorSource(argument: "") == nil)
        #expect(DescriptorSource(argument: "99999999999") == nil)
        #expect(DescriptorSource(argument: "-1") == .path("-1"))
        #expect(DescriptorSource(argument: "٣") == .path("٣"))
    }

    @Test("--save-fds needs a directory; excludes --fds-to-stdout; --oneway takes neither --fd nor --save-fds")
    func conflicts() throws {
        let saved = try #require(try Mediatorctl.parseAsRoot(["call", "Files", "two", "--save-fds", "/tmp"]) as? Call)
        #expect(saved.descriptors.saveDirectory == "/tmp")
        #expect(throws: (any Error).self) { try Mediatorctl.parseAsRoot(["call", "Files", "two", "--save-fds", "/etc/hosts"]) }
        #expect(throws: (any Error).self) {
            try Mediatorctl.parseAsRoot(["call", "Files", "two", "--save-fds", "/tmp", "--fds-to-stdout"])
        }
        #expect(throws: (any Error).self) { try Mediatorctl.parseAsRoot(["call", "Files", "two", "--oneway", "--fd", "0"]) }
        #expect(throws: (any Error).self) { try Mediatorctl.parseAsRoot(["call", "Files", "two", "--oneway", "--save-fds", "/tmp"]) }
        #expect(throws: Never.self) { try Mediatorctl.parseAsRoot(["call", "Files", "two", "--oneway"]) }
    }

    @Test("params may name only the descriptors that --fd gives")
    func paramsReferences() throws {
        let two = try #require(try Mediatorctl.parseAsRoot(["call", "F", "a", "--fd", "0", "--fd", "1"]) as? Call)
        #expect(throws: Never.self) { try two.descriptors.check(["a": ["$fd": 0], "b": [["$fd": 1]]]) }
        #expect(throws: Never.self) { try two.descriptors.check([:]) }
        #expect(throws: ValidationError.self) { try two.descriptors.check(["a": ["$fd": 2]]) }
        let none = try #require(try Mediatorctl.parseAsRoot(["call", "F", "a"]) as? Call)
        #expect(throws: ValidationError.self) { try none.descriptors.check(["a": ["$fd": 0]]) }
    }

    @Test("Each {\"$fd\": I} of a result shows its link target; other values stay")
    func annotated() {
        let result: JSONValue = ["blob": ["$fd": 0], "list": [["$fd": 1], "x"], "other": ["$fd": 0, "k": 1], "far": ["$fd": 5]]
        let shown = ReceivedDescriptors.annotated(result, paths: ["/memfd:blob (deleted)", "pipe:[42]"])
        #expect(shown == [
            "blob": ["$fd": 0, "path": "/memfd:blob (deleted)"],
            "list": [["$fd": 1, "path": "pipe:[42]"], "x"],
            "other": ["$fd": 0, "k": 1],
            "far": ["$fd": 5],
        ])
        #expect(ReceivedDescriptors.annotated(["$fd": 1], paths: ["a", "b"]) == ["$fd": 1, "path": "b"])
    }

    @Test("Plain text goes to a terminal; controls, NUL and C1 in UTF-8 (also split across chunks) do not")
    func plainText() {
        /// Whether the chunks, in order, are plain text for one scanner.
        func plain(_ chunks: [UInt8]...) -> [Bool] {
            var scanner = PlainTextScanner()
            return chunks.map { scanner.isPlain($0) }
        }
        #expect(plain(Array("line one\n\ttab\r\n".utf8), Array("ünïcödé ✓ 日本".utf8)) == [true, true])
        #expect(plain([0x41, 0x00]) == [false])
        #expect(plain(Array("\u{1b}[2J".utf8)) == [false])
        #expect(plain([0x7F]) == [false])
        #expect(plain(Array("a\u{9b}2J".utf8)) == [false])
        #expect(plain([0x61, 0xC2], [0x9B]) == [true, false])
    }
}
