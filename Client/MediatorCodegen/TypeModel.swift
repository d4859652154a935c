import MediatorProtocol

/// The type of a value, as both generators need it.
struct TypeRef: Hashable, Sendable {
    indirect enum Shape: Hashable, Sendable {
        case string, integer, number, boolean
        /// Free-form: `JSONValue` in Swift, `typing.Any` in Python.
        case any
        /// A file descriptor sent with the message (`"format": "fd"`, the
        /// value `{"$fd": I}`): `OwnedFileDescriptor` in Swift,
        /// `mediator.FD`/`mediator.ReceivedFD` in Python.
        case descriptor
        case array(TypeRef)
        /// A declaration of the model (struct, enum or alias), by type name.
        case named(String)
    }

    var shape: Shape
    /// JSON `null` is allowed (a type list with `"null"`).
    var nullable: Bool
    /// What the schema bounds a value of this type to (an array's item
    /// bounds are its item type's).
    var bounds: ValueBounds?

    init(_ shape: Shape, nullable: Bool = false, bounds: ValueBounds? = nil) {
        self.shape = shape
        self.nullable = nullable
        self.bounds = bounds
    }
}

/// One member of an object schema.
struct Field: Sendable {
    var jsonName: String
    var swiftName: String
    var pythonName: String
    var type: TypeRef
    /// Listed in the parent's `required`: absence is an error.
    var required: Bool
    var description: String?
    /// The schema's `default`, as written; ``InterfaceModel/defaultLiteral(of:)``
    /// says whether the generators can write it.
    var defaultValue: JSONValue? = nil
}

struct StructDecl: Sendable {
    var name: String
    var description: String?
    /// Sorted by JSON name.
    var fields: [Field]
}

struct EnumDecl: Sendable {
    struct Case: Sendable {
        var value: String
        var swiftName: String
        var pythonName: String
    }

    var name: String
    var description: String?
    var cases: [Case]
}

/// A name for another type: a `$defs` entry or a params/result schema that is
/// not an object with properties (`typealias WatchResult = JSONValue`).
struct AliasDecl: Sendable {
    var name: String
    var description: String?
    var target: TypeRef
}

/// A schema with `anyOf` or `oneOf`: one case per alternative.
struct UnionDecl: Sendable {
    enum Rule: String, Sendable {
        /// The first alternative that reads the value is the case.
        case anyOf
        /// Exactly one alternative must read the value.
        case oneOf
    }

    struct Alternative: Sendable {
        var swiftName: String
        /// nil for an alternative that only allows `null` (a case without a value).
        var type: TypeRef?
    }

    var name: String
    var description: String?
    var rule: Rule
    var alternatives: [Alternative]
}

enum Declaration: Sendable {
    case structure(StructDecl)
    case enumeration(EnumDecl)
    case alias(AliasDecl)
    case union(UnionDecl)

    var name: String {
        switch self {
        case .structure(let decl): decl.name
        case .enumeration(let decl): decl.name
        case .alias(let decl): decl.name
        case .union(let decl): decl.name
        }
    }
}

struct ActionModel: Sendable {
    var name: String
    var description: String?
    var swiftName: String
    var pythonName: String
    /// The names of the params and result types (always declared).
    var paramsType: String
    var resultType: String
    /// No params schema: the method's params argument may be left out.
    var paramsFreeForm: Bool
    var more: Bool
    var oneway: Bool
}

/// Everything the generators write, built from one interface file.
struct InterfaceModel: Sendable {
    var target: String
    var description: String?
    /// The interface as embedded in the output: only `target`, `description`
    /// and `actions` (bare names in object form), not what `describe` adds.
    var embedded: JSONValue
    var actions: [ActionModel]
    /// In the order of creation: `$defs` first, then each action's types.
    let declarations: [Declaration]
    var typeNames: TypeNames
    /// Where each name is declared in `declarations`: the generators look a
    /// type up for every member that names one, so a scan would make
    /// generation quadratic in the number of types.
    private let declarationIndex: [String: Int]

    init(
        target: String, description: String?, embedded: JSONValue, actions: [ActionModel],
        declarations: [Declaration], typeNames: TypeNames
    ) {
        self.target = target
        self.description = description
        self.embedded = embedded
        self.actions = actions
        self.declarations = declarations
        self.typeNames = typeNames
        // Names are unique (NameAllocator); were one not, the first would win, as a scan would find it.
        declarationIndex = Dictionary(
            declarations.enumerated().map { ($0.element.name, $0.offset) }, uniquingKeysWith: { first, _ in first })
    }

    struct TypeNames: Sendable {
        var client: String
        var service: String
        var interface: String
    }

    func declaration(named name: String) -> Declaration? {
        declarationIndex[name].map { declarations[$0] }
    }

    /// `type` with aliases replaced by what they name (nullability kept).
    func resolved(_ type: TypeRef) -> TypeRef {
        var current = type
        var seen: Set<String> = []
        while case .named(let name) = current.shape, case .alias(let alias)? = declaration(named: name),
            seen.insert(name).inserted
        {
            // A `$ref` has no bounds of its own (interface check): the alias's are the ones.
            current = TypeRef(
                alias.target.shape, nullable: current.nullable || alias.target.nullable,
                bounds: current.bounds ?? alias.target.bounds)
        }
        return current
    }
}
