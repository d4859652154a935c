/// A value stored out of line, for the members of generated structs whose
/// type leads back to the struct itself (`struct Node { var next: Node? }`
/// has no finite layout; an interface may declare such a type through an
/// object property). Immutable: the struct replaces the box to change the
/// value, so it keeps value semantics.
public final class Indirect<Value> {
    /// The boxed value.
    public let value: Value

    /// Boxes `value`.
    public init(_ value: Value) {
        self.value = value
    }
}

extension Indirect: Equatable where Value: Equatable {
    /// Equal when the boxed values are (the same box is equal at once).
    public static func == (lhs: Indirect, rhs: Indirect) -> Bool {
        lhs === rhs || lhs.value == rhs.value
    }
}

extension Indirect: Sendable where Value: Sendable {}
