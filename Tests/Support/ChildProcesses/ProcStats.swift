import Glibc

/// Figures from /proc for one process.
public enum ProcStats {
    /// The whole of a /proc file, read to its end (they report a size of 0,
    /// and large ones such as smaps come in several reads).
    public static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                bytes.append(contentsOf: chunk[0..<n])
            } else if n == 0 {
                return String(decoding: bytes, as: UTF8.self)
            } else if errno != EINTR {
                return nil
            }
        }
    }

    /// A `kB` figure from /proc/PID/smaps_rollup, such as Pss, Private_Clean
    /// or Private_Dirty: what is the process's own, beside RSS, which also
    /// counts every shared library page it has touched.
    public static func smapsRollupKB(_ pid: pid_t, _ key: String) -> Int? {
        kB(key, in: "/proc/\(pid)/smaps_rollup")
    }

    /// Private_Clean + Private_Dirty: the pages no other process maps.
    public static func privateKB(_ pid: pid_t) -> Int? {
        guard let clean = smapsRollupKB(pid, "Private_Clean"), let dirty = smapsRollupKB(pid, "Private_Dirty") else { return nil }
        return clean + dirty
    }

    /// What each open descriptor of the process points at (`socket:[inode]`,
    /// `/memfd:NAME (deleted)`, a path), from /proc/PID/fd; nil when the
    /// process is gone.
    public static func openDescriptors(_ pid: pid_t) -> [String]? {
        guard let directory = opendir("/proc/\(pid)/fd") else { return nil }
        defer { closedir(directory) }
        var targets: [String] = []
        var buffer = [CChar](repeating: 0, count: 4096)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard Int32(name) != nil else { continue }
            let count = readlink("/proc/\(pid)/fd/\(name)", &buffer, buffer.count - 1)
            guard count > 0 else { continue }  // closed meanwhile
            targets.append(String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return targets
    }

    /// A `kB` figure from /proc/PID/status, such as VmRSS or VmHWM.
    public static func statusKB(_ pid: pid_t, _ key: String) -> Int? {
        kB(key, in: "/proc/\(pid)/status")
    }

    /// The number after `KEY:` in a /proc file of `KEY: N kB` lines.
    static func kB(_ key: String, in path: String) -> Int? {
        guard let text = read(path) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
            return Int(line.dropFirst(key.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        }
        return nil
    }

    /// utime + stime of every thread, in seconds (clock-tick resolution).
    public static func cpuSeconds(_ pid: pid_t) -> Double? {
        guard let stat = read("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after "comm)": state is field 3, so utime (14) and stime (15) are at 11 and 12.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let utime = Double(fields[11]), let stime = Double(fields[12]) else { return nil }
        return (utime + stime) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Threads of the process.
    public static func threads(_ pid: pid_t) -> Int? { statusKB(pid, "Threads") }
}
