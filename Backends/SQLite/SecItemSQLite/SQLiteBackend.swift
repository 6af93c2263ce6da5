import Foundation
public import SecItemCore
import Synchronization

/// The encrypted file backend: one SQLite file, every item sealed with
/// AES-256-GCM (OpenSSL), safe under crashes, many threads and many processes.
///
/// Each item is one row: its UUID, its class, a keyed HMAC of its primary key
/// under a UNIQUE index (duplicates fail atomically, across processes), keyed
/// HMACs of `svce`, `acct`, `srvr`, `labl`, the access group and the sync state
/// for indexed lookup, and one AES-256-GCM box of every attribute and the data.
/// The random data key is stored wrapped by a key-encryption key from a
/// ``KeySource``. The format is in `docs/file-format.md`.
///
/// ```swift
/// let backend = try SQLiteBackend(configuration: .fromEnvironment())
/// let client = SecItemClient(backend: backend)
/// ```
///
/// Thread-safe: the connection lives in a `Mutex` (checked `Sendable`, no
/// `@unchecked`). Process-safe: WAL, `synchronous=FULL`, writes in
/// `BEGIN IMMEDIATE` transactions and a busy timeout; a call returns only after
/// its change is durable.
public final class SQLiteBackend: SecItemBackend {
    /// What this backend was opened with (descriptions redact keys and passphrases).
    public let configuration: Configuration
    private let state: Mutex<SQLiteConnection?>

    /// The name used in diagnostics.
    public var name: String { "file" }

    /// Opens the keychain file, creating it when missing.
    ///
    /// The key derivation (scrypt for a passphrase) runs here, once.
    /// - Throws: `errSecAuthFailed` when the key or passphrase does not unlock the
    ///   file (nothing written); `errSecInvalidKeychain` when the file is not a
    ///   keychain, is damaged, or has a newer format; `errSecNotAvailable` when the
    ///   key file is missing; `errSecParam` for a key file others can read, owned by
    ///   another user, or not holding a key; `errSecIO` for file-system failures.
    public init(configuration: Configuration) throws(SecItemError) {
        self.configuration = configuration
        let connection = try SQLiteConnection.open(configuration)
        state = Mutex(connection)
    }

    /// Closes the file; later calls throw `errSecNotAvailable`.
    public func close() {
        state.withLock { connection in
            connection?.db.close()
            connection = nil
        }
    }

    // MARK: SecItemBackend

    public func add(_ item: StoredItem) throws(SecItemError) {
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in
            try c.transaction(write: true) { () throws(SecItemError) in
                try c.insert(c.codec.encode(item))
            }
        }
    }

    public func fetch(matching query: ItemQuery, limit: Int?) throws(SecItemError) -> [StoredItem] {
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in
            try c.transaction(write: false) { () throws(SecItemError) in
                try c.matches(query, limit: limit).map(\.item)
            }
        }
    }

    public func update(matching query: ItemQuery, _ transform: (StoredItem) -> StoredItem) throws(SecItemError) -> Int {
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in
            try c.transaction(write: true) { () throws(SecItemError) in
                let old = try c.matches(query, limit: nil)
                guard !old.isEmpty else { return 0 }
                var rows: [(seq: Int64, row: EncodedRow)] = []
                for match in old { rows.append((match.seq, try c.codec.encode(transform(match.item)))) }
                // Rows are rewritten one by one under a UNIQUE index; when one takes a
                // key another updated row is about to give up, park them all first.
                let oldKeys = Set(old.map(\.primaryKeyMAC))
                if rows.contains(where: { oldKeys.contains($0.row.primaryKeyMAC) }) {
                    let park = try c.db.statement("UPDATE items SET pk = uuid WHERE seq = ?")
                    for r in rows {
                        park.bind(1, r.seq)
                        try park.run(during: "updating an item")
                    }
                }
                for r in rows { try c.rewrite(r.seq, r.row) }
                return rows.count
            }
        }
    }

    public func delete(matching query: ItemQuery) throws(SecItemError) -> Int {
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in
            try c.transaction(write: true) { () throws(SecItemError) in
                let doomed = try c.matches(query, limit: nil)
                let stmt = try c.db.statement("DELETE FROM items WHERE seq = ?")
                for match in doomed {
                    stmt.bind(1, match.seq)
                    try stmt.run(during: "deleting an item")
                }
                return doomed.count
            }
        }
    }

    // MARK: Maintenance

    /// Checks every row and the file's structure.
    /// - Returns: The rows that cannot be returned (tampered, swapped, damaged); empty when all is well.
    /// - Throws: `errSecInvalidKeychain` when the SQLite file itself is damaged.
    public func verify() throws(SecItemError) -> [DamagedRow] {
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in
            try c.transaction(write: false) { () throws(SecItemError) in
                let check = try c.db.statement("PRAGMA quick_check")
                defer { check.reset() }
                var problems: [String] = []
                while try check.step(during: "checking the file") {
                    if let line = check.text(0), line != "ok" { problems.append(line) }
                }
                if !problems.isEmpty {
                    throw SecItemError(
                        errSecInvalidKeychain,
                        "the keychain file is damaged: \(problems.prefix(3).joined(separator: "; "))")
                }
                return try c.scanAll().damaged
            }
        }
    }

    /// Re-wraps the data key under a new key-encryption key, in one transaction:
    /// a new passphrase, key file or raw key. Items are not rewritten.
    ///
    /// Other processes that have the file open must reopen it with the new key.
    /// - Throws: what opening with `newSource` would throw for a bad key file; the
    ///   file is unchanged on any error.
    public func rekey(to newSource: KeySource) throws(SecItemError) {
        let newKEK = try KeyEncryptionKey.forNewWrapping(newSource, configuration)
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in
            try c.transaction(write: true) { () throws(SecItemError) in
                var header = c.header
                header.protection = newKEK.protection
                header.scrypt = newKEK.scrypt
                header.salt = newKEK.salt
                header.epoch += 1
                try header.wrap(c.codec.keys.dataKey, kek: newKEK.kek)
                try header.write(c.db)
                c.pending = (header, newKEK.kek, c.codec)
            }
            c.commitPending()
        }
    }

    /// Replaces the data key: every row is re-encrypted under a new random key,
    /// read back and checked, and the new key wrapped, all in one transaction.
    /// On any failure the file keeps the old key and every old row.
    /// - Throws: `errSecDecode` when a row is damaged (see ``verify()``): rotation
    ///   would lose it, so it is refused.
    public func rotateDataKey() throws(SecItemError) {
        try rotateDataKey(failingAfter: nil)
    }

    /// ``rotateDataKey()`` with a failure injected after `rows` rows were rewritten (tests only).
    @_spi(Testing)
    public func rotateDataKey(failingAfter rows: Int?) throws(SecItemError) {
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in
            try c.transaction(write: true) { () throws(SecItemError) in
                let scan = try c.scanAll()
                guard scan.damaged.isEmpty else {
                    throw SecItemError(
                        errSecDecode,
                        "cannot rotate the data key: \(scan.damaged.count) damaged rows would be lost; see verify()")
                }
                let newCodec = RowCodec(keys: try ItemKeys.generate())
                for (index, match) in scan.items.enumerated() {
                    if let rows, index >= rows {
                        throw SecItemError(errSecIO, "failure injected during data-key rotation")
                    }
                    try c.rewrite(match.seq, try newCodec.encode(match.item))
                }
                // Read every row back under the new key before committing to it.
                let old = c.codec
                c.codec = newCodec
                defer { c.codec = old }
                let check = try c.scanAll()
                guard check.damaged.isEmpty, check.items.map(\.item) == scan.items.map(\.item) else {
                    throw SecItemError(errSecIO, "the re-encrypted rows did not read back; rotation abandoned")
                }
                var header = c.header
                header.epoch += 1
                try header.wrap(newCodec.keys.dataKey, kek: c.kek)
                try header.write(c.db)
                c.pending = (header, c.kek, newCodec)
            }
            c.commitPending()
        }
    }

    /// The SQL that creates a version-1 keychain's tables, for the benchmark's
    /// C baseline, which must use the very same schema (docs/file-format.md).
    @_spi(Bulk)
    public static var schemaSQL: String { KeychainHeader.schema }

    /// Runs `body` with every write it makes on this backend joined into one
    /// `BEGIN IMMEDIATE` transaction, committed (one fsync) when `body` returns and
    /// rolled back when it throws. For filling large keychains quickly (the
    /// benchmarks populate 100,000 items this way); not for concurrent use: calls
    /// other threads make meanwhile join the same transaction.
    @_spi(Bulk)
    public func inBulkTransaction(_ body: () throws -> Void) throws {
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in
            try c.db.execute("BEGIN IMMEDIATE")
            c.bulk = true
        }
        do {
            try body()
        } catch {
            try? withConnection { (c: SQLiteConnection) throws(SecItemError) in
                c.bulk = false
                try c.db.execute("ROLLBACK")
            }
            throw error
        }
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in
            c.bulk = false
            try c.db.execute("COMMIT")
        }
    }

    private func withConnection<R: Sendable>(_ body: (SQLiteConnection) throws(SecItemError) -> R) throws(SecItemError) -> R {
        try state.withLock { (connection: inout SQLiteConnection?) throws(SecItemError) -> R in
            guard let connection else { throw SecItemError(errSecNotAvailable, "the keychain file was closed") }
            return try body(connection)
        }
    }
}
