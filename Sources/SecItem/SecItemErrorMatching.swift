public import SecItemCore

extension SecItemError {
    /// Pattern matching by status (`catch SecItemError.duplicateItem`) on any error.
    ///
    /// SecItemCore declares this match too, but `import SecItem` re-exports
    /// `SecItemError` declaration by declaration (see `Exports.swift`), and such an
    /// import does not bring a type's operators along; this one is declared where
    /// `import SecItem` finds it.
    public static func ~= (pattern: SecItemError, value: any Error) -> Bool {
        (value as? SecItemError)?.status == pattern.status
    }
}
