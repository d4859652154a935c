import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// CPU time a process has used, from /proc/PID/stat.
enum ProcessCPU {
    /// utime + stime of `pid`, in seconds.
    static func seconds(_ pid: pid_t) throws -> Double {
        let stat = ChildProcess.read("/proc/\(pid)/stat")
        // The command name (field 2) may hold spaces: count from after its ")".
        guard let end = stat.lastIndex(of: ")") else { throw HarnessError("cannot read /proc/\(pid)/stat: \(stat)") }
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
            throw HarnessError("unexpected /proc/\(pid)/stat: \(stat)")
        }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The share of one CPU that `pid` used over `interval` of wall time
    /// (a measurement over a fixed interval, not a wait for a state).
    static func share(of pid: pid_t, over interval: Duration) throws -> Double {
        let before = try seconds(pid)
        let started = ContinuousClock.now
        sleep(for: interval)
        let after = try seconds(pid)
        let wall = (ContinuousClock.now - started).seconds
        return (after - before) / wall
    }
}
