/// A value stored out of line, for the members of generated structs whose
/// type leads back to the struct itself (`struct Node { var next: Node? }`
/// has no finite layout; an interface may declare such a type through an
/// object property). Immutable: the struct replaces the box to change the
/// value, so it keeps value semantics.
public final class Indirect<Value> {
    public let value: Value

    public init(_ value: Value) {
        self.value = value
    }
}

extension Indirect: Equatable where Value: Equatable {
    public static func == (lhs: Indirect, rhs: Indirect) -> Bool {
        lhs === rhs || lhs.value == rhs.value
    }
}

extension Indirect: Sendable where Value: Sendable {}
