import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import MediatorClient
import MediatorProtocol

/// Where one `--fd SPEC` comes from: a number is one of the shell's open
/// descriptors (`--fd 3 3</etc/hosts`, `--fd 1` for our stdout), anything
/// else a path opened read-only (`./3` for a file named 3).
enum DescriptorSource: Hashable, Sendable, ExpressibleByArgument {
    case inherited(Int32)
    case path(String)

    init?(argument: String) {
        guard !argument.isEmpty else { return nil }
        if argument.allSatisfy(\.isASCII) && argument.allSatisfy(\.isNumber) {
            guard let number = Int32(argument) else { return nil }
            self = .inherited(number)
        } else {
            self = .path(argument)
        }
    }

    /// The descriptor to send: a duplicate of the shell's, or the file
    /// opened read-only. A failure is bad usage, naming the option.
    func open() throws -> OwnedFileDescriptor {
        do {
            switch self {
            case .inherited(let number): return try OwnedFileDescriptor(duplicating: number)
            case .path(let path): return try OwnedFileDescriptor(opening: path)
            }
        } catch {
            throw ValidationError("--fd \(spelling): \(error.message)")
        }
    }

    var spelling: String {
        switch self {
        case .inherited(let number): return String(number)
        case .path(let path): return path
        }
    }
}

/// The options of `call` and `stream` for descriptors (contract section 8):
/// what to send, and where the descriptors that come back go.
struct DescriptorOptions: ParsableArguments {
    @Option(name: .customLong("fd"), help: ArgumentHelp(
        "Send a descriptor with the call: a number is the shell's open descriptor (--fd 3 3<file, --fd 1 for our stdout), anything else a file opened read-only. Repeatable; params name the I-th --fd as {\"$fd\": I}.",
        valueName: "fd|path"))
    var fds: [DescriptorSource] = []

    @Option(name: .customLong("save-fds"), help: ArgumentHelp(
        "Write the content of each descriptor that comes back to DIR/fd-I (stream: DIR/fd-N-I for the N-th response) instead of stdout.",
        valueName: "dir"))
    var saveDirectory: String?

    @Flag(name: .customLong("fds-to-stdout"), help: "Write the content of descriptors that come back to stdout even when it is a terminal and the content is not plain text.")
    var toTerminal = false

    func validate() throws {
        if let saveDirectory {
            var status = stat()
            guard stat(saveDirectory, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
                throw ValidationError("--save-fds \(saveDirectory): not a directory")
            }
        }
        if toTerminal && saveDirectory != nil {
            throw ValidationError("--fds-to-stdout and --save-fds exclude each other")
        }
    }

    /// The descriptors to send, in the order of the `--fd` options.
    func open() throws -> [OwnedFileDescriptor] {
        try fds.map { try $0.open() }
    }

    /// Refuses params that name a descriptor no `--fd` gives (bad usage,
    /// before anything is sent).
    func check(_ params: JSONValue) throws {
        do {
            _ = try FileDescriptorReferences.indexes(in: params, fds: fds.count, root: "params")
        } catch {
            throw ValidationError("\(error.message) (each {\"$fd\": I} needs an I-th --fd)")
        }
    }
}
