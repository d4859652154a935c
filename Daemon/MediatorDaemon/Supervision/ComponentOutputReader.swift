import Logging
import MediatorEventLoop

#if canImport(Glibc)
import Glibc
#endif

/// One component process's stdout or stderr: the read end of its pipe,
/// read on the broker's loop and logged one record per line, tagged with
/// the target. The daemon owns the pipe (not swift-subprocess), so that a
/// re-exec can keep it open and the new image reads on: the component
/// never sees its output closed. Confined to the loop's thread.
final class ComponentOutputReader {
    let fd: Int32
    let stream: String
    let target: String
    /// Known once the spawner reports it.
    var pid: Int32 = 0
    private let logger: Logger
    private var source: IOSource?
    private var pending: [UInt8] = []
    /// A line longer than this is logged in pieces: a component cannot make the daemon buffer without bound.
    static let maxLineBytes = 64 * 1024

    init(fd: Int32, stream: String, target: String, logger: Logger, loop: SDEventLoop) throws(SDEventError) {
        self.fd = fd
        self.stream = stream
        self.target = target
        self.logger = logger
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        source = try loop.addIO(fd: fd, events: .readable) { [unowned self] _, _ in readAvailable() }
    }

    deinit {
        source?.cancel()
        if source != nil { close(fd) }
    }

    private func readAvailable() {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                pending += chunk[..<count]
                logCompleteLines()
                continue
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
            // End of output (the process and its children closed it) or an error.
            if !pending.isEmpty { log(pending[...]) }
            pending = []
            source?.cancel()
            source = nil
            close(fd)
            return
        }
    }

    private func logCompleteLines() {
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            log(pending[..<newline])
            pending.removeSubrange(...newline)
        }
        if pending.count > Self.maxLineBytes {
            log(pending[...])
            pending = []
        }
    }

    private func log(_ line: ArraySlice<UInt8>) {
        var text = Substring(String(decoding: line, as: UTF8.self))
        while let last = text.last, last == "\r" || last == "\n" { text = text.dropLast() }
        guard !text.isEmpty else { return }
        logger.info("\(text)", metadata: ["target": "\(target)", "pid": "\(pid)", "stream": "\(stream)"])
    }

    /// The pipe's read end while output may still come (nil once it
    /// ended), for a copy in the fd store.
    var descriptor: Int32? { source == nil ? nil : fd }

    /// The descriptor while output may still come (nil once it ended),
    /// for a re-exec to keep open; a half line read so far is logged now,
    /// since the new image starts with an empty buffer.
    func handOver() -> Int32? {
        guard source != nil else { return nil }
        if !pending.isEmpty { log(pending[...]) }
        pending = []
        return fd
    }
}
