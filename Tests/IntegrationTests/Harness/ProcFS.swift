import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What /proc says about a process (the daemon): its memory, open files and
/// limits; and the test process's own open file limit.
enum ProcFS {
    /// VmRSS of `pid`, in KiB.
    static func residentKiB(_ pid: pid_t) throws -> Int {
        let status = ChildProcess.read("/proc/\(pid)/status")
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let digits = line.dropFirst("VmRSS:".count).split(whereSeparator: \.isWhitespace).first
            if let digits, let value = Int(digits) { return value }
        }
        throw HarnessError("no VmRSS in /proc/\(pid)/status:\n\(status)")
    }

    /// How many files `pid` has open.
    static func openFiles(_ pid: pid_t) throws -> Int {
        do {
            return try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
        } catch {
            throw HarnessError("cannot list /proc/\(pid)/fd: \(error)")
        }
    }

    /// The soft and hard "Max open files" of `pid`, from /proc/PID/limits.
    static func openFileLimits(_ pid: pid_t) throws -> (soft: String, hard: String) {
        let limits = ChildProcess.read("/proc/\(pid)/limits")
        for line in limits.split(separator: "\n") where line.hasPrefix("Max open files") {
            let words = line.dropFirst("Max open files".count).split(whereSeparator: \.isWhitespace)
            if words.count >= 2 { return (String(words[0]), String(words[1])) }
        }
        throw HarnessError("no \"Max open files\" in /proc/\(pid)/limits:\n\(limits)")
    }

    /// Raises this process's soft RLIMIT_NOFILE to its hard limit (tests that
    /// hold thousands of sockets need it) and returns the soft limit now.
    /// A hard limit below `minimum` is raised too where that is allowed
    /// (root, CAP_SYS_RESOURCE); elsewhere it stays.
    @discardableResult
    static func raiseOwnOpenFileLimit(minimum: Int = 8192) throws -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            throw HarnessError("getrlimit: \(String(cString: strerror(errno)))")
        }
        if limit.rlim_max < rlim_t(minimum) {
            var raised = rlimit(rlim_cur: rlim_t(minimum), rlim_max: rlim_t(minimum))
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        if limit.rlim_cur < limit.rlim_max {
            var raised = rlimit(rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max)
            guard setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 else {
                throw HarnessError("setrlimit NOFILE \(limit.rlim_max): \(String(cString: strerror(errno)))")
            }
            limit = raised
        }
        return Int(clamping: limit.rlim_cur)
    }
}
