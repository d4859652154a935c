/// Which generated structs check bounds (``ValueBounds``): those with a
/// member bounded itself or through its items check it as they decode; a
/// struct's `validate()` also checks its members' structs, so it has work
/// to do when any struct it reaches does. Found once per interface,
/// backwards from the bounded structs, in time linear in the members.
struct BoundChecks {
    /// Structs with a bounded member (and unions with a bounded alternative).
    let checkingOwn: Set<String>
    /// Structs that reach (through members and items) a struct of `checkingOwn`, those included.
    let validating: Set<String>

    init(model: InterfaceModel) {
        (checkingOwn, validating) = Self.structs(in: model) { Self.isBounded($0, in: model) }
    }

    /// The structs and unions with a member (or alternative) whose type
    /// passes `test`, and those that reach one through members and items,
    /// those included: backwards from the first, in time linear in the members.
    static func structs(in model: InterfaceModel, withMember test: (TypeRef) -> Bool)
        -> (own: Set<String>, reaching: Set<String>)
    {
        var own: Set<String> = []
        var referrers: [String: [String]] = [:]
        // A union counts as a struct whose members are its alternatives.
        for declaration in model.declarations {
            let types: [TypeRef]
            switch declaration {
            case .structure(let decl): types = decl.fields.map(\.type)
            case .union(let decl): types = decl.alternatives.compactMap(\.type)
            case .enumeration, .alias: continue
            }
            for type in types {
                if test(type) { own.insert(declaration.name) }
                if let target = Self.structReached(type, in: model) {
                    referrers[target, default: []].append(declaration.name)
                }
            }
        }
        var reaching = own
        var queue = Array(own)
        while let name = queue.popLast() {
            for referrer in referrers[name] ?? [] where reaching.insert(referrer).inserted {
                queue.append(referrer)
            }
        }
        return (own, reaching)
    }

    /// The bounds that apply to a value of `type` itself (not its items).
    static func bounds(of type: TypeRef, in model: InterfaceModel) -> ValueBounds? {
        let resolved = model.resolved(type)
        return resolved.bounds?.applicable(to: resolved.shape)
    }

    /// Whether `type` or its items (at any depth) have bounds.
    static func isBounded(_ type: TypeRef, in model: InterfaceModel) -> Bool {
        if bounds(of: type, in: model) != nil { return true }
        if case .array(let item) = model.resolved(type).shape { return isBounded(item, in: model) }
        return false
    }

    /// The struct (or union) that `type` is, or holds as items.
    static func structReached(_ type: TypeRef, in model: InterfaceModel) -> String? {
        switch model.resolved(type).shape {
        case .array(let item): return structReached(item, in: model)
        case .named(let name):
            switch model.declaration(named: name) {
            case .structure?, .union?: return name
            default: return nil
            }
        default: return nil
        }
    }
}

extension BoundChecks {
    /// The bounds of a member for its doc comment: its own, then its items'
    /// (`at most 4 items; each: at most 16 characters`); nil when it has none.
    static func summary(of type: TypeRef, in model: InterfaceModel) -> String? {
        var parts: [String] = []
        var current = type
        var prefix = ""
        while true {
            if let bounds = bounds(of: current, in: model) { parts.append(prefix + bounds.summary) }
            guard case .array(let item) = model.resolved(current).shape else { break }
            current = item
            prefix += "each: "
        }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }
}
