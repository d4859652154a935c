import MediatorProtocol

/// The bounds checks of a Python module: a dataclass with bounded members
/// checks them in `__post_init__`, so when it is built and when `from_json`
/// reads it (a member's dataclass checked its own as it was built). A value
/// out of bounds raises `mediator.MediatorError("invalid_params", ...)`.
/// The helpers are written into the module (standard library only), with
/// the daemon's meaning: `len` of a `str` counts code points, as JSON Schema
/// does, and Python compares an int with a float exactly.
extension PythonWriter {
    func writeBoundHelpers(into out: inout SourceWriter) {
        guard !boundChecks.checkingOwn.isEmpty else { return }
        let helpers = #"""
            def _out_of_bounds(path: typing.Tuple[typing.Any, ...], expected: str, found: typing.Any) -> mediator.MediatorError:
                # A value out of its schema's bounds: what the daemon answers for it.
                where = ".".join(str(part) for part in path)
                return mediator.MediatorError("invalid_params", "%s: expected %s, found %s" % (where, expected, found))


            def _check_number(value: typing.Any, path: typing.Tuple[typing.Any, ...], minimum: typing.Any = None,
                              exclusiveMinimum: typing.Any = None, maximum: typing.Any = None,
                              exclusiveMaximum: typing.Any = None) -> None:
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    return
                if minimum is not None and value < minimum:
                    raise _out_of_bounds(path, "at least %r" % minimum, value)
                if exclusiveMinimum is not None and value <= exclusiveMinimum:
                    raise _out_of_bounds(path, "more than %r" % exclusiveMinimum, value)
                if maximum is not None and value > maximum:
                    raise _out_of_bounds(path, "at most %r" % maximum, value)
                if exclusiveMaximum is not None and value >= exclusiveMaximum:
                    raise _out_of_bounds(path, "less than %r" % exclusiveMaximum, value)


            def _check_count(count: int, path: typing.Tuple[typing.Any, ...], least: typing.Optional[int],
                             most: typing.Optional[int], noun: str) -> None:
                if least is not None and count < least:
                    raise _out_of_bounds(path, "at least %d %s" % (least, noun), count)
                if most is not None and count > most:
                    raise _out_of_bounds(path, "at most %d %s" % (most, noun), count)


            def _check_length(value: typing.Any, path: typing.Tuple[typing.Any, ...], minLength: typing.Optional[int] = None,
                              maxLength: typing.Optional[int] = None) -> None:
                if isinstance(value, str):
                    _check_count(len(value), path, minLength, maxLength, "characters")


            def _check_items(value: typing.Any, path: typing.Tuple[typing.Any, ...], minItems: typing.Optional[int] = None,
                             maxItems: typing.Optional[int] = None) -> None:
                if isinstance(value, list):
                    _check_count(len(value), path, minItems, maxItems, "items")


            def _check_const(value: typing.Any, constant: typing.Any, path: typing.Tuple[typing.Any, ...]) -> None:
                # Numbers by value (1 == 1.0), but a boolean is no number.
                if value != constant or isinstance(value, bool) != isinstance(constant, bool):
                    raise _out_of_bounds(path, repr(constant), repr(value))
            """#
        out.line()
        out.line()
        for line in helpers.split(separator: "\n", omittingEmptySubsequences: false) {
            out.line(String(line))
        }
    }

    func writePostInit(_ decl: StructDecl, into out: inout SourceWriter) {
        guard boundChecks.checkingOwn.contains(decl.name) else { return }
        out.line("def __post_init__(self) -> None:")
        out.indented { out in
            for field in decl.fields {
                var type = model.resolved(field.type)
                // None where the member may be absent or null (or is passed so).
                type.nullable = type.nullable || !field.required || model.defaultLiteral(of: field) != nil
                boundCheckLines(type, "self.\(field.pythonName)", path: [PythonWriter.stringLiteral(field.jsonName)], depth: 0)
                    .forEach { out.line($0) }
            }
        }
        out.line()
    }

    /// The statements that check `value`, of `type`, against its bounds and
    /// its items' (a loop per array level); `path` as Python expressions.
    func boundCheckLines(_ type: TypeRef, _ value: String, path: [String], depth: Int) -> [String] {
        guard BoundChecks.isBounded(type, in: model) else { return [] }
        var resolved = model.resolved(type)
        if resolved.nullable {
            resolved.nullable = false
            let inner = boundCheckLines(resolved, value, path: path, depth: depth)
            return ["if \(value) is not None:"] + inner.map { "    " + $0 }
        }
        var lines: [String] = []
        let at = "(" + path.joined(separator: ", ") + (path.count == 1 ? ",)" : ")")
        if let bounds = BoundChecks.bounds(of: resolved, in: model) {
            let groups = [
                ("_check_number", ValueBounds.arguments(bounds.numbers, ValueBounds.numberKeywords, Self.jsonLiteral, separator: "=")),
                ("_check_length", ValueBounds.arguments(bounds.lengths, ValueBounds.lengthKeywords, String.init, separator: "=")),
                ("_check_items", ValueBounds.arguments(bounds.items, ValueBounds.itemKeywords, String.init, separator: "=")),
            ]
            for (helper, arguments) in groups where !arguments.isEmpty {
                lines.append("\(helper)(\(value), \(at), \(arguments))")
            }
            if let constant = bounds.constant {
                lines.append("_check_const(\(encode(resolved, value)), \(Self.jsonLiteral(constant)), \(at))")
            }
        }
        if case .array(let item) = resolved.shape {
            let inner = boundCheckLines(item, "v\(depth)", path: path + ["i\(depth)"], depth: depth + 1)
            if !inner.isEmpty {
                lines.append("for i\(depth), v\(depth) in enumerate(\(value)):")
                lines += inner.map { "    " + $0 }
            }
        }
        return lines
    }

    /// A one-line Python literal of a JSON value.
    static func jsonLiteral(_ value: JSONValue) -> String {
        switch value {
        case .null: "None"
        case .bool(let flag): flag ? "True" : "False"
        case .int, .double, .string: value.jsonText
        case .array(let items): "[" + items.map(jsonLiteral).joined(separator: ", ") + "]"
        case .object(let members):
            "{" + members.keys.sorted().map { stringLiteral($0) + ": " + jsonLiteral(members[$0] ?? .null) }
                .joined(separator: ", ") + "}"
        }
    }
}
