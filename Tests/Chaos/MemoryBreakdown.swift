import ChildProcesses
import Glibc

/// Where a process's resident memory is, from /proc/PID/smaps: enough to
/// tell the main heap from thread arenas and stacks and from mapped files
/// when the RSS moves.
struct MemoryBreakdown: CustomStringConvertible {
    /// `[heap]`: the brk heap, where glibc's main arena lives.
    var heapKB = 0
    /// Anonymous mappings: other malloc arenas, thread stacks, NIO's buffers.
    var anonymousKB = 0
    /// Mapped files: the binary, the Swift runtime, libraries.
    var fileKB = 0
    var otherKB = 0
    var threads = 0

    init?(pid: pid_t) {
        guard let text = ProcStats.read("/proc/\(pid)/smaps") else { return nil }
        enum Kind { case heap, anonymous, file, other }
        var kind = Kind.other
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first.contains("-") && !first.hasSuffix(":") {
                // A mapping's header: range perms offset dev inode [path]
                let path = fields.count >= 6 ? String(fields[5]) : ""
                if path == "[heap]" {
                    kind = .heap
                } else if path.isEmpty {
                    kind = .anonymous
                } else if path.hasPrefix("/") {
                    kind = .file
                } else {
                    kind = .other
                }
            } else if first == "Rss:", fields.count >= 2, let kb = Int(fields[1]) {
                switch kind {
                case .heap: heapKB += kb
                case .anonymous: anonymousKB += kb
                case .file: fileKB += kb
                case .other: otherKB += kb
                }
            }
        }
        threads = ProcStats.threads(pid) ?? 0
    }

    var description: String {
        "heap \(heapKB) kB, other anonymous \(anonymousKB) kB, files \(fileKB) kB, other \(otherKB) kB, \(threads) threads"
    }
}
