import MediatorProtocol

/// The bounds a schema puts on a value, as generated types check them: the
/// keywords by name, as written (the library's check functions take them
/// under the same labels). `interface check` has checked their form; a
/// keyword of the wrong form is left out here.
struct ValueBounds: Hashable, Sendable {
    static let numberKeywords = ["minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"]
    static let lengthKeywords = ["minLength", "maxLength"]
    static let itemKeywords = ["minItems", "maxItems"]

    /// `minimum`, `exclusiveMinimum`, `maximum`, `exclusiveMaximum` that are numbers.
    var numbers: [String: JSONValue] = [:]
    /// `minLength`, `maxLength` (Unicode code points).
    var lengths: [String: Int] = [:]
    /// `minItems`, `maxItems`.
    var items: [String: Int] = [:]
    /// `const`.
    var constant: JSONValue?

    /// The bounds of a schema object; nil when it has none.
    init?(_ members: [String: JSONValue]) {
        for keyword in Self.numberKeywords {
            if let value = members[keyword], value.doubleValue != nil { numbers[keyword] = value }
        }
        for keyword in Self.lengthKeywords + Self.itemKeywords {
            guard let count = members[keyword]?.intValue, count >= 0, let exact = Int(exactly: count) else { continue }
            if Self.lengthKeywords.contains(keyword) { lengths[keyword] = exact } else { items[keyword] = exact }
        }
        constant = members["const"]
        if isEmpty { return nil }
    }

    var isEmpty: Bool { numbers.isEmpty && lengths.isEmpty && items.isEmpty && constant == nil }

    /// The keywords that bound a value of `shape` (the daemon checks
    /// `minLength` of strings only, and so on); nil when none does.
    func applicable(to shape: TypeRef.Shape) -> ValueBounds? {
        var kept = self
        switch shape {
        case .string: (kept.numbers, kept.items) = ([:], [:])
        case .integer, .number: (kept.lengths, kept.items) = ([:], [:])
        case .boolean, .named, .descriptor: (kept.numbers, kept.lengths, kept.items) = ([:], [:], [:])
        case .array: (kept.numbers, kept.lengths) = ([:], [:])
        case .any: break
        }
        return kept.isEmpty ? nil : kept
    }

    /// `keyword: value, ...` (Swift) or `keyword=value, ...` (Python) for
    /// the present ones of `keywords`, in that order.
    static func arguments<Value>(
        _ bounds: [String: Value], _ keywords: [String], _ text: (Value) -> String, separator: String = ": "
    ) -> String {
        keywords.compactMap { keyword in bounds[keyword].map { keyword + separator + text($0) } }.joined(separator: ", ")
    }

    /// For doc comments: `>= 1, <= 100`, `at most 64 characters`, `always 2`.
    var summary: String {
        let symbols = ["minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"]
        var parts = Self.numberKeywords.compactMap { keyword in
            numbers[keyword].map { "\(symbols[keyword] ?? keyword) \($0.jsonText)" }
        }
        for (keywords, noun) in [(Self.lengthKeywords, "characters"), (Self.itemKeywords, "items")] {
            let counts = keywords == Self.lengthKeywords ? lengths : items
            if let least = counts[keywords[0]] { parts.append("at least \(least) \(noun)") }
            if let most = counts[keywords[1]] { parts.append("at most \(most) \(noun)") }
        }
        if let constant { parts.append("always " + constant.jsonText) }
        return parts.joined(separator: ", ")
    }
}
