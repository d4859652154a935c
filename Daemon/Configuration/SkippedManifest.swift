import MediatorProtocol

/// A manifest file the loader skipped: why, and the target the file
/// declares when that much can be read, so that the daemon can answer
/// `status` and `list` for that target with the problem rather than as if
/// the file did not exist.
package struct SkippedManifest: Error, Sendable, Equatable {
    package var problem: ManifestProblem
    /// The file's `target` member when it is a valid target name (it may
    /// also be the target of a manifest that was loaded: a duplicate); nil
    /// when the file is not a JSON object, or its target is missing or not a
    /// name, or the problem is a folder's or a broken link's.
    package var target: String?

    package init(problem: ManifestProblem, target: String? = nil) {
        self.problem = problem
        self.target = target
    }

    /// The target a manifest's JSON declares, if it is a name a component
    /// could have (not the daemon's own).
    static func declaredTarget(_ json: JSONValue) -> String? {
        guard let target = json["target"]?.stringValue, NameRules.isValidTarget(target),
            target != ProtocolConstants.daemonTarget
        else { return nil }
        return target
    }
}
