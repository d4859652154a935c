import Glibc

/// Linux-only calls that Swift's Glibc module does not import (they need _GNU_SOURCE).
public enum LinuxExtras {
    nonisolated(unsafe) private static let handle = dlopen(nil, RTLD_NOW)

    /// The kernel sends SIGKILL to this process when its parent (the thread
    /// that started it) dies.
    public static func dieWithParent() {
        typealias Prctl = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32
        guard let symbol = dlsym(handle, "prctl") else { return }
        let prctl = unsafeBitCast(symbol, to: Prctl.self)
        _ = prctl(1 /* PR_SET_PDEATHSIG */, UInt(SIGKILL), 0, 0, 0)
        if getppid() == 1 { _exit(1) }  // the parent is already gone
    }

    /// Restricts this process (and the children it starts later) to `cpus`; nil means every CPU.
    @discardableResult
    public static func setAffinity(_ cpus: [Int]?) -> Bool {
        typealias SetAffinity = @convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32
        guard let symbol = dlsym(handle, "sched_setaffinity") else { return false }
        let setAffinity = unsafeBitCast(symbol, to: SetAffinity.self)
        var set = cpu_set_t()
        let all = Array(0..<Int(sysconf(Int32(_SC_NPROCESSORS_CONF))))
        withUnsafeMutableBytes(of: &set) { bytes in
            for cpu in cpus ?? all where cpu >= 0 && cpu < bytes.count * 8 {
                bytes[cpu / 8] |= UInt8(1) << UInt8(cpu % 8)
            }
        }
        return withUnsafeBytes(of: &set) { bytes in
            guard let base = bytes.baseAddress else { return -1 }
            return setAffinity(0, bytes.count, base)
        } == 0
    }
}
