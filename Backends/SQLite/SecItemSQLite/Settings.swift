public import SecItemCore
import SecItemSealedStore

extension SQLiteBackend {
    /// The settings the file backend reads: its file, and the key sources' (the file
    /// backend's provider declares ``all``). A new setting is one `static let` here and
    /// its line in ``all``.
    public enum Settings {
        /// `file`, `SECITEM_FILE`.
        public static let file = SecItemSetting<String>.text(
            "file", scope: "file", help: "The file backend's SQLite file.", expected: "path",
            defaultDescription: "$XDG_DATA_HOME/secitem/keychain.db")

        /// Every setting the file backend reads.
        public static var all: [SecItemSettingDeclaration] { [file.declaration] + KeySources.settings }
    }
}
