#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where user and group names come from: the system's accounts (NSS) in
/// the daemon, a table in tests.
///
/// The policy resolves the names of its files once, when it is loaded (at
/// start and on SIGHUP), never while it checks a request.
package protocol AccountDirectory: Sendable {
    /// The uid of the user `name`, or nil when there is no such user.
    func uid(ofUser name: String) -> UInt32?
    /// The gid of the group `name`, or nil when there is no such group.
    func gid(ofGroup name: String) -> UInt32?
    /// The name of the user `uid`, or nil when it has none.
    func userName(_ uid: UInt32) -> String?
}

/// The system's accounts, through NSS (`getpwnam_r`, `getgrnam_r`,
/// `getpwuid_r`): /etc/passwd and /etc/group, and LDAP, systemd-userdb or
/// whatever else nsswitch.conf names.
///
/// A lookup may block (a remote directory), so call it off the event loop:
/// when loading the policy, or once when a connection is accepted.
package struct SystemAccounts: AccountDirectory {
    package init() {}

    package func uid(ofUser name: String) -> UInt32? {
        guard Self.isLookupName(name) else { return nil }
        return Self.withBuffer { buffer -> (found: UInt32?, errno: Int32) in
            var entry = passwd()
            var result: UnsafeMutablePointer<passwd>?
            let status = getpwnam_r(name, &entry, buffer.baseAddress!, buffer.count, &result)
            return (result == nil ? nil : UInt32(entry.pw_uid), status)
        }
    }

    package func gid(ofGroup name: String) -> UInt32? {
        guard Self.isLookupName(name) else { return nil }
        return Self.withBuffer { buffer -> (found: UInt32?, errno: Int32) in
            var entry = group()
            var result: UnsafeMutablePointer<group>?
            let status = getgrnam_r(name, &entry, buffer.baseAddress!, buffer.count, &result)
            return (result == nil ? nil : UInt32(entry.gr_gid), status)
        }
    }

    package func userName(_ uid: UInt32) -> String? {
        Self.withBuffer { buffer -> (found: String?, errno: Int32) in
            var entry = passwd()
            var result: UnsafeMutablePointer<passwd>?
            let status = getpwuid_r(uid_t(uid), &entry, buffer.baseAddress!, buffer.count, &result)
            guard result != nil, let name = entry.pw_name else { return (nil, status) }
            return (String(cString: name), status)
        }
    }

    // MARK: - Helpers

    /// The largest buffer tried for one entry; an entry (a group with very
    /// many members) that needs more is taken as not found.
    static let maxBufferBytes = 1 << 20

    /// A name NSS can be asked about: not empty, no NUL byte.
    static func isLookupName(_ name: String) -> Bool {
        !name.isEmpty && !name.utf8.contains(0)
    }

    /// Runs `body` with a scratch buffer, twice as large each time it
    /// answers ERANGE (the entry did not fit).
    private static func withBuffer<Found>(
        _ body: (UnsafeMutableBufferPointer<CChar>) -> (found: Found?, errno: Int32)
    ) -> Found? {
        var size = 1024
        while size <= maxBufferBytes {
            let outcome = withUnsafeTemporaryAllocation(of: CChar.self, capacity: size) { body($0) }
            if outcome.errno == ERANGE {
                size *= 2
                continue
            }
            return outcome.found
        }
        return nil
    }
}
