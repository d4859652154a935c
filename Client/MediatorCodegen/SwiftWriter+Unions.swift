/// `anyOf`/`oneOf` in Swift: an enum with a case per alternative, whose
/// value is the alternative's type (`case string(String)`, `case null`).
/// Reading tries each alternative, its bounds included: `anyOf` takes the
/// first that reads the value, `oneOf` requires exactly one.
extension SwiftWriter {
    func writeUnion(_ decl: UnionDecl, into out: inout SourceWriter) {
        out.comment(decl.description, prefix: "///")
        let rule =
            decl.rule == .anyOf
            ? "anyOf: the first alternative that reads the value is the case."
            : "oneOf: exactly one alternative must read the value."
        out.line("/// \(rule)")
        out.line("public enum \(decl.name): Codable, Sendable, Equatable, JSONValueConvertible {")
        out.indented { out in
            for alternative in decl.alternatives {
                let name = Naming.swiftEscaped(alternative.swiftName)
                out.line(alternative.type.map { "case \(name)(\(type($0)))" } ?? "case \(name)")
            }
            out.line()
            writeUnionReading(decl, into: &out)
            out.line()
            out.line("public init(from decoder: any Decoder) throws {")
            out.indented { $0.line("try self.init(jsonValue: JSONValue(from: decoder))") }
            out.line("}")
            out.line()
            out.line("public func encode(to encoder: any Encoder) throws {")
            out.indented { $0.line("try jsonValue.encode(to: encoder)") }
            out.line("}")
            out.line()
            writeUnionSwitch(decl, into: &out, head: "public var jsonValue: JSONValue {", null: ".null") { _ in
                ["value.jsonValue"]
            }
            out.line()
            writeUnionSwitch(
                decl, into: &out, head: "public func encodeJSON(into output: inout [UInt8]) {",
                null: "output.append(contentsOf: \"null\".utf8)"
            ) { _ in ["value.encodeJSON(into: &output)"] }
            guard boundChecks.validating.contains(decl.name) else { return }
            out.line()
            writeUnionSwitch(
                decl, into: &out, head: "public func validate() throws(JSONConversionError) {", null: "break"
            ) { type in
                var lines = boundCheckLines(type, "value", path: [], depth: 0)
                if let target = BoundChecks.structReached(type, in: model), boundChecks.validating.contains(target) {
                    lines.append("try JSONConversion.validate(value, at: [])")
                }
                return lines
            }
        }
        out.line("}")
    }

    /// `init(jsonValue:)`, and a reading function per alternative with a value.
    private func writeUnionReading(_ decl: UnionDecl, into out: inout SourceWriter) {
        let names = decl.alternatives.map { $0.type.map { baseType($0) + ($0.nullable ? "?" : "") } ?? "null" }
        let listed = names.joined(separator: ", ")
        out.line("public init(jsonValue: JSONValue) throws(JSONConversionError) {")
        out.indented { out in
            if decl.rule == .oneOf { out.line("var matches: [Self] = []") }
            for (index, alternative) in decl.alternatives.enumerated() {
                let name = Naming.swiftEscaped(alternative.swiftName)
                let found: String
                let test: String
                if alternative.type == nil {
                    test = "if case .null = jsonValue"
                    found = ".\(name)"
                } else {
                    test = "if let value = try? Self.read\(index)(jsonValue)"
                    found = ".\(name)(value)"
                }
                out.line(decl.rule == .oneOf ? "\(test) { matches.append(\(found)) }" : "\(test) { self = \(found); return }")
            }
            if decl.rule == .oneOf {
                out.line("guard matches.count == 1, let match = matches.first else {")
                out.indented { out in
                    let expected = Self.stringLiteral("exactly one of \(listed) (\(decl.name))")
                    out.line("let found = matches.isEmpty ? JSONConversionError.sample(jsonValue) : \"\\(matches.count) of them\"")
                    out.line("throw JSONConversionError(path: [], expected: \(expected), found: found)")
                }
                out.line("}")
                out.line("self = match")
            } else {
                out.line("throw JSONConversionError(expected: \(Self.stringLiteral("one of \(listed) (\(decl.name))")), got: jsonValue)")
            }
        }
        out.line("}")
        for (index, alternative) in decl.alternatives.enumerated() {
            guard let type = alternative.type else { continue }
            out.line()
            out.line("private static func read\(index)(_ jsonValue: JSONValue) throws(JSONConversionError) -> \(self.type(type)) {")
            out.indented { out in
                let checks = boundCheckLines(type, "value", path: [], depth: 0)
                out.line("\(checks.isEmpty ? "" : "let value = ")try \(self.type(type)).init(jsonValue: jsonValue)")
                checks.forEach { out.line($0) }
                if !checks.isEmpty { out.line("return value") }
            }
            out.line("}")
        }
    }

    /// `head`, then a `switch self` with a case per alternative: `null` for
    /// the one without a value, `body(type)` for the others (bound to
    /// `value`; no lines: nothing to do).
    private func writeUnionSwitch(
        _ decl: UnionDecl, into out: inout SourceWriter, head: String, null: String, body: (TypeRef) -> [String]
    ) {
        out.line(head)
        out.indented { out in
            out.line("switch self {")
            for alternative in decl.alternatives {
                let name = Naming.swiftEscaped(alternative.swiftName)
                guard let type = alternative.type else {
                    out.line("case .\(name): \(null)")
                    continue
                }
                let lines = body(type)
                if lines.isEmpty {
                    out.line("case .\(name): break")
                } else if lines.count == 1 {
                    out.line("case .\(name)(let value): \(lines[0])")
                } else {
                    out.line("case .\(name)(let value):")
                    out.indented { out in lines.forEach { out.line($0) } }
                }
            }
            out.line("}")
        }
        out.line("}")
    }
}
