import Logging
import MediatorConfiguration
import MediatorProtocol

/// The manifest files the daemon skipped, reported where an operator looks
/// (`status`, `list`, a call's `target_not_found`) and not only in its log.
///
/// A skipped file whose target name could be read stands for that target,
/// in state `invalid`, while nothing else serves the name (no registration,
/// no loaded manifest); every other one (not JSON, no readable name, a
/// duplicate, a second file for the same name, a folder's problem) is
/// listed by file in `list`'s `invalid_manifests`.
extension Broker {
    /// The state of a target whose manifest was skipped.
    static let invalidState = "invalid"

    func keepSkippedManifests(_ skipped: [SkippedManifest]) {
        let leftOut = activation.keepSkippedManifests(skipped)
        if leftOut > 0 {
            logger.warning(
                "more manifests skipped than list and status report",
                metadata: ["kept": "\(activation.skippedManifests.count)", "left_out": "\(leftOut)"])
        }
    }

    /// The skipped manifest that stands for `target`: the first one
    /// declaring it, when nothing else serves the name.
    func invalidManifest(of target: String) -> SkippedManifest? {
        guard registry.target(target) == nil, activation.components[target] == nil else { return nil }
        return activation.skippedManifests.first { $0.target == target }
    }

    /// The targets that stand for a skipped manifest, by name.
    var invalidTargets: [String: SkippedManifest] {
        var byName: [String: SkippedManifest] = [:]
        for skipped in activation.skippedManifests {
            guard let target = skipped.target, byName[target] == nil, registry.target(target) == nil,
                activation.components[target] == nil
            else { continue }
            byName[target] = skipped
        }
        return byName
    }

    /// `list`'s `invalid_manifests`: the skipped files no target entry shows.
    func unattributedSkippedManifests(besides invalidTargets: [String: SkippedManifest]) -> [JSONValue] {
        activation.skippedManifests.filter { skipped in
            guard let target = skipped.target else { return true }
            return invalidTargets[target] != skipped
        }.map { skipped in
            guard case .object(var members) = skipped.problem.json, let target = skipped.target else {
                return skipped.problem.json
            }
            members["target"] = .string(target)
            return .object(members)
        }
    }

    /// A target in state `invalid`, as `list` (and, without `actions`,
    /// `status`) gives it: the members every target has, empty, and the
    /// manifest and its problem.
    func invalidTargetSummary(_ target: String, _ skipped: SkippedManifest, actions: Bool) -> JSONValue {
        var members: [String: JSONValue] = [
            "target": .string(target),
            "description": .string(""),
            "instances": .array([]),
            "state": .string(Self.invalidState),
            "calls_served": .int(Int64(statistics.calls(ofTarget: target))),
            "manifest": .string(skipped.problem.file),
            "problem": skipped.problem.json,
        ]
        if actions { members["actions"] = .array([]) }
        return .object(members)
    }

    /// `target_not_found` for `target`, saying why when its manifest was skipped.
    func targetNotFound(_ target: String) -> MediatorError {
        let message = "no component serves target \"\(target)\""
        guard let skipped = invalidManifest(of: target) else { return MediatorError(.targetNotFound, message) }
        return MediatorError(.targetNotFound, message + "; its manifest is invalid: \(skipped.problem)")
    }
}
