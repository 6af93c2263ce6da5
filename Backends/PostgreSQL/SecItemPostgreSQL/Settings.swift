public import SecItemCore
import SecItemSealedStore

extension PostgreSQLBackend {
    /// The settings the PostgreSQL backend reads: its own, and the key sources' (its
    /// provider declares ``all``). A new setting is one `static let` here and its line
    /// in ``all``.
    public enum Settings {
        /// `postgresql-url`, `SECITEM_POSTGRESQL_URL` (may hold a password: a secret).
        public static let url = SecItemSetting<String>.text(
            "postgresql-url", scope: "postgresql", help: "The libpq connection URI or key=value string (the password belongs in ~/.pgpass); unset: the PG* variables.",
            expected: "URI or key=value string", isSecret: true)
        /// `postgresql-schema`, `SECITEM_POSTGRESQL_SCHEMA`.
        public static let schema = SecItemSetting<String>.text(
            "postgresql-schema", scope: "postgresql", help: "The schema of the keychain's tables (created when missing).",
            expected: "letters, digits and _, at most 63 bytes", default: "secitem")
        /// `postgresql-statement-timeout`, `SECITEM_POSTGRESQL_STATEMENT_TIMEOUT`.
        public static let statementTimeout = SecItemSetting<Duration>.seconds(
            "postgresql-statement-timeout", scope: "postgresql",
            help: "How long one statement may take: the server's statement_timeout and the client's bound on any answer.",
            range: 0...86_400, default: .seconds(10))
        /// `postgresql-key-file`, `SECITEM_POSTGRESQL_KEY_FILE`.
        public static let keyFile = SecItemSetting<String>.text(
            "postgresql-key-file", scope: "postgresql",
            help: "The shared key file of this backend alone (the file backend keeps its own key); else the key sources' settings, which must not give the generated key file.", expected: "path")

        /// `postgresql-pool-size`, `SECITEM_POSTGRESQL_POOL_SIZE`.
        public static let poolSize = SecItemSetting<Int>(
            SecItemSettingDeclaration(
                key: "postgresql-pool-size", scope: "postgresql",
                help: "The most connections a process opens to the server at once (made as calls need them).",
                expected: "a number of connections, 1 to 256", defaultDescription: "8"),
            default: 8, parse: { Int($0).flatMap { (1...256).contains($0) ? $0 : nil } })
        /// `postgresql-prepared-statements`, `SECITEM_POSTGRESQL_PREPARED_STATEMENTS`.
        public static let preparedStatements = SecItemSetting<Bool>(
            SecItemSettingDeclaration(
                key: "postgresql-prepared-statements", scope: "postgresql",
                help: "Whether statements are prepared; off sends them unnamed and leaves session settings alone (pgbouncer in transaction mode).",
                expected: "on or off", defaultDescription: "on"),
            default: true,
            parse: { text in
                switch text.lowercased() {
                case "on", "true", "yes", "1": return true
                case "off", "false", "no", "0": return false
                default: return nil
                }
            })

        /// Every setting the PostgreSQL backend reads.
        public static var all: [SecItemSettingDeclaration] {
            [url, schema, keyFile].map(\.declaration)
                + [statementTimeout.declaration, poolSize.declaration, preparedStatements.declaration] + KeySources.settings
        }
    }
}
