extension Schema {
    /// An `enum` keyword, read once at `register`: its values as a set, so
    /// that checking a value costs about the value's size, whatever the
    /// size of the enum (a linear scan of a few thousand values per array
    /// element held up the broker's loop for seconds, issue 23).
    ///
    /// Membership keeps JSON Schema's meaning, ``Schema/sameValue(_:_:)``:
    /// numbers compare by value (`1` is `1.0`), so a number hashes as its
    /// exact integer when it has one.
    struct AllowedValues: Sendable {
        /// The values as given, in order.
        let values: [JSONValue]
        /// What a value that is none of them is told: the first
        /// ``maxListedValues`` values, then how many more, so that the
        /// message does not grow with the enum.
        let expectation: String
        private let members: Set<Member>
        /// The ``Kind`` bits of the values: a value of another kind is
        /// refused without being hashed.
        private let kinds: UInt8

        /// How many values a refusal lists.
        static let maxListedValues = 10

        /// `expectation` replaces the list of values in a refusal (`const` says `expected 3`).
        init(_ values: [JSONValue], expectation: String? = nil) {
            self.values = values
            self.members = Set(values.map { Member(value: $0) })
            self.kinds = values.reduce(0) { $0 | Kind(of: $1).bit }
            if let expectation {
                self.expectation = expectation
            } else {
                var listed = values.prefix(Self.maxListedValues).map(render).joined(separator: ",")
                if values.count > Self.maxListedValues { listed += ", … and \(values.count - Self.maxListedValues) more" }
                self.expectation = "expected one of [\(listed)]"
            }
        }

        func contains(_ value: JSONValue) -> Bool {
            kinds & Kind(of: value).bit != 0 && members.contains(Member(value: value))
        }

        /// A value whose equality is ``Schema/sameValue(_:_:)`` and whose
        /// hash agrees with it.
        private struct Member: Hashable, Sendable {
            let value: JSONValue

            static func == (lhs: Member, rhs: Member) -> Bool { sameValue(lhs.value, rhs.value) }

            func hash(into hasher: inout Hasher) { Self.combine(value, into: &hasher) }

            /// What a value contributes to the hash before its elements, if any.
            private enum Head: Hashable {
                case null
                case bool(Bool)
                case integer(Int64)
                case fraction(Double)
                case string(String)
                case array(count: Int)
                case object(count: Int)
            }

            private static func combine(_ value: JSONValue, into hasher: inout Hasher) {
                switch value {
                case .null: hasher.combine(Head.null)
                case .bool(let flag): hasher.combine(Head.bool(flag))
                case .int(let number): hasher.combine(Head.integer(number))
                case .double(let number): hasher.combine(exactInteger(number).map(Head.integer) ?? Head.fraction(number))
                case .string(let text): hasher.combine(Head.string(text))
                case .array(let items):
                    hasher.combine(Head.array(count: items.count))
                    for item in items { combine(item, into: &hasher) }
                case .object(let members):
                    // Members come in no particular order: combine their
                    // hashes with an order-free operation, as Dictionary does.
                    hasher.combine(Head.object(count: members.count))
                    var mixed = 0
                    for (name, member) in members {
                        var memberHasher = Hasher()
                        memberHasher.combine(name)
                        combine(member, into: &memberHasher)
                        mixed ^= memberHasher.finalize()
                    }
                    hasher.combine(mixed)
                }
            }
        }
    }
}
