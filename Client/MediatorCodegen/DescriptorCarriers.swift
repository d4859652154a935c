/// The generated types that hold a descriptor (`"format": "fd"`), as a
/// member, an item, or through a struct they reach: not `Codable` (a
/// descriptor is not JSON) but `DescriptorCarrying`, converting with the
/// message's `DescriptorList`. Unions never hold one (interface check
/// refuses descriptors in alternatives).
struct DescriptorCarriers {
    let model: InterfaceModel
    /// The structs that hold a descriptor.
    let names: Set<String>

    init(model: InterfaceModel) throws(CodegenError) {
        self.model = model
        names = BoundChecks.structs(in: model) { Self.isDescriptor($0, in: model) }.reaching
        for case .union(let decl) in model.declarations where names.contains(decl.name) {
            throw CodegenError(
                path: decl.name, reason: "an alternative of anyOf/oneOf holds a descriptor, which generated unions cannot carry")
        }
    }

    /// Whether `type` is a descriptor, or an array of them (at any depth).
    static func isDescriptor(_ type: TypeRef, in model: InterfaceModel) -> Bool {
        switch model.resolved(type).shape {
        case .descriptor: true
        case .array(let item): isDescriptor(item, in: model)
        default: false
        }
    }

    /// Whether a value of `type` holds a descriptor.
    func carries(_ type: TypeRef) -> Bool {
        switch model.resolved(type).shape {
        case .descriptor: true
        case .array(let item): carries(item)
        case .named(let name): names.contains(name)
        default: false
        }
    }

    /// Whether an action's params or result hold a descriptor.
    func carries(_ action: ActionModel) -> Bool {
        carries(TypeRef(.named(action.paramsType))) || resultCarries(action)
    }

    /// Whether an action's result (or a partial of it) holds a descriptor.
    func resultCarries(_ action: ActionModel) -> Bool {
        carries(TypeRef(.named(action.resultType)))
    }
}
