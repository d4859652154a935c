import MediatorProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads the policy folders (docs/policy.md).
///
/// Loading does file I/O and resolves user and group names through NSS,
/// which may block: run it at start and on SIGHUP, off the event loop, and
/// hand the broker the finished ``Policy``.
package struct PolicyLoader: Sendable {
    /// The folders, the first winning over the later ones by file name.
    package var directories: [String]
    package var accounts: any AccountDirectory
    /// The uid the default policy trusts; the daemon's own.
    package var daemonUID: UInt32

    package init(directories: [String], accounts: any AccountDirectory, daemonUID: UInt32 = UInt32(getuid())) {
        self.directories = directories
        self.accounts = accounts
        self.daemonUID = daemonUID
    }

    /// Reads every `*.json` file of the folders, in order, files sorted by
    /// name (byte order) within a folder, and adds their rules up.
    ///
    /// - No policy file at all (folders missing or holding no `*.json`):
    ///   ``Policy/defaultPolicy(daemonUID:)``, with no problem.
    /// - A file that does not load (unreadable, not JSON, a structural
    ///   problem) is a problem and grants nothing; the other files apply.
    /// - A rule naming a user or group that does not exist is a problem and
    ///   is left out; the rest of its file applies.
    /// - Any policy file found, even empty or refused, means a policy is in
    ///   force: the default never comes back because a file is broken. A
    ///   folder that cannot be listed, or is not a folder, counts the same
    ///   way (fail closed).
    /// - A file that someone other than root or the daemon's user could
    ///   change (another owner, or writable by its group or others) is a
    ///   problem and is not read, as ubusd refuses such ACL files.
    /// - As with manifests, a later folder's file with the same name as an
    ///   earlier one's is ignored, and names that start with `.` are ignored.
    package func load() -> (policy: Policy, problems: [PolicyProblem]) {
        var policies: [Policy] = []
        var problems: [PolicyProblem] = []
        let walk = ConfigFolders(directories: directories, unreadableFolderConsequence: "; no rules are read from it").walk()
        problems += walk.problems
        for path in walk.files {
            let file = readPolicy(path)
            problems += file.problems
            if let policy = file.policy { policies.append(policy) }
        }
        guard walk.foundAnything else { return (Policy.defaultPolicy(daemonUID: daemonUID), problems) }
        return (Policy.merged(policies), problems)
    }

    /// One policy file as ``load()`` reads it: its rules (nil when the file
    /// is refused, or empty: no rules) and its problems, the file's own or
    /// those of the rules it skipped.
    func readPolicy(_ path: String) -> (policy: Policy?, problems: [PolicyProblem]) {
        if let unsafe = Self.unsafeFileReason(path) { return (nil, [PolicyProblem(file: path, reason: unsafe)]) }
        switch ManifestLoader.read(path) {
        case .failure(let problem):
            return (nil, [PolicyProblem(file: path, member: problem.member, reason: problem.reason)])
        case .success(nil):
            return (nil, [])
        case .success(let json?):
            do {
                let policy = try Policy(json: json, file: path, accounts: accounts)
                return (policy, policy.skippedRules)
            } catch {
                return (nil, [error])
            }
        }
    }

    /// Why the file (links followed) may not be trusted, or nil: it must
    /// belong to root or to the user the daemon runs as, and be writable by
    /// its owner alone.
    static func unsafeFileReason(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }  // gone: reading it says so
        let owner = UInt32(info.st_uid)
        let me = UInt32(getuid())
        if owner != 0 && owner != me {
            return
                "is owned by uid \(owner); a policy file must belong to root or to the daemon's user (uid \(me)), so it is not read"
        }
        let mode = UInt32(info.st_mode) & 0o7777
        if mode & 0o022 != 0 {
            let octal = String(mode, radix: 8)
            let shown = String(repeating: "0", count: max(0, 4 - octal.count)) + octal
            return "is writable by its group or others (mode \(shown)), so it is not read; chmod go-w it"
        }
        return nil
    }

    /// The policy folder of the system or the user instance.
    ///
    /// System: `/etc/mediator/policy.d`. User:
    /// `$XDG_CONFIG_HOME/mediator/policy.d`, where an unset, empty or
    /// relative `XDG_CONFIG_HOME` means `$HOME/.config`; usually absent, so
    /// the user instance runs the default policy.
    package static func defaultDirectories(userInstance: Bool, environment: [String: String]) -> [String] {
        guard userInstance else { return systemDirectories }
        return [ConfigPaths.userFolder(ConfigPaths.policyFolder, environment: environment)]
    }

    static let systemDirectories = ["/etc/mediator/" + ConfigPaths.policyFolder]
}
