/// `anyOf`/`oneOf` in Python: a `typing.Union` of the alternatives, read by
/// `_read_<Name>(value)`, which tries each alternative (its JSON kind, its
/// members, its bounds): `anyOf` takes the first that reads the value,
/// `oneOf` requires exactly one; else `mediator.MediatorError`
/// `invalid_params`. Written back by `_to_json`, whatever the alternative.
extension PythonWriter {
    func unionAnnotation(_ decl: UnionDecl) -> String {
        var names = decl.alternatives.compactMap { $0.type.map(annotation) }
        if decl.alternatives.contains(where: { $0.type == nil }) { names.append("None") }
        return "typing.Union[" + names.joined(separator: ", ") + "]"
    }

    func writeUnionReaders(_ unions: [UnionDecl], into out: inout SourceWriter) {
        guard !unions.isEmpty else { return }
        out.line()
        out.line()
        out.line("# What reading a value as an alternative raises when it is not that alternative.")
        out.line("_NOT_READ = (KeyError, TypeError, ValueError, AttributeError, mediator.MediatorError)")
        out.line()
        out.line()
        out.line("def _to_json(value: typing.Any) -> typing.Any:")
        out.indented { out in
            out.line("# A union's value as JSON, whichever alternative it is.")
            out.line("if isinstance(value, enum.Enum):")
            out.indented { $0.line("return value.value") }
            out.line("if isinstance(value, list):")
            out.indented { $0.line("return [_to_json(item) for item in value]") }
            out.line("if hasattr(value, \"to_json\"):")
            out.indented { $0.line("return value.to_json()") }
            out.line("return value")
        }
        for decl in unions {
            out.line()
            out.line()
            writeUnionReader(decl, into: &out)
        }
    }

    private func writeUnionReader(_ decl: UnionDecl, into out: inout SourceWriter) {
        out.line("def _read_\(decl.name)(value: typing.Any) -> \(decl.name):")
        out.indented { out in
            let oneOf = decl.rule == .oneOf
            out.line(oneOf ? "# oneOf: exactly one alternative must read the value." : "# anyOf: the first alternative that reads the value.")
            if oneOf { out.line("matches: typing.List[typing.Any] = []") }
            for alternative in decl.alternatives {
                out.line("try:")
                out.indented { out in
                    var read = "None"
                    if let type = alternative.type {
                        var present = model.resolved(type)
                        present.nullable = false
                        if let test = kindTest(present) {
                            let allowed = model.resolved(type).nullable ? "value is None or \(test)" : test
                            out.line("if not (\(allowed)):")
                            out.indented { $0.line("raise TypeError(\"another kind of value\")") }
                        }
                        boundCheckLines(type, "value", path: ["\"value\""], depth: 0).forEach { out.line($0) }
                        read = decode(type, "value")
                    } else {
                        out.line("if value is not None:")
                        out.indented { $0.line("raise TypeError(\"not null\")") }
                    }
                    out.line(oneOf ? "matches.append(\(read))" : "return \(read)")
                }
                out.line("except _NOT_READ:")
                out.indented { $0.line("pass") }
            }
            let names = decl.alternatives.map { $0.type.map(annotation) ?? "None" }.joined(separator: ", ")
            if oneOf {
                out.line("if len(matches) == 1:")
                out.indented { $0.line("return matches[0]") }
                let expected = PythonWriter.stringLiteral("value: expected exactly one of \(names) (\(decl.name)), found %d of them")
                out.line("raise mediator.MediatorError(\"invalid_params\", \(expected) % len(matches))")
            } else {
                let expected = PythonWriter.stringLiteral("value: expected one of \(names) (\(decl.name)), found %r")
                out.line("raise mediator.MediatorError(\"invalid_params\", \(expected) % (value,))")
            }
        }
    }

    /// The test that `value` is of the JSON kind `type` reads; nil when reading it tells (an enum) or any will do.
    private func kindTest(_ type: TypeRef) -> String? {
        switch type.shape {
        case .string: return "isinstance(value, str)"
        case .integer: return "isinstance(value, int) and not isinstance(value, bool)"
        case .number: return "isinstance(value, (int, float)) and not isinstance(value, bool)"
        case .boolean: return "isinstance(value, bool)"
        case .array: return "isinstance(value, list)"
        case .any: return nil
        case .descriptor: return "isinstance(value, (mediator.FD, mediator.ReceivedFD))"
        case .named(let name):
            if case .structure? = model.declaration(named: name) { return "isinstance(value, dict)" }
            return nil
        }
    }
}
