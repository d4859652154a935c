/// Generated code reads a value of a union by trying its alternatives (at
/// most `Schema.maxAlternatives`): linear in the value as long as no
/// alternative reaches another union, or the same one again (a union nested
/// in a union multiplies the tries at each level, as a recursive one does at
/// each level of the value). So generation refuses such interfaces; the
/// daemon, which bounds its work otherwise, accepts them.
enum UnionNesting {
    static func check(_ model: InterfaceModel) throws(CodegenError) {
        // The structs that hold a union (through members and items), found
        // backwards from the unions: linear in the members.
        var referrers: [String: [String]] = [:]
        var holding: Set<String> = []
        for case .structure(let decl) in model.declarations {
            for field in decl.fields {
                guard let name = namedType(field.type, in: model) else { continue }
                if case .union? = model.declaration(named: name) {
                    holding.insert(decl.name)
                } else {
                    referrers[name, default: []].append(decl.name)
                }
            }
        }
        var queue = Array(holding)
        while let name = queue.popLast() {
            for referrer in referrers[name] ?? [] where holding.insert(referrer).inserted {
                queue.append(referrer)
            }
        }
        for case .union(let decl) in model.declarations {
            for (index, alternative) in decl.alternatives.enumerated() {
                guard let type = alternative.type, let name = namedType(type, in: model) else { continue }
                let isUnion: Bool
                if case .union? = model.declaration(named: name) { isUnion = true } else { isUnion = false }
                if isUnion || holding.contains(name) {
                    throw CodegenError(
                        path: "\(decl.name) (\(decl.rule.rawValue)[\(index)])",
                        reason: "an alternative that leads to another anyOf/oneOf (or back to this one): "
                            + "generated code reads alternatives by trying each, which nesting would multiply; "
                            + "the daemon accepts the schema, only code generation does not")
                }
            }
        }
    }

    /// The declaration `type` names, itself or as items.
    private static func namedType(_ type: TypeRef, in model: InterfaceModel) -> String? {
        switch model.resolved(type).shape {
        case .array(let item): return namedType(item, in: model)
        case .named(let name): return name
        default: return nil
        }
    }
}
