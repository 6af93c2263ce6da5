import Foundation
public import SecItemCore
public import SecItemSealedStore

/// A keychain shared by many processes on many machines: the encrypted file
/// backend's sealed rows, kept in PostgreSQL.
///
/// Every row is the file format's (`docs/file-format.md`), made by the same codec
/// under the same keys: the item's UUID, its class, keyed HMACs of its primary key
/// (under a UNIQUE constraint, so a duplicate add fails atomically across
/// machines), of `svce`, `acct`, `srvr`, `labl`, the access group and the sync
/// state, and one AES-256-GCM box of every attribute and the data. The random data
/// key is stored wrapped by the key-encryption key every host holds (a key file or
/// a passphrase). The server sees ciphertext and keyed HMACs only
/// (`docs/postgresql.md` says exactly what it learns and which statements run).
///
/// ```swift
/// let backend = try PostgreSQLBackend(configuration: .init(
///     connection: "postgresql://keychain.internal/secrets?sslmode=verify-full",
///     keySource: .keyFile("/etc/secitem/keychain.key")))
/// let client = SecItemClient(backend: backend)
/// ```
///
/// Faults: an unreachable server fails a call with `errSecNotAvailable` within
/// the connect and statement bounds; a connection lost mid-call fails that call
/// (the transaction is rolled back by the server) and the next call reconnects;
/// a read-only server (a standby) fails writes with `errSecReadOnly`.
///
/// Thread-safe: calls run in parallel, each on a connection of its own from a
/// bounded pool (``Configuration/poolSize``, made as calls need them). Reads take
/// no lock; a write holds only the keychain's state row on the server, from its
/// `SELECT … FOR UPDATE` to its `COMMIT`, which serializes writes across the fleet.
public final class PostgreSQLBackend: SecItemBackend {
    /// What this backend was opened with, without its secret: a passphrase or raw
    /// key is dropped once the key is derived (descriptions redact passwords too).
    public let configuration: Configuration
    private let pool: SessionPool

    /// `postgresql`: what users choose it by, and what diagnostics print.
    public var kind: BackendKind { .postgresql }

    /// The schema version this library writes and reads (meta key `schema`).
    public static let schemaVersion: Int64 = 1

    /// Connects, creates the schema and the keychain when missing (under an
    /// advisory lock, so many hosts starting at once agree on one data key), and
    /// unlocks it.
    /// - Throws: `errSecNotAvailable` when the server cannot be reached (with
    ///   libpq's reason, never the password); `errSecAuthFailed` when the key does
    ///   not unlock the keychain; `errSecInvalidKeychain` for a schema or format
    ///   newer than this library; `errSecParam` for a bad setting.
    public init(configuration: Configuration) throws(SecItemError) {
        self.configuration = configuration.released
        pool = SessionPool(first: try PostgreSQLSession.open(configuration), size: configuration.poolSize)
    }

    /// Closes the connections (one in use closes when its call ends); later calls
    /// throw `errSecNotAvailable`.
    public func close() {
        pool.close()
    }

    // MARK: SecItemBackend

    public func add(_ item: StoredItem) throws(SecItemError) {
        try withSession { (s: PostgreSQLSession) throws(SecItemError) in
            try s.call(during: "adding an item") { () throws(SecItemError) -> Void in
                if try s.addInOneStatement(item) { return }
                try s.addItem(item)
            }
        }
    }

    public func fetch(matching query: ItemQuery, limit: Int?) throws(SecItemError) -> [StoredItem] {
        try withSession { (s: PostgreSQLSession) throws(SecItemError) in
            try s.call(during: "searching items", readOnly: true) { () throws(SecItemError) -> [StoredItem] in
                try s.matches(query, limit: limit, inWrite: false, forChange: false).map(\.item)
            }
        }
    }

    public func update(matching query: ItemQuery, _ transform: (StoredItem) -> StoredItem) throws(SecItemError) -> Int {
        try withSession { (s: PostgreSQLSession) throws(SecItemError) in
            try s.call(during: "updating items") { () throws(SecItemError) -> Int in
                if let n = try s.updateInOneStatement(matching: query, transform) { return n }
                return try s.updateItems(matching: query, transform)
            }
        }
    }

    public func delete(matching query: ItemQuery) throws(SecItemError) -> Int {
        try withSession { (s: PostgreSQLSession) throws(SecItemError) in
            try s.call(during: "deleting items") { () throws(SecItemError) -> Int in
                if let n = try s.deleteInOneStatement(matching: query) { return n }
                return try s.deleteItems(matching: query)
            }
        }
    }

    // MARK: Maintenance

    /// Changes the key-encryption key (a new key file or passphrase) and, as the
    /// file backend's rekey does, the data key with it: every row is re-encrypted
    /// under a new random data key wrapped by the new key, in one transaction, so
    /// an old dump plus the old key opens nothing written afterwards.
    ///
    /// Other hosts notice on their next call (the key epoch changed) and read their
    /// key file again: replace the key file on every host first, then rekey, and
    /// the fleet keeps running; a host still holding only the old key gets
    /// `errSecAuthFailed` until it is given the new one. A host opened with a
    /// passphrase keeps only the key derived from it, so after a rekey it gets
    /// `errSecAuthFailed` until it opens the keychain again with the new passphrase.
    /// - Throws: `errSecDecode` when a row is damaged (rotation would lose it); the
    ///   store is unchanged on any error.
    public func rekey(to newSource: KeySource) throws(SecItemError) {
        let newKEK = try KeyEncryptionKey.forRekey(newSource, configuration.keyContext, format: KeychainHeader.formatVersion)
        try withSession { (s: PostgreSQLSession) throws(SecItemError) in
            try s.call(during: "rekeying") { () throws(SecItemError) -> Void in
                try s.write { () throws(SecItemError) in try s.rotate(newKEK: newKEK) }
            }
        }
    }

    /// Replaces the data key: every row is re-encrypted under a new random key and
    /// the new key wrapped, in one transaction, while other hosts' writes wait
    /// (every write locks the row-set commitment's row) and then reload the key.
    /// On any failure the store keeps the old key and every row.
    /// - Throws: `errSecDecode` when a row is damaged: rotation would lose it.
    public func rotateDataKey() throws(SecItemError) {
        try withSession { (s: PostgreSQLSession) throws(SecItemError) in
            try s.call(during: "rotating the data key") { () throws(SecItemError) -> Void in
                try s.write { () throws(SecItemError) in try s.rotate(newKEK: nil) }
            }
        }
    }

    /// Checks every row and the row-set commitment (rows deleted, rolled back or
    /// copied in by someone with write access to the database but no key).
    /// - Returns: What is wrong, one line each; empty when all is well.
    public func verify() throws(SecItemError) -> [String] {
        try verifyStore().problems
    }

    /// What `secitem diagnose` reports about a configuration, without creating
    /// anything: where the connection goes, whether the server answers and is
    /// writable, whether the keychain exists and the key unlocks it. Bounded by
    /// the connect and statement timeouts; never shows a password or key.
    public static func inspect(_ configuration: Configuration) -> (usable: Bool, notes: [String]) {
        PostgreSQLSession.inspect(configuration)
    }

    /// Turns off the schema check of writes, leaving the row-count checks alone: the seam
    /// through which a test reaches the row checks behind a rule the schema check would refuse.
    package func skipSchemaCheck() {
        pool.skipSchemaCheck()
    }

    /// Where the backend is connected, without the password (for diagnostics).
    public var endpoint: String {
        pool.endpoint
    }

    /// How many connections the backend has opened so far (at most ``Configuration/poolSize``,
    /// more only when one was lost and replaced).
    public var connectionsOpened: Int { pool.sessionsMade }

    /// How many round trips to the server the backend's connections made so far
    /// (tests that count them per call; read it while no call runs).
    package var roundTrips: Int { pool.roundTrips }

    func withSession<R>(_ body: (PostgreSQLSession) throws(SecItemError) -> R) throws(SecItemError) -> R {
        try pool.withSession(body)
    }
}

extension PostgreSQLBackend {
    /// Where the key-encryption key comes from: the file backend's sources
    /// (``SealedStoreKeySource``), a generated key file excepted.
    public typealias KeySource = SealedStoreKeySource
}

extension PostgreSQLBackend.Configuration {
    /// What the key sources need to know about this store (scrypt cost, messages naming it).
    var keyContext: KeySourceContext {
        KeySourceContext(
            store: "PostgreSQL schema \(schema) (\(ConnectionString.redacted(connection)))", scryptParameters: scryptParameters,
            keyCacheTimeout: keyCacheTimeout)
    }
}
