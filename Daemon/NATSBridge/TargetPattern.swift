/// A target name or a pattern of them: `*` stands for any run of characters
/// (`Notes`, `Note*`, `*.remote`, `*`); nothing else is special.
package struct TargetPattern: Sendable, Equatable, CustomStringConvertible {
    package let text: String
    private let pieces: [Substring]

    package init(_ text: String) {
        self.text = text
        self.pieces = text.split(separator: "*", omittingEmptySubsequences: false)
    }

    package var description: String { text }

    package func matches(_ name: String) -> Bool {
        guard pieces.count > 1 else { return name == text }
        var rest = Substring(name)
        guard rest.hasPrefix(pieces[0]) else { return false }
        rest = rest.dropFirst(pieces[0].count)
        let last = pieces[pieces.count - 1]
        // The middle pieces in order, leftmost first; then the end must fit.
        for piece in pieces.dropFirst().dropLast() where !piece.isEmpty {
            guard let range = rest.firstRange(of: piece) else { return false }
            rest = rest[range.upperBound...]
        }
        return rest.count >= last.count && rest.hasSuffix(last)
    }

    /// Whether any of `patterns` matches `name`.
    package static func any(_ patterns: [TargetPattern], match name: String) -> Bool {
        patterns.contains { $0.matches(name) }
    }
}
