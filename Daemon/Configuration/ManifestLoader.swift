import MediatorProtocol

#if canImport(Glibc)
import Glibc
#endif

/// Reads the manifests of the components folders.
package struct ManifestLoader: Sendable {
    /// The folders, the first winning over the later ones.
    package var directories: [String]

    /// A manifest file larger than this is a problem and is not read.
    package static let maxFileBytes = 1 << 20

    package init(directories: [String]) {
        self.directories = directories
    }

    /// Reads every `*.json` file in the folders, in order, files sorted by name
    /// (byte order) within a folder. A later folder's file with the same file
    /// NAME as an earlier one is ignored (the first folder wins: /etc overrides
    /// /usr/lib, as systemd does); an empty file or a link to /dev/null masks
    /// the name without being a problem. Two files declaring the same target:
    /// the second is skipped. A missing folder is not a problem. Names that
    /// start with `.` are ignored, as are folders and other non-files.
    package func load() -> (manifests: [Manifest], skipped: [SkippedManifest]) {
        var manifests: [Manifest] = []
        var skipped: [SkippedManifest] = []
        var fileOfTarget: [String: String] = [:]
        let walk = ConfigFolders(directories: directories).walk()
        skipped += walk.problems.map { SkippedManifest(problem: $0) }
        for path in walk.files {
            let manifest: Manifest
            switch Self.readManifest(path) {
            case .failure(let skip):
                skipped.append(skip)
                continue
            case .success(nil):
                continue  // empty: masked
            case .success(let read?):
                manifest = read
            }
            if let earlier = fileOfTarget[manifest.target] {
                let problem = ManifestProblem(
                    file: path, member: "target",
                    reason: "target \(Manifest.quoted(manifest.target)) is already declared by \(earlier)")
                skipped.append(SkippedManifest(problem: problem, target: manifest.target))
                continue
            }
            fileOfTarget[manifest.target] = path
            manifests.append(manifest)
        }
        return (manifests, skipped)
    }

    /// One manifest file as ``load()`` reads it: the manifest, nil for an
    /// empty file (a mask), or why it is skipped. (Whether another file
    /// declares the same target is for the caller that reads several.)
    static func readManifest(_ path: String) -> Result<Manifest?, SkippedManifest> {
        switch read(path) {
        case .failure(let problem):
            return .failure(SkippedManifest(problem: problem))
        case .success(nil):
            return .success(nil)
        case .success(let json?):
            do {
                return .success(try Manifest(json: json, file: path, readFile: readInterfaceFile))
            } catch {
                return .failure(SkippedManifest(problem: error, target: SkippedManifest.declaredTarget(json)))
            }
        }
    }

    /// The components folders of the system or the user instance.
    ///
    /// System: `/etc/mediator/components.d`, then `/usr/lib/mediator/components.d`.
    /// User: `$XDG_CONFIG_HOME/mediator/components.d`, where an unset, empty or
    /// relative `XDG_CONFIG_HOME` means `$HOME/.config`.
    package static func defaultDirectories(userInstance: Bool, environment: [String: String]) -> [String] {
        guard userInstance else { return systemDirectories }
        return [ConfigPaths.userFolder(ConfigPaths.componentsFolder, environment: environment)]
    }

    static let systemDirectories = ["/etc/mediator/" + ConfigPaths.componentsFolder, "/usr/lib/mediator/" + ConfigPaths.componentsFolder]

    // MARK: - Helpers

    enum Kind { case file, mask, brokenLink, other }

    /// What a folder entry is, links followed: a regular file, a link to
    /// /dev/null (systemd's way of masking), a dangling link, or anything else
    /// (a folder, a FIFO, a socket), which is ignored.
    static func kind(_ path: String) -> Kind {
        var info = stat()
        guard stat(path, &info) == 0 else {
            var linkInfo = stat()
            return lstat(path, &linkInfo) == 0 && (linkInfo.st_mode & S_IFMT) == S_IFLNK ? .brokenLink : .other
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .file
        case S_IFCHR:
            var null = stat()
            return stat("/dev/null", &null) == 0 && null.st_rdev == info.st_rdev ? .mask : .other
        default: return .other
        }
    }

    /// The parsed JSON, or nil for an empty file (a mask).
    static func read(_ path: String) -> Result<JSONValue?, ManifestProblem> {
        let data: [UInt8]
        switch BoundedFile.read(path, limit: maxFileBytes) {
        case .success(let bytes): data = bytes
        case .failure(.cannotOpen): return .failure(ManifestProblem(file: path, reason: "cannot be read (permissions?)"))
        case .failure(.cannotRead(let text)): return .failure(ManifestProblem(file: path, reason: "cannot be read: \(text)"))
        case .failure(.tooLarge): return .failure(ManifestProblem(file: path, reason: "is larger than \(maxFileBytes) bytes"))
        }
        if data.isEmpty { return .success(nil) }
        do {
            return .success(try JSONParser.parse(data))
        } catch {
            return .failure(ManifestProblem(file: path, reason: "is not valid JSON: \(error)"))
        }
    }

    /// The bytes of an interface file a manifest names, at most
    /// ``maxFileBytes`` like the manifest itself.
    static func readInterfaceFile(_ path: String) -> Result<[UInt8], InterfaceFileUnreadable> {
        guard kind(path) == .file else {
            var info = stat()
            let exists = stat(path, &info) == 0
            return .failure(InterfaceFileUnreadable(reason: exists ? "is not a regular file" : "does not exist"))
        }
        switch BoundedFile.read(path, limit: maxFileBytes) {
        case .success(let bytes): return .success(bytes)
        case .failure(.cannotOpen): return .failure(InterfaceFileUnreadable(reason: "cannot be read (permissions?)"))
        case .failure(.cannotRead(let text)): return .failure(InterfaceFileUnreadable(reason: "cannot be read: \(text)"))
        case .failure(.tooLarge): return .failure(InterfaceFileUnreadable(reason: "is larger than \(maxFileBytes) bytes"))
        }
    }

    /// An error's text for a problem report: a POSIX error's own words where there is one.
    static func reason(_ error: any Error) -> String {
        if let failure = error as? BoundedFile.Failure {
            switch failure {
            case .cannotOpen(let text), .cannotRead(let text): return text
            case .tooLarge: return "too large"
            }
        }
        return "\(error)"
    }
}
