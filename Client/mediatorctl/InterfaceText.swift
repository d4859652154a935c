import MediatorProtocol

/// What `mediatorctl describe` prints for people: the target, then each
/// action as a signature with its params and result in
/// ``SchemaNotation``, its description, and the `$defs` its schemas name:
///
///     Notes - Keeps short notes
///     State: running, exclusive, PID(s) 4242
///
///     Actions:
///       add(text: string, tags?: [string]) -> {id: integer}
///           Add a note
///       list() -> {notes: [Note]}
///           Note = {id: integer, text: string}
///       watch(...) -> object [stream]
///       touch(...) [oneway]
///
/// `(...)`: params that are not checked, or an object without named
/// members; `[stream]` an action that answers with several responses
/// (`more`), `[oneway]` one that never answers. Pure (a `describe` result
/// in, text out); what the daemon leaves out is left out.
public enum InterfaceText {
    /// Where actions start, and their descriptions and definitions.
    static let actionIndent = 2
    static let detailIndent = actionIndent + TextLayout.step

    /// The text for a `describe` result, ending with a newline. With
    /// `width`, signatures are broken over lines and descriptions cut to fit.
    public static func render(_ target: JSONValue, width: Int?) -> String {
        var text = TargetTable.text(target["target"]).map(Output.escaped) ?? "?"
        if let description = TargetTable.text(target["description"]) { text += " - " + Output.escaped(description) }
        text += "\n"
        // The daemon's own target has neither state nor instances: no line.
        let state = TargetTable.text(target["state"])
        let instances = target["instances"]?.arrayValue ?? []
        let pids = state != nil || !instances.isEmpty ? "PID(s) " + TargetTable.pids(instances) : nil
        let facts = [state, TargetTable.text(target["mode"]), pids].compactMap { $0 }
        if !facts.isEmpty { text += "State: " + Output.escaped(facts.joined(separator: ", ")) + "\n" }
        let actions = target["actions"]?.arrayValue ?? []
        text += "\nActions:\n"
        if actions.isEmpty { text += String(repeating: " ", count: actionIndent) + "(none)\n" }
        for action in actions { text += self.action(action, width: width) }
        return text
    }

    /// One action: its signature, its description, its definitions.
    public static func action(_ action: JSONValue, width: Int?) -> String {
        // A bare name is an action without schemas.
        let spec = action.stringValue.map { JSONValue.object(["name": .string($0)]) } ?? action
        let pad = String(repeating: " ", count: actionIndent)
        var text = pad + TextLayout.render(signature(spec), column: actionIndent, indent: actionIndent, width: width) + "\n"
        let detailPad = String(repeating: " ", count: detailIndent)
        if let description = TargetTable.text(spec["description"]) {
            let shown = Output.escaped(description)
            text += detailPad + (width.map { TargetTable.truncate(shown, to: max($0 - detailIndent, 1)) } ?? shown) + "\n"
        }
        for (name, schema) in definitions(spec) {
            let piece = TextLayout.Piece.sequence([.text(SchemaNotation.name(name) + " = "), SchemaNotation.piece(schema)])
            text += detailPad + TextLayout.render(piece, column: detailIndent, indent: detailIndent, width: width) + "\n"
        }
        return text
    }

    /// `name(params) -> result [stream]`.
    public static func signature(_ spec: JSONValue) -> TextLayout.Piece {
        var parts: [TextLayout.Piece] = [.text(SchemaNotation.name(spec["name"]?.stringValue ?? "?")), params(spec["params"])]
        if let result = spec["result"], !result.isNull {
            parts += [.text(" -> "), SchemaNotation.piece(result)]
        }
        if spec["more"] == .bool(true) { parts.append(.text(" [stream]")) }
        if spec["oneway"] == .bool(true) { parts.append(.text(" [oneway]")) }
        return .sequence(parts)
    }

    /// `(a: T, b?: U)`, `()` for an object that takes nothing, `(...)` for
    /// params not described, `(T)` for a schema that is not an object of members.
    static func params(_ schema: JSONValue?) -> TextLayout.Piece {
        guard let schema, !schema.isNull, schema != .bool(true) else { return .text("(...)") }
        guard case .object(let members) = schema else { return .group(open: "(", items: [SchemaNotation.piece(schema)], close: ")") }
        if members.isEmpty { return .text("(...)") }
        guard SchemaNotation.isObject(members) else {
            return .group(open: "(", items: [SchemaNotation.piece(schema)], close: ")")
        }
        let items = SchemaNotation.memberItems(members)
        if items.isEmpty { return .text(SchemaNotation.isClosed(members) ? "()" : "(...)") }
        return .group(open: "(", items: items, close: ")")
    }

    /// The `$defs` of the params and result schemas' roots, by name (the
    /// same name in both is shown once).
    static func definitions(_ spec: JSONValue) -> [(String, JSONValue)] {
        var found: [String: JSONValue] = [:]
        for root in [spec["params"], spec["result"]] {
            for (name, schema) in root?["$defs"]?.objectValue ?? [:] where found[name] == nil { found[name] = schema }
        }
        return found.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
    }
}
