import MediatorProtocol

/// The structs and enums of an interface: Codable with explicit keys, and
/// `JSONValueConvertible` by the same rules.
extension SwiftWriter {
    /// Names a CodingKeys case may not take: CodingKey's and RawRepresentable's own members.
    static let codingKeyReserved: Set<String> = ["stringValue", "intValue", "rawValue", "hashValue", "init", "self"]

    func writeStruct(_ decl: StructDecl, into out: inout SourceWriter) {
        out.comment(decl.description, prefix: "///")
        // A descriptor is no JSON: a struct holding one converts with the message's DescriptorList only.
        let carrying = carriers.names.contains(decl.name)
        out.line("public struct \(decl.name): "
            + (carrying ? "Sendable, DescriptorCarrying {" : "Codable, Sendable, Equatable, JSONValueConvertible {"))
        out.indented { out in
            if decl.fields.isEmpty {
                out.line("public init() {}")
                out.line()
                writeConversion(decl, into: &out)
                return
            }
            for field in decl.fields {
                out.comment(field.description, prefix: "///")
                if let bounds = BoundChecks.summary(of: field.type, in: model) {
                    out.line("/// Bounds: \(bounds) (checked by `validate()` and when decoded).")
                }
                writeProperty(field, of: decl, into: &out)
            }
            out.line()
            let parameters = decl.fields.map { field in
                let label = Naming.swiftEscaped(field.swiftName)
                let local = parameterName(field)
                let initial = model.defaultLiteral(of: field).map(Self.literal) ?? (field.required ? nil : "nil")
                return (label == local ? label : "\(label) \(local)") + ": \(memberType(field))"
                    + (initial.map { " = " + $0 } ?? "")
            }
            out.line("public init(\(parameters.joined(separator: ", "))) {")
            out.indented { out in
                for field in decl.fields {
                    out.line(assignment(field, of: decl, parameterName(field)))
                }
            }
            out.line("}")
            out.line()
            if carrying {
                writeConversion(decl, into: &out)
                return
            }
            out.line("private enum CodingKeys: String, CodingKey {")
            out.indented { out in
                for field in decl.fields {
                    out.line("case \(codingKey(field)) = \(Self.stringLiteral(field.jsonName))")
                }
            }
            out.line("}")
            out.line()
            out.line("public init(from decoder: any Decoder) throws {")
            out.indented { out in
                out.line("let container = try decoder.container(keyedBy: CodingKeys.self)")
                for field in decl.fields {
                    let base = baseType(field.type)
                    let call: String
                    switch presence(field) {
                    case .optional, .defaulted: call = "decodeIfPresent(\(base).self"
                    // Required but nullable: the member must be there, null or not.
                    case .requiredNullable: call = "decode(Optional<\(base)>.self"
                    case .required: call = "decode(\(base).self"
                    }
                    out.line(assignment(
                        field, of: decl, "try container.\(call), forKey: .\(codingKey(field)))" + fallback(field)))
                }
                if boundChecks.checkingOwn.contains(decl.name) { out.line("try checkOwnBounds()") }
            }
            out.line("}")
            out.line()
            out.line("public func encode(to encoder: any Encoder) throws {")
            out.indented { out in
                out.line("var container = encoder.container(keyedBy: CodingKeys.self)")
                for field in decl.fields {
                    let name = Naming.swiftEscaped(field.swiftName)
                    // Required members are always written (a nil nullable one as null), and so are defaulted ones.
                    let call = isAlwaysWritten(field) ? "encode" : "encodeIfPresent"
                    out.line("try container.\(call)(self.\(name), forKey: .\(codingKey(field)))")
                }
            }
            out.line("}")
            out.line()
            writeConversion(decl, into: &out)
        }
        out.line("}")
    }

    /// `init(jsonValue:)` and `jsonValue`: the Codable rules above, member by
    /// member, without an encoder or decoder. For a struct that holds a
    /// descriptor, `init(jsonValue:descriptors:)` (and `decode(from:descriptors:)`,
    /// DescriptorCarrying's) and `jsonValue(collecting:)` by the same rules,
    /// the members that hold one converted with the list.
    func writeConversion(_ decl: StructDecl, into out: inout SourceWriter) {
        let carrying = carriers.names.contains(decl.name)
        if carrying {
            out.line("public static func decode(from jsonValue: JSONValue, descriptors: DescriptorList) throws(JSONConversionError) -> Self {")
            out.indented { $0.line("try Self(jsonValue: jsonValue, descriptors: descriptors)") }
            out.line("}")
            out.line()
        }
        out.line(carrying
            ? "public init(jsonValue: JSONValue, descriptors: DescriptorList) throws(JSONConversionError) {"
            : "public init(jsonValue: JSONValue) throws(JSONConversionError) {")
        out.indented { out in
            let members = decl.fields.isEmpty ? "_" : "let members"
            out.line("\(members) = try JSONConversion.members(jsonValue, of: \(Self.stringLiteral(decl.name)))")
            for field in decl.fields {
                // The JSONConversion (and DescriptorList) helpers are named as the cases.
                let helper = presence(field) == .defaulted ? Presence.optional : presence(field)
                let converter = carriers.carries(field.type) ? "descriptors" : "JSONConversion"
                out.line(assignment(
                    field, of: decl,
                    "try \(converter).\(helper)(members, \(Self.stringLiteral(field.jsonName)))" + fallback(field)))
            }
            if boundChecks.checkingOwn.contains(decl.name) { out.line("try checkOwnBounds()") }
        }
        out.line("}")
        out.line()
        out.line(carrying
            ? "public func jsonValue(collecting descriptors: inout DescriptorList) -> JSONValue {"
            : "public var jsonValue: JSONValue {")
        out.indented { out in
            guard !decl.fields.isEmpty else {
                out.line(".object([:])")
                return
            }
            out.line("var members: [String: JSONValue] = [:]")
            for field in decl.fields {
                let key = Self.stringLiteral(field.jsonName)
                let conversion = carriers.carries(field.type) ? ".jsonValue(collecting: &descriptors)" : ".jsonValue"
                writeMember(field, into: &out) { value in ["members[\(key)] = \(value)\(conversion)"] }
            }
            out.line("return .object(members)")
        }
        out.line("}")
        if !carrying {
            out.line()
            writeEncodeJSON(decl, into: &out)
        }
        writeValidation(decl, into: &out)
    }

    /// `validate()` (the members' bounds, and their structs') and
    /// `checkOwnBounds()` (the members' bounds only: what decoding checks,
    /// since a member's struct checked its own as it decoded).
    func writeValidation(_ decl: StructDecl, into out: inout SourceWriter) {
        guard boundChecks.validating.contains(decl.name) else { return }
        let checksOwn = boundChecks.checkingOwn.contains(decl.name)
        out.line()
        out.line("public func validate() throws(JSONConversionError) {")
        out.indented { out in
            if checksOwn { out.line("try checkOwnBounds()") }
            for field in decl.fields {
                guard let target = BoundChecks.structReached(field.type, in: model),
                    boundChecks.validating.contains(target)
                else { continue }
                let name = Naming.swiftEscaped(field.swiftName)
                out.line("try JSONConversion.validate(self.\(name), at: [\(Self.stringLiteral(field.jsonName))])")
            }
        }
        out.line("}")
        guard checksOwn else { return }
        out.line()
        out.line("private func checkOwnBounds() throws(JSONConversionError) {")
        out.indented { out in
            for field in decl.fields {
                var type = field.type
                // The member as stored: optional when Swift has it so.
                type.nullable = memberType(field).hasSuffix("?")
                let name = Naming.swiftEscaped(field.swiftName)
                boundCheckLines(type, "self.\(name)", path: [Self.stringLiteral(field.jsonName)], depth: 0)
                    .forEach { out.line($0) }
            }
        }
        out.line("}")
    }

    /// The statements that check `value`, of `type`, against its bounds and
    /// its items' (a loop per array level); `path` is its path as Swift expressions.
    func boundCheckLines(_ type: TypeRef, _ value: String, path: [String], depth: Int) -> [String] {
        guard BoundChecks.isBounded(type, in: model) else { return [] }
        let resolved = model.resolved(type)
        if resolved.nullable {
            var present = type
            present.nullable = false
            let inner = boundCheckLines(present, "value\(depth)", path: path, depth: depth + 1)
            return ["if let value\(depth) = \(value) {"] + inner.map { "    " + $0 } + ["}"]
        }
        var lines: [String] = []
        let at = "at: [" + path.joined(separator: ", ") + "]"
        if let bounds = BoundChecks.bounds(of: resolved, in: model) {
            let isAny = resolved.shape == .any
            if !bounds.numbers.isEmpty {
                let arguments = ValueBounds.arguments(bounds.numbers, ValueBounds.numberKeywords, \.jsonText)
                let subject = isAny ? value : value + ".jsonValue"
                lines.append("try JSONConversion.checkNumber(\(subject), \(arguments), \(at))")
            }
            if !bounds.lengths.isEmpty {
                let arguments = ValueBounds.arguments(bounds.lengths, ValueBounds.lengthKeywords, String.init)
                lines.append(isAny
                    ? "if case .string(let text) = \(value) { try JSONConversion.checkLength(text, \(arguments), \(at)) }"
                    : "try JSONConversion.checkLength(\(value), \(arguments), \(at))")
            }
            if !bounds.items.isEmpty {
                let arguments = ValueBounds.arguments(bounds.items, ValueBounds.itemKeywords, String.init)
                lines.append(isAny
                    ? "if case .array(let items) = \(value) { try JSONConversion.checkItems(items.count, \(arguments), \(at)) }"
                    : "try JSONConversion.checkItems(\(value).count, \(arguments), \(at))")
            }
            if let constant = bounds.constant {
                lines.append("try JSONConversion.checkConst(\(value), \(Self.jsonLiteral(constant)), \(at))")
            }
        }
        if case .array(let item) = resolved.shape {
            let inner = boundCheckLines(item, "item\(depth)", path: path + ["String(index\(depth))"], depth: depth + 1)
            if !inner.isEmpty {
                lines.append("for (index\(depth), item\(depth)) in \(value).enumerated() {")
                lines += inner.map { "    " + $0 }
                lines.append("}")
            }
        }
        return lines
    }

    /// A Swift literal of type `JSONValue` (which is expressible by every literal).
    static func jsonLiteral(_ value: JSONValue) -> String {
        switch value {
        case .null: "nil"
        case .bool(let flag): flag ? "true" : "false"
        case .int, .double: value.jsonText
        case .string(let text): stringLiteral(text)
        case .array(let items): "[" + items.map(jsonLiteral).joined(separator: ", ") + "]"
        case .object(let members):
            members.isEmpty
                ? "[:]"
                : "[" + members.keys.sorted().map { stringLiteral($0) + ": " + jsonLiteral(members[$0] ?? .null) }
                    .joined(separator: ", ") + "]"
        }
    }

    /// `encodeJSON(into:)`: the text `jsonValue` encodes to, written
    /// directly: members in JSONValue's order (sorted by name, as its
    /// encoder sorts them), each name written as JSON text at generation time.
    func writeEncodeJSON(_ decl: StructDecl, into out: inout SourceWriter) {
        out.line("public func encodeJSON(into output: inout [UInt8]) {")
        out.indented { out in
            guard !decl.fields.isEmpty else {
                out.line("output.append(contentsOf: \"{}\".utf8)")
                return
            }
            out.line("var members = JSONConversion.ObjectMembers()")
            out.line("output.append(UInt8(ascii: \"{\"))")
            for field in decl.fields.sorted(by: { $0.jsonName < $1.jsonName }) {
                let prefix = Self.stringLiteral(JSONValue.string(field.jsonName).jsonText + ":")
                writeMember(field, into: &out) { value in
                    ["members.next(\(prefix), into: &output)", "\(value).encodeJSON(into: &output)"]
                }
            }
            out.line("output.append(UInt8(ascii: \"}\"))")
        }
        out.line("}")
    }

    /// The lines that write one member, given the expression of its value:
    /// `self.name` when it is always written (a nullable one as `null`), and
    /// inside `if let value = self.name` when it is left out while `nil`
    /// (the Codable form's `encodeIfPresent`).
    func writeMember(_ field: Field, into out: inout SourceWriter, _ lines: (String) -> [String]) {
        let name = Naming.swiftEscaped(field.swiftName)
        if isAlwaysWritten(field) {
            lines("self.\(name)").forEach { out.line($0) }
            return
        }
        let body = lines("value")
        if body.count == 1 {
            out.line("if let value = self.\(name) { \(body[0]) }")
            return
        }
        out.line("if let value = self.\(name) {")
        out.indented { out in body.forEach { out.line($0) } }
        out.line("}")
    }

    /// `public var name: T`; for a member stored out of line, a computed
    /// property over `private var _name: Indirect<T>`, which the inits set.
    func writeProperty(_ field: Field, of decl: StructDecl, into out: inout SourceWriter) {
        let name = Naming.swiftEscaped(field.swiftName)
        guard isIndirect(field, of: decl) else {
            out.line("public var \(name): \(memberType(field))")
            return
        }
        let storage = indirectStorage(field)
        out.line("public var \(name): \(memberType(field)) {")
        out.indented { out in
            out.line("get { \(storage).value }")
            out.line("set { \(storage) = Indirect(newValue) }")
        }
        out.line("}")
        out.line("private var \(storage): Indirect<\(memberType(field))>")
    }

    /// The statement of an init that sets `field` to `value`.
    func assignment(_ field: Field, of decl: StructDecl, _ value: String) -> String {
        isIndirect(field, of: decl)
            ? "self.\(indirectStorage(field)) = Indirect(\(value))"
            : "self.\(Naming.swiftEscaped(field.swiftName)) = \(value)"
    }

    func isIndirect(_ field: Field, of decl: StructDecl) -> Bool {
        indirectMembers.contains(RecursiveMembers.Member(owner: decl.name, jsonName: field.jsonName))
    }

    /// `_next`: member names never start with `_` but before a digit (`_2fa`),
    /// so this takes no other member's name.
    func indirectStorage(_ field: Field) -> String {
        "_" + field.swiftName
    }

    /// The init parameter's local name: a parameter named `self` would hide `self`.
    func parameterName(_ field: Field) -> String {
        field.swiftName == "self" ? "selfValue" : Naming.swiftEscaped(field.swiftName)
    }

    /// How a member must appear in the JSON (the decisions at the top of this
    /// file). `defaulted`: optional, with a default the member takes when absent.
    enum Presence: String {
        case required, requiredNullable, optional, defaulted
    }

    func presence(_ field: Field) -> Presence {
        if !field.required { return model.defaultLiteral(of: field) == nil ? .optional : .defaulted }
        return model.resolved(field.type).nullable ? .requiredNullable : .required
    }

    /// Written even when it holds its default: a defaulted member is never nil.
    func isAlwaysWritten(_ field: Field) -> Bool {
        field.required || presence(field) == .defaulted
    }

    /// ` ?? default` after the decoding of a defaulted member.
    func fallback(_ field: Field) -> String {
        guard presence(field) == .defaulted, let literal = model.defaultLiteral(of: field) else { return "" }
        return " ?? " + Self.literal(literal)
    }

    func memberType(_ field: Field) -> String {
        let base = baseType(field.type)
        switch presence(field) {
        case .required, .defaulted: return base
        case .requiredNullable, .optional: return base + "?"
        }
    }

    /// The Swift literal of a default (the member's type gives enum cases theirs).
    static func literal(_ value: DefaultLiteral) -> String {
        switch value {
        case .string(let text): stringLiteral(text)
        case .integer(let number): String(number)
        case .number(let number): number.jsonText
        case .boolean(let flag): flag ? "true" : "false"
        case .enumCase(_, let item): "." + Naming.swiftEscaped(item.swiftName)
        case .array(let items): "[" + items.map(literal).joined(separator: ", ") + "]"
        }
    }

    func codingKey(_ field: Field) -> String {
        Self.codingKeyReserved.contains(field.swiftName)
            ? field.swiftName + "Key" : Naming.swiftEscaped(field.swiftName)
    }

    func writeEnum(_ decl: EnumDecl, into out: inout SourceWriter) {
        out.comment(decl.description, prefix: "///")
        out.line("public enum \(decl.name): String, Codable, Sendable, Equatable, CaseIterable, JSONValueConvertible {")
        out.indented { out in
            for item in decl.cases {
                out.line("case \(Naming.swiftEscaped(item.swiftName)) = \(Self.stringLiteral(item.value))")
            }
            out.line()
            out.line("public init(jsonValue: JSONValue) throws(JSONConversionError) {")
            out.indented { out in
                out.line("guard case .string(let text) = jsonValue, let value = Self(rawValue: text) else {")
                out.indented { out in
                    let values = decl.cases.map { JSONValue.string($0.value).jsonText }.joined(separator: ", ")
                    out.line("throw JSONConversionError(expected: \(Self.stringLiteral("one of \(values) (\(decl.name))")), got: jsonValue)")
                }
                out.line("}")
                out.line("self = value")
            }
            out.line("}")
            out.line()
            out.line("public var jsonValue: JSONValue { .string(rawValue) }")
            out.line()
            out.line("public func encodeJSON(into output: inout [UInt8]) { JSONValue.encodeString(rawValue, into: &output) }")
        }
        out.line("}")
    }
}
