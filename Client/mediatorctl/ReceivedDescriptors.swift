import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import MediatorClient
import MediatorProtocol

/// What `call` and `stream` do with an answer that brings descriptors: the
/// result is printed with each `{"$fd": I}` showing what the I-th
/// descriptor is (`{"$fd": 0, "path": "/memfd:blob (deleted)"}`, its
/// `/proc/self/fd` link); then the content of each descriptor goes to
/// stdout, or to `--save-fds DIR`, or nowhere with `--json`.
struct ReceivedDescriptors {
    /// The member added beside `$fd` in the printed result.
    static let pathMember = "path"
    /// How much is read or written at once.
    static let chunkBytes = 64 * 1024

    let options: DescriptorOptions
    let output: Output
    /// `--json`: the result alone, for programs; nothing else on stdout.
    let jsonOnly: Bool

    /// Prints `reply` (as one line of a stream when `line`), then delivers
    /// its descriptors' content. `response` numbers a stream's answers
    /// (nil for `call`), for the names of saved files. Failing to deliver
    /// a content is exit status 1, after the rest was tried.
    func deliver(_ reply: MediatorReply, response: Int? = nil, line: Bool = false) throws {
        let shown = reply.descriptors.isEmpty
            ? reply.result : Self.annotated(reply.result, paths: reply.descriptors.map(Self.linkTarget))
        if line { output.line(shown) } else { output.result(shown) }
        var failed = false
        for (index, descriptor) in reply.descriptors.enumerated() {
            if let directory = options.saveDirectory {
                let name = response.map { "fd-\($0)-\(index)" } ?? "fd-\(index)"
                failed = !save(descriptor, index: index, to: directory + "/" + name) || failed
            } else if !jsonOnly {
                failed = !print(descriptor, index: index) || failed
            }
            descriptor.close()
        }
        if failed { throw ExitCode(Output.Status.error) }
    }

    /// `value` with each `{"$fd": I}` that names one of `paths` given the
    /// member `path`: `{"$fd": I, "path": paths[I]}`. Pure.
    static func annotated(_ value: JSONValue, paths: [String]) -> JSONValue {
        switch value {
        case .object(let members):
            if let index = DescriptorList.referencedIndex(value) {
                guard paths.indices.contains(index) else { return value }
                return .object([FileDescriptorReferences.member: .int(Int64(index)), pathMember: .string(paths[index])])
            }
            return .object(members.mapValues { annotated($0, paths: paths) })
        case .array(let items):
            return .array(items.map { annotated($0, paths: paths) })
        default:
            return value
        }
    }

    /// What `/proc/self/fd/N` links to: a path, `pipe:[123]`, `/memfd:NAME (deleted)`.
    static func linkTarget(_ descriptor: OwnedFileDescriptor) -> String {
        guard let raw = descriptor.rawValue else { return "" }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/fd/\(raw)", &buffer, buffer.count - 1)
        guard count >= 0 else { return "" }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Writes the content to stdout; on a terminal only while it is plain
    /// text, unless `--fds-to-stdout`.
    private func print(_ descriptor: OwnedFileDescriptor, index: Int) -> Bool {
        let checked = isatty(STDOUT_FILENO) != 0 && !options.toTerminal
        var scanner = PlainTextScanner()
        let outcome = Self.copy(descriptor) { chunk in
            if checked && !scanner.isPlain(chunk) {
                return .refused("descriptor \(index) is not plain text: not written to the terminal (use --save-fds DIR, or --fds-to-stdout)")
            }
            return Output.write(STDOUT_FILENO, bytes: chunk)
                ? .written : .failed("cannot write stdout: \(String(cString: strerror(errno)))")
        }
        return report(outcome, index: index)
    }

    /// Writes the content to `path` (created, or truncated; mode 0600: a
    /// component may hand over what others may not read).
    private func save(_ descriptor: OwnedFileDescriptor, index: Int, to path: String) -> Bool {
        let file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard file >= 0 else {
            Output.log("--save-fds: cannot create \(path): \(String(cString: strerror(errno)))")
            return false
        }
        defer { close(file) }
        let outcome = Self.copy(descriptor) { chunk in
            Output.write(file, bytes: chunk) ? .written : .failed("cannot write \(path): \(String(cString: strerror(errno)))")
        }
        return report(outcome, index: index)
    }

    private func report(_ outcome: Copy, index: Int) -> Bool {
        switch outcome {
        case .written: return true
        case .skipped(let kind):
            Output.log("descriptor \(index) is \(kind): its content is not read")
            return true
        case .refused(let reason):
            Output.log(reason)
            return false
        case .failed(let reason):
            Output.log("descriptor \(index): \(reason)")
            return false
        }
    }

    /// How copying a descriptor's content ended.
    enum Copy: Equatable {
        case written
        /// Not a file, memfd, pipe or socket (a directory, a device that
        /// may never end): nothing read.
        case skipped(String)
        /// The sink refused a chunk.
        case refused(String)
        /// Reading or writing failed: where, and why.
        case failed(String)
    }

    /// Gives `sink` the content of `descriptor` in chunks: a sealed memfd
    /// mapped, another regular file (an unsealed memfd included) read from
    /// its start, whatever its offset, a pipe or socket read to its end.
    static func copy(_ descriptor: OwnedFileDescriptor, into sink: (UnsafeRawBufferPointer) -> Copy) -> Copy {
        guard let raw = descriptor.rawValue else { return .failed("closed") }
        var status = stat()
        guard fstat(raw, &status) == 0 else { return .failed("fstat: \(String(cString: strerror(errno)))") }
        let kind = status.st_mode & S_IFMT
        if kind == S_IFREG, let memory = try? MappedMemory(mapping: descriptor) {
            return memory.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let end = min(offset + chunkBytes, bytes.count)
                    let outcome = sink(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
                    guard outcome == .written else { return outcome }
                    offset = end
                }
                return .written
            }
        }
        let positioned = kind == S_IFREG
        guard positioned || kind == S_IFIFO || kind == S_IFSOCK else { return .skipped(Self.kindName(kind)) }
        var chunk = [UInt8](repeating: 0, count: chunkBytes)
        var offset: off_t = 0
        while true {
            let count = chunk.withUnsafeMutableBytes { buffer in
                positioned ? pread(raw, buffer.baseAddress, buffer.count, offset) : read(raw, buffer.baseAddress, buffer.count)
            }
            if count < 0 {
                if errno == EINTR { continue }
                return .failed("read: \(String(cString: strerror(errno)))")
            }
            if count == 0 { return .written }
            offset += off_t(count)
            let outcome = chunk.withUnsafeBytes { sink(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            guard outcome == .written else { return outcome }
        }
    }

    static func kindName(_ kind: mode_t) -> String {
        switch kind {
        case S_IFDIR: return "a directory"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFLNK: return "a symbolic link"
        default: return "not a file, pipe or socket"
        }
    }
}
