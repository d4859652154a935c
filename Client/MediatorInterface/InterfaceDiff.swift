import MediatorProtocol

/// Compares two versions of an interface file for the callers of the old
/// one: what they send (params) must still be accepted, and what they read
/// (results) must still be there, with the types they expect.
///
/// The rules (docs/interfaces.md, "Compatibility rules of `diff`"): params
/// may widen but not narrow; results may narrow but not widen; a change that
/// is neither (`string` to `object`) breaks both. `$ref`s are followed, so
/// moving a type into `$defs` or renaming a definition is no change.
public enum InterfaceDiff {
    /// Every change, in file order: the target, then the old file's actions
    /// (changed or removed), then the added ones.
    public static func changes(from old: InterfaceFile, to new: InterfaceFile) -> [InterfaceChange] {
        var changes: [InterfaceChange] = []
        if old.target != new.target {
            changes.append(
                InterfaceChange(
                    breaking: true, member: "target",
                    change: "target renamed from \(MemberPath.quoted(old.target)) to \(MemberPath.quoted(new.target))"))
        }
        let oldActions = old.actionObjects
        let newActions = new.actionObjects
        var newByName: [String: [String: JSONValue]] = [:]
        for action in newActions {
            if let name = action["name"]?.stringValue, newByName[name] == nil { newByName[name] = action }
        }
        var oldNames: Set<String> = []
        for action in oldActions {
            guard let name = action["name"]?.stringValue, oldNames.insert(name).inserted else { continue }
            let path = MemberPath.member("actions", name)
            guard let counterpart = newByName[name] else {
                changes.append(InterfaceChange(breaking: true, member: path, change: "action removed"))
                continue
            }
            changes += compareAction(action, counterpart, name: name, path: path)
        }
        for action in newActions {
            guard let name = action["name"]?.stringValue, !oldNames.contains(name) else { continue }
            oldNames.insert(name)  // a name given twice is reported once
            changes.append(
                InterfaceChange(breaking: false, member: MemberPath.member("actions", name), change: "action added"))
        }
        return changes
    }

    // MARK: - Actions

    private static func compareAction(
        _ old: [String: JSONValue], _ new: [String: JSONValue], name: String, path: String
    ) -> [InterfaceChange] {
        var changes: [InterfaceChange] = []
        let streams = (old["more"]?.boolValue ?? false, new["more"]?.boolValue ?? false)
        if streams.0 != streams.1 {
            changes.append(
                InterfaceChange(
                    breaking: true, member: path + ".more",
                    change: streams.1
                        ? "now answers with a stream (\"more\": true)" : "no longer answers with a stream"))
        }
        let oneway = (old["oneway"]?.boolValue ?? false, new["oneway"]?.boolValue ?? false)
        if oneway.0 != oneway.1 {
            changes.append(
                InterfaceChange(
                    breaking: true, member: path + ".oneway",
                    change: oneway.1 ? "now oneway: it never answers" : "no longer oneway: it answers"))
        }
        // The same name on both sides, so only the "url" member decides.
        let reachable = (old["url"]?.boolValue != false, new["url"]?.boolValue != false)
        if reachable.0 != reachable.1 {
            changes.append(
                InterfaceChange(
                    breaking: reachable.0, member: path + ".url",
                    change: reachable.1
                        ? "now reachable through mediator/open" : "no longer reachable through mediator/open (\"url\": false)"))
        }

        let oldParams = present(old["params"])
        let newParams = present(new["params"])
        switch (oldParams, newParams) {
        case (nil, nil):
            break
        case (.some, nil):
            changes.append(
                InterfaceChange(
                    breaking: false, member: path + ".params", change: "params schema removed: params are no longer checked"))
        default:
            // Params are always an object on the wire, so no schema is the
            // same as {"type": "object"}: adding one can add required params.
            var comparison = SchemaComparison(
                direction: .params, oldRoot: oldParams ?? ["type": "object"], newRoot: newParams ?? ["type": "object"])
            comparison.compareRoots(path: path + ".params")
            changes += comparison.changes
        }

        let oldResult = present(old["result"])
        let newResult = present(new["result"])
        switch (oldResult, newResult) {
        case (nil, nil):
            break
        case (nil, .some):
            changes.append(InterfaceChange(breaking: false, member: path + ".result", change: "result schema added"))
        case (.some, nil):
            changes.append(
                InterfaceChange(
                    breaking: true, member: path + ".result", change: "result schema removed: the result is no longer described"))
        case (.some(let oldSchema), .some(let newSchema)):
            var comparison = SchemaComparison(direction: .result, oldRoot: oldSchema, newRoot: newSchema)
            comparison.compareRoots(path: path + ".result")
            changes += comparison.changes
        }
        return changes
    }

    private static func present(_ value: JSONValue?) -> JSONValue? {
        guard let value, !value.isNull else { return nil }
        return value
    }
}
