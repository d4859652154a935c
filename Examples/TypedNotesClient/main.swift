// example-typed-notes-client: a typed Swift client of the Python Notes
// component (Examples/python/notes_component.py).
//
//   .build/debug/example-typed-notes-client [--socket PATH] [TEXT [TAG...]]
//
// NotesClient, AddParams, Note and the other types are generated at build
// time from Notes.mediator.json (a symlink to Examples/python/Notes.mediator.json,
// the file the Python component's module is generated from) by the
// MediatorGenerator plugin. It adds a note with TEXT (default "hello from
// Swift") and the TAGs, reads it back, lists every note, and exits 0; on an
// error it prints "example-typed-notes-client: CODE: MESSAGE" on stderr and
// exits 1. The socket: --socket, else $MEDIATOR_SOCKET, else
// /run/mediator/mediator.sock.
import Foundation
import MediatorClient
import MediatorProtocol

var arguments = Array(CommandLine.arguments.dropFirst())
var socketPath = ProtocolConstants.socketPath(explicit: nil, environment: ProcessInfo.processInfo.environment)
if let index = arguments.firstIndex(of: "--socket") {
    guard index + 1 < arguments.count else {
        FileHandle.standardError.write(Data("example-typed-notes-client: --socket needs a path\n".utf8))
        exit(2)
    }
    socketPath = arguments[index + 1]
    arguments.removeSubrange(index...index + 1)
}
let text = arguments.first ?? "hello from Swift"
let tags = Array(arguments.dropFirst())

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

do {
    let connection = try await MediatorClient.connect(socketPath: socketPath, name: "example-typed-notes-client")
    let notes = NotesClient(connection)
    let added = try await notes.add(AddParams(tags: tags.isEmpty ? nil : tags, text: text))
    say("added note \(added.id)")
    let note: Note = try await notes.get(GetParams(id: .int(Int64(added.id))))
    say("note \(note.id): \(note.text) [\(note.tags.joined(separator: ", "))]")
    let all = try await notes.list()
    say("\(all.notes.count) notes: " + all.notes.map { "\($0.id) \($0.text)" }.joined(separator: "; "))
    await connection.close()
    exit(0)
} catch {
    FileHandle.standardError.write(Data("example-typed-notes-client: \(error)\n".utf8))
    exit(1)
}
