// FoundationEssentials, not Foundation: the daemon needs no ICU data
// (tens of MiB of mapped memory, docs/benchmark.md "Footprint").
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// The `*.json` files of a list of folders, walked the way systemd walks its
/// drop-in folders; manifests and policy files both use it.
///
/// Folders in order, files sorted by name (byte order) within a folder. A
/// later folder's file with the same NAME as an earlier one is ignored (the
/// first folder wins: /etc overrides /usr/lib); a link to /dev/null masks the
/// name. Names starting with `.` are ignored, as are folders and other
/// non-files. A missing folder is not a problem.
struct ConfigFolders {
    var directories: [String]
    /// Appended to the reason of a folder that cannot be read (what that means for the caller).
    var unreadableFolderConsequence = ""

    struct Walk {
        /// The files to read, in order (an empty one is the caller's to treat as a mask).
        var files: [String] = []
        var problems: [ConfigFileProblem] = []
        /// Whether anything was found: a file, a mask, a broken link, or a
        /// folder that could not be read.
        var foundAnything = false
    }

    func walk() -> Walk {
        var result = Walk()
        var seenNames: Set<String> = []
        let fileManager = FileManager.default
        for directory in directories {
            var info = stat()
            guard stat(directory, &info) == 0 else { continue }
            guard info.st_mode & S_IFMT == S_IFDIR else {
                result.foundAnything = true
                result.problems.append(ConfigFileProblem(file: directory, reason: "is not a folder" + unreadableFolderConsequence))
                continue
            }
            let names: [String]
            do {
                names = try fileManager.contentsOfDirectory(atPath: directory)
            } catch {
                result.foundAnything = true
                result.problems.append(
                    ConfigFileProblem(
                        file: directory,
                        reason: "cannot list the folder (\(ManifestLoader.reason(error)))" + unreadableFolderConsequence))
                continue
            }
            let candidates = names.filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }
                .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            for name in candidates {
                let path = ConfigPaths.join(directory, name)
                let kind = ManifestLoader.kind(path)
                if kind == .other { continue }
                guard seenNames.insert(name).inserted else { continue }
                result.foundAnything = true
                switch kind {
                case .mask, .other: continue
                case .brokenLink:
                    result.problems.append(ConfigFileProblem(file: path, reason: "is a link to a file that does not exist"))
                case .file:
                    result.files.append(path)
                }
            }
        }
        return result
    }
}
