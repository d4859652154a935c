import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Hides libnats from one daemon: a mount namespace with /dev/null bound
/// over the file dlopen would read (root only).
enum HiddenLibNATS {
    /// The file behind libnats's soname.
    static let library: String? = {
        guard let resolved = realpath("/usr/lib/x86_64-linux-gnu/libnats.so.3.4", nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }()
    static let unshare: String? = ["/usr/bin/unshare", "/bin/unshare"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    static var available: Bool { getuid() == 0 && library != nil && unshare != nil }

    /// A launcher for ``World/daemon(_:socketPath:waitUntilReady:launcher:)``.
    static var launcher: [String] {
        guard let library, let unshare else { return [] }
        return [unshare, "--mount", "sh", "-c", #"mount --bind /dev/null "$0" && exec "$@""#, library]
    }
}

extension Integration {
    /// mediatord loads libnats only when NATS is configured; where it is
    /// missing, the bridge says why and everything local goes on.
    @Suite("NATS configured, libnats missing", .enabled(if: HiddenLibNATS.available, "needs root, unshare and libnats"))
    struct NATSWithoutLibrary {
        @Test("The bridge logs that libnats cannot be loaded; the daemon serves local calls")
        func localCallsGoOn() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(
                ["--nats-url", "nats://127.0.0.1:1", "--nats-export", "*", "--nats-host", "here"],
                launcher: HiddenLibNATS.launcher)
            try waitUntil("the bridge's error in the log\(daemon.process.logTail())") {
                daemon.process.stderr.contains("libnats.so.3.4 cannot be loaded")
            }
            _ = try world.notes(daemon)
            let added = try CLI(daemon).json("call", ["Notes", "add", "text=local"])
            #expect(added["id"] != nil, "\(added)")
        }
    }
}
