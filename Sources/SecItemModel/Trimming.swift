extension StringProtocol {
    /// The text without leading and trailing spaces: what
    /// `trimmingCharacters(in: .whitespaces)` removes (CoreFoundation's whitespace set:
    /// Unicode's space separators, Zs, plus U+0009 and U+200B), without that call's
    /// round trip through `NSString`, which the command paid on every start for the
    /// access groups and the config file's lines.
    package func trimmingSpaces() -> String {
        func isSpace(_ scalar: Unicode.Scalar) -> Bool {
            scalar == "\t" || scalar == "\u{200B}" || scalar.properties.generalCategory == .spaceSeparator
        }
        let text = String(self)
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !isSpace($0) }),
            let last = scalars.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(scalars[first...last])
    }
}
