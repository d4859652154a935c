import MediatorProtocol

#if canImport(Glibc)
import Glibc
#endif

/// The two kinds of files in the daemon's config folders.
package enum ConfigFileKind: String, Sendable, CaseIterable {
    /// A component manifest (`components.d`, docs/components.md).
    case manifest
    /// A policy file (`policy.d`, docs/policy.md).
    case policy
}

/// Checks manifest and policy files before they are installed, as
/// `systemd-analyze verify` checks units: each file is read exactly as the
/// daemon reads it (``ManifestLoader``, ``PolicyLoader``), and a folder as
/// the daemon walks it. What `mediatorctl verify` runs.
package struct ConfigFileCheck: Sendable {
    /// Where a policy's user and group names resolve: a rule whose name
    /// does not resolve is a problem, as it is skipped by the daemon.
    var accounts: any AccountDirectory

    package init(accounts: any AccountDirectory = SystemAccounts()) {
        self.accounts = accounts
    }

    /// The problems of `path`, a file or a folder of files; none when the
    /// daemon would take it all. `kind` nil: a folder's kind comes from its
    /// name (`components.d`, `policy.d`); a file's from its folder's name,
    /// else from its content (an object with `rules` is a policy file,
    /// anything else is read as a manifest).
    package func problems(_ path: String, kind: ConfigFileKind? = nil) -> [ConfigFileProblem] {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let reason = errno == ENOENT ? "does not exist" : "cannot be read: " + BoundedFile.errorText(errno)
            return [ConfigFileProblem(file: path, reason: reason)]
        }
        if info.st_mode & S_IFMT == S_IFDIR {
            switch kind ?? Self.kind(ofFolder: path) {
            case .manifest?: return ManifestLoader(directories: [path]).load().skipped.map(\.problem)
            case .policy?: return PolicyLoader(directories: [path], accounts: accounts).load().problems
            case nil:
                return [
                    ConfigFileProblem(
                        file: path,
                        reason: "is neither a \(ConfigPaths.componentsFolder) nor a \(ConfigPaths.policyFolder) folder: "
                            + "give --manifest or --policy")
                ]
            }
        }
        let decided: ConfigFileKind
        if let known = kind ?? Self.kind(ofFolder: Self.folder(of: path)) {
            decided = known
        } else {
            switch ManifestLoader.read(path) {
            case .failure(let problem): return [problem]
            case .success(nil): return []  // empty: a mask, or no rules; either way nothing wrong
            case .success(let json?): decided = Self.kind(of: json)
            }
        }
        switch decided {
        case .manifest:
            if case .failure(let skipped) = ManifestLoader.readManifest(path) { return [skipped.problem] }
            return []
        case .policy:
            return PolicyLoader(directories: [], accounts: accounts).readPolicy(path).problems
        }
    }

    // MARK: - Helpers

    /// `components.d` holds manifests, `policy.d` policy files; any other
    /// folder, nothing known. The folder's own name, links resolved, so
    /// that `.` or a link to the folder counts.
    static func kind(ofFolder folder: String) -> ConfigFileKind? {
        let resolved = realpath(folder, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        } ?? folder
        let name = resolved.split(separator: "/").last.map(String.init) ?? ""
        switch name {
        case ConfigPaths.componentsFolder: return .manifest
        case ConfigPaths.policyFolder: return .policy
        default: return nil
        }
    }

    /// The folder `path` is in: `.` for a bare name.
    static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// A policy file has `rules`; anything else is taken for a manifest.
    static func kind(of json: JSONValue) -> ConfigFileKind {
        json["rules"] != nil ? .policy : .manifest
    }
}
