/// Breaks the cycles that run through aliases and arrays alone (a `$defs`
/// entry `Tree` that is an array of `Tree`): the protocol allows them (an
/// array in between makes a recursive type, not a `$ref` cycle), but no
/// alias can name itself (`typealias Tree = [Tree]` does not compile,
/// `Tree = typing.List[Tree]` does not run). The reference that closes such
/// a cycle becomes free-form (`[JSONValue]`, `typing.List[typing.Any]`);
/// cycles through a struct are kept (``RecursiveMembers`` boxes them).
enum AliasCycles {
    static func broken(_ declarations: [Declaration]) -> [Declaration] {
        var aliases: [AliasDecl] = []
        var number: [String: Int] = [:]
        for case .alias(let decl) in declarations {
            number[decl.name] = aliases.count
            aliases.append(decl)
        }
        // An edge from an alias to each alias its target names, through arrays only.
        func named(_ ref: TypeRef) -> [Int] {
            switch ref.shape {
            case .array(let item): return named(item)
            case .named(let name): return number[name].map { [$0] } ?? []
            default: return []
            }
        }
        let component = RecursiveMembers.components(aliases.map { named($0.target) })
        func rewritten(_ ref: TypeRef, in owner: Int) -> TypeRef {
            switch ref.shape {
            case .array(let item): return TypeRef(.array(rewritten(item, in: owner)), nullable: ref.nullable, bounds: ref.bounds)
            case .named(let name):
                guard let target = number[name], component[target] == component[owner] else { return ref }
                return TypeRef(.any, nullable: ref.nullable)
            default: return ref
            }
        }
        return declarations.map { declaration in
            guard case .alias(var decl) = declaration, let owner = number[decl.name] else { return declaration }
            decl.target = rewritten(decl.target, in: owner)
            return .alias(decl)
        }
    }
}
