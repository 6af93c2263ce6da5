public import Foundation
public import SecItemCore
// Its key sources and scrypt parameters are part of this backend's configuration.
@_exported public import SecItemSealedStore

extension PostgreSQLBackend {
    /// Where the shared keychain is and how it is unlocked.
    ///
    /// The connection follows libpq's own conventions, so it is configured the way
    /// `psql` is: a connection URI or `key=value` string (``connection``), and for
    /// whatever it leaves out the standard `PG*` environment variables
    /// (`PGHOST`, `PGPORT`, `PGDATABASE`, `PGUSER`, `PGSSLMODE`, `PGSSLROOTCERT`, …),
    /// `~/.pgpass` (or `PGPASSFILE`) and `pg_service.conf`. Multi-host URIs with
    /// `target_session_attrs=read-write` are how a failover pair is named.
    ///
    /// The key is the file backend's: a key file or a passphrase that every host
    /// sharing the keychain holds. Never printed: `description` redacts the
    /// passphrase and any password in the connection string.
    public struct Configuration: Sendable, CustomStringConvertible {
        /// A libpq connection URI (`postgresql://host/db?sslmode=verify-full`) or
        /// `key=value` string; `nil` uses the `PG*` environment alone.
        public var connection: String?
        /// Where the key-encryption key comes from: ``SealedStoreKeySource/keyFile(_:)``,
        /// ``SealedStoreKeySource/passphrase(_:)`` or ``SealedStoreKeySource/rawKey(_:)``.
        /// ``SealedStoreKeySource/automatic`` is refused: a generated key would
        /// be this host's alone.
        public var keySource: KeySource
        /// The database schema that holds the keychain's tables (created when missing).
        /// Letters, digits and `_`, at most 63 bytes; default `secitem`.
        public var schema: String
        /// How long connecting may take, per host, when neither ``connection`` nor
        /// `PGCONNECT_TIMEOUT` says (libpq's `connect_timeout`, whole seconds, at least 2).
        public var connectTimeout: Duration
        /// How long one statement may take: the server's `statement_timeout`, and the
        /// client's bound on waiting for any answer (a partitioned server costs at most this).
        public var statementTimeout: Duration
        /// The scrypt cost used when a passphrase-protected keychain is created or rekeyed.
        public var scryptParameters: ScryptParameters
        /// How long, in seconds, the key derived from a passphrase stays in the kernel's
        /// session key cache, so this host's next process skips scrypt (docs/key-sources.md).
        /// 0, the default here, keeps nothing; from the configuration
        /// (`SECITEM_KEY_CACHE_TIMEOUT`) the default is 300.
        public var keyCacheTimeout: Int = 0
        /// What the store's rollback evidence does (docs/postgresql.md, "Rollback
        /// evidence"): by default (``RollbackCheckMode/enforce``) a schema put back from an
        /// older dump fails every call with `errSecDecode` on each host that had seen a
        /// newer state. From `SECITEM_ROLLBACK_CHECK` (`on`, `report`, `off`) unless given.
        public var rollbackCheck: RollbackCheckMode
        /// Where this host keeps the store's high-water mark: `nil` (the default) means the
        /// key source's own storage when it has one, else ``StateDirectoryWitness`` in
        /// `$XDG_STATE_HOME/secitem/high-water` (`~/.local/state/…`).
        public var rollbackWitness: (any RollbackWitness)?
        /// The environment the state directory is found in (`nil`: the process's).
        package var environment: [String: String]?
        /// The most connections this backend opens to the server (1…256, default 8):
        /// that many calls run at once, each on its own; more wait for one to end.
        /// Made only as calls need them, so a program calling from one thread holds one.
        /// Every connection is a server process: a fleet of many hosts goes through
        /// pgbouncer (`docs/postgresql.md`, "Deployment") or keeps this small.
        public var poolSize: Int
        /// Whether statements are prepared once per connection and then run by name
        /// (default `true`, one parse per connection). Turn off behind a pooler in
        /// transaction mode that does not track prepared statements (pgbouncer before
        /// 1.21, or `max_prepared_statements = 0`): each statement is then sent with
        /// its parameters, unnamed (one message sequence, parsed each time).
        public var preparedStatements: Bool

        /// - Parameters:
        ///   - connection: A libpq URI or `key=value` string; `nil` for the `PG*` environment.
        ///   - keySource: The key every host sharing the keychain holds.
        ///   - schema: The schema of the keychain's tables.
        ///   - connectTimeout: The connect bound when the connection string sets none.
        ///   - statementTimeout: The bound on any one statement.
        ///   - rollbackCheck: What the rollback evidence does; by default what
        ///     `SECITEM_ROLLBACK_CHECK` says (`on` when unset or not understood).
        ///   - rollbackWitness: Where the high-water mark is kept (see ``rollbackWitness``).
        ///   - poolSize: The most connections at once (see ``poolSize``).
        ///   - preparedStatements: Whether statements are prepared (see ``preparedStatements``).
        public init(
            connection: String? = nil, keySource: KeySource, schema: String = "secitem",
            connectTimeout: Duration = .seconds(5), statementTimeout: Duration = .seconds(10),
            scryptParameters: ScryptParameters = .default, rollbackCheck: RollbackCheckMode? = nil,
            rollbackWitness: (any RollbackWitness)? = nil, poolSize: Int = 8,
            preparedStatements: Bool = true
        ) {
            self.connection = connection
            self.keySource = keySource
            self.schema = schema
            self.connectTimeout = connectTimeout
            self.statementTimeout = statementTimeout
            self.scryptParameters = scryptParameters
            self.rollbackCheck = rollbackCheck ?? (try? RollbackCheck.mode(ProcessInfo.processInfo.environment)) ?? .enforce
            self.rollbackWitness = rollbackWitness
            self.poolSize = min(max(poolSize, 1), 256)
            self.preparedStatements = preparedStatements
        }

        public var description: String {
            "PostgreSQL keychain \(ConnectionString.redacted(connection)), schema \(schema), \(keySource)"
        }

        /// The configuration the environment describes (no config file; the process
        /// configuration, config file included, is ``init(_:)``).
        ///
        /// | variable | meaning |
        /// |---|---|
        /// | `SECITEM_POSTGRESQL_URL` | the connection URI or `key=value` string; unset: the `PG*` variables |
        /// | `SECITEM_POSTGRESQL_SCHEMA` | the schema; default `secitem` |
        /// | `SECITEM_POSTGRESQL_STATEMENT_TIMEOUT` | seconds one statement may take; default 10 |
        /// | `SECITEM_POSTGRESQL_POOL_SIZE` | the most connections at once (1…256); default 8 |
        /// | `SECITEM_POSTGRESQL_PREPARED_STATEMENTS` | `off` behind pgbouncer in transaction mode; default `on` |
        /// | `SECITEM_POSTGRESQL_KEY_FILE` | the shared key file of this backend alone (the file backend keeps its own key) |
        /// | `SECITEM_KEY_FILE`, `CREDENTIALS_DIRECTORY`, `SECITEM_PASSPHRASE`, `SECITEM_KEY_SOURCE` | otherwise the key, as for the file backend |
        /// | `SECITEM_ROLLBACK_CHECK` | `on` (default), `report` or `off`: the rollback evidence |
        /// | `XDG_STATE_HOME` | where this host keeps the rollback evidence (`~/.local/state` when unset) |
        ///
        /// - Throws: `errSecParam` when no key file or passphrase is set (a generated
        ///   key cannot be shared), or a setting is malformed.
        public static func fromEnvironment(_ env: [String: String] = ProcessInfo.processInfo.environment)
            throws(SecItemError) -> Configuration
        {
            try Configuration(SecItemConfiguration.environmentOnly(env))
        }

        /// The PostgreSQL backend's part of a resolved process configuration: the
        /// connection (`postgresql-url`), the schema, and the file backend's key
        /// settings (``KeySources``), which must name a key file or a passphrase.
        /// - Throws: `errSecParam` when no key file or passphrase is set, or a setting is malformed.
        public init(_ settings: SecItemConfiguration) throws(SecItemError) {
            let connection = try settings.value(Settings.url)
            // Its own key file first: then the file backend keeps its own key, and
            // `secitem migrate --from file --to postgresql` opens both (docs/postgresql.md).
            if let own = try settings.value(Settings.keyFile) {
                self.init(connection: connection, keySource: .keyFile(own))
            } else {
                let source = try KeySources.resolve(settings, KeySourceContext(store: "PostgreSQL schema"))
                if source.isGenerated {
                    throw SecItemError(
                        errSecParam,
                        "the PostgreSQL backend needs the key every host shares: set \(Self.keyFileVariable) "
                            + "(or SECITEM_KEY_FILE, secitem.key in $CREDENTIALS_DIRECTORY, or SECITEM_PASSPHRASE(_FILE))")
                }
                self.init(connection: connection, keySource: source)
            }
            if let schema = try settings.value(Settings.schema) { self.schema = schema }
            keyCacheTimeout = try SessionKeyCache.timeout(settings)
            rollbackCheck = try RollbackCheck.mode(settings)
            environment = settings.environment
            if let timeout = try settings.value(Settings.statementTimeout) { statementTimeout = timeout }
            if let size = try settings.value(Settings.poolSize) { poolSize = size }
            if let prepared = try settings.value(Settings.preparedStatements) { preparedStatements = prepared }
        }

        /// The variable naming this backend's own key file.
        public static let keyFileVariable = Settings.keyFile.variable

        /// This configuration with its key source ``SealedStoreKeySource/released``.
        var released: Configuration {
            var copy = self
            copy.keySource = keySource.released
            return copy
        }
    }
}
