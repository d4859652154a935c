/// Text that may be broken over lines where it does not fit, as a pretty
/// printer does: a group (`{a: T, b: U}`, `(x: T)`) stays on one line when
/// it fits the width, else each of its items goes on a line of its own,
/// indented one step deeper, and the closing bracket on a line at the
/// group's indentation. Pure, for `describe`'s view of schemas.
public enum TextLayout {
    public indirect enum Piece: Equatable, Sendable {
        case text(String)
        case sequence([Piece])
        /// Items written `open item, item close`.
        case group(open: String, items: [Piece], close: String)
    }

    /// How much deeper the items of a broken group are indented.
    public static let step = 4

    /// The piece on one line.
    public static func inline(_ piece: Piece) -> String {
        switch piece {
        case .text(let text): return text
        case .sequence(let parts): return parts.map(inline).joined()
        case .group(let open, let items, let close): return open + items.map(inline).joined(separator: ", ") + close
        }
    }

    /// The piece starting at `column` on a line indented by `indent`,
    /// broken where it would pass `width` (nil: never). `trailing`
    /// characters follow it on its last line.
    public static func render(_ piece: Piece, column: Int, indent: Int, width: Int?, trailing: Int = 0) -> String {
        layout(piece, column: column, indent: indent, width: width, trailing: trailing).text
    }

    private static func layout(
        _ piece: Piece, column: Int, indent: Int, width: Int?, trailing: Int
    ) -> (text: String, end: Int) {
        let flat = inline(piece)
        if width.map({ column + flat.count + trailing <= $0 }) ?? true { return (flat, column + flat.count) }
        switch piece {
        case .text:
            return (flat, column + flat.count)
        case .group(let open, let items, let close):
            guard !items.isEmpty else { return (flat, column + flat.count) }
            let inner = indent + step
            let padding = String(repeating: " ", count: inner)
            var text = open + "\n"
            for (index, item) in items.enumerated() {
                let last = index == items.count - 1
                let line = layout(item, column: inner, indent: inner, width: width, trailing: last ? 0 : 1).text
                text += padding + line + (last ? "" : ",") + "\n"
            }
            text += String(repeating: " ", count: indent) + close
            return (text, indent + close.count)
        case .sequence(let parts):
            var text = ""
            var end = column
            for (index, part) in parts.enumerated() {
                // What must follow on the same line: the text up to the next place a line can break.
                let following = index + 1 < parts.count ? leadingWidth(parts[index + 1]) : trailing
                let placed = layout(part, column: end, indent: indent, width: width, trailing: following)
                text += placed.text
                end = placed.end
            }
            return (text, end)
        }
    }

    /// The characters of `piece` before its first possible break.
    private static func leadingWidth(_ piece: Piece) -> Int {
        switch piece {
        case .text(let text): return text.count
        case .group(let open, _, _): return open.count
        case .sequence(let parts): return parts.first.map(leadingWidth) ?? 0
        }
    }
}
