import Foundation
import SecItemCore
import SecItemSealedStore

/// One open keychain file: the SQLite connection, the keys, and the row-set
/// commitment as this connection last saw it. Used under the backend's mutex only.
///
/// Its jobs, one file each:
/// - opening the file and checking it (this file);
/// - staying current and running transactions (`SQLiteConnection+Transactions.swift`);
/// - the sealed store's rows, header and state row (`SQLiteConnection+Rows.swift`:
///   the ``SealedRowStorage`` adapter, where the row logic itself lives once);
/// - finding rows by a query (`SQLiteConnection+Search.swift`, with its prepared
///   statements in ``SearchStatements``);
/// - reading every row and verifying the file (`SQLiteConnection+Verify.swift`);
/// - rewriting the whole file: rotation, rekey, upgrade (`SQLiteConnection+Rewrite.swift`);
/// - opening pooled readers beside it (`ReadConnections.swift`).
/// The tables themselves are ``KeychainSchema``'s; `meta` and `state` are read and
/// written in `SQLiteTables.swift`.
final class SQLiteConnection {
    let db: Database
    var header: KeychainHeader
    var kek: SecretBytes
    var codec: RowCodec
    /// Format 2: the committed row set as of this connection's last synchronisation or write.
    var commitment: RowSetCommitment
    /// Inside ``SQLiteBackend/inBulkTransaction(_:)``: calls join the open transaction.
    var bulk = false
    /// SQLite's data version as of this connection's last synchronisation or commit.
    var knownDataVersion: Int64 = -1
    /// The schema version last checked (set by a pooled reader's opening, from the backend's).
    var knownSchemaVersion: Int64 = -1
    /// Inside a write: whether the row set changed (the state row is then rewritten).
    var rowSetChanged = false
    /// Inside a write: whether a row was deleted or replaced (the WAL is then emptied
    /// after the commit, so it does not keep the old row's pages).
    var rowsReplaced = false
    /// The prepared statements of searches (SQLiteConnection+Search.swift).
    var searches = SearchStatements()
    /// The bound parameters of the lookup returning data alone, which must stay put until
    /// its statement is reset: the primary-key, access-group and sync HMACs (32 bytes
    /// each; not secret: the file's columns hold them), then the class name (up to 8 bytes).
    let knownKeyColumns = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 104)
    /// ``SQLiteBackend/Configuration/openIntegrityCheckItemLimit``.
    var integrityCheckItemLimit = 10_000
    /// Whether this connection has compared the items table's indexes with its rows
    /// (``checkIndexesAgreeWithRows()``): done before its first write, not on open.
    var indexesChecked = false
    /// The rollback evidence: each new state of the file against this host's high-water mark.
    let rollback: RollbackCheck
    /// Inside a write: the state it wrote, recorded as the mark once committed.
    var writtenState: HighWaterMark?
    /// How many times this connection re-read the file's state (tests: a read or
    /// write after this connection's own writes must not need to).
    var synchronisations = 0
    /// Called before each row an upgrade re-encrypts (``SQLiteBackend/upgrade(beforeRow:)``
    /// sets it for the length of one upgrade; `nil` otherwise).
    var beforeUpgradedRow: SQLiteBackend.RewriteObserver?

    var format: Int64 { header.format }
    var table: String { KeychainSchema.itemsTable(format: format) }

    typealias Match = SealedMatch

    deinit { knownKeyColumns.deallocate() }

    init(db: Database, header: KeychainHeader, kek: SecretBytes, codec: RowCodec, rollback: RollbackCheck) {
        self.db = db
        self.rollback = rollback
        self.header = header
        self.kek = kek
        self.codec = codec
        commitment = RowSetCommitment(generation: 0)
    }

    static func open(_ configuration: SQLiteBackend.Configuration) throws(SecItemError) -> SQLiteConnection {
        let created = try KeychainCreation.createIfMissing(configuration)
        let db = try Database(
            path: configuration.path, busyTimeoutMilliseconds: Int32(clamping: configuration.busyTimeoutMilliseconds))
        // Read the header and check the schema before anything that could write, so a
        // file that is not a keychain (an empty file included), or one someone planted
        // triggers in, is left exactly as it was.
        let (header, checkedSchema) = try db.transaction(write: false) { () throws(SecItemError) in
            let header = try db.readHeader()
            try KeychainSchema.check(db, format: header.format)
            try KeychainSchema.checkIndexRoots(db, format: header.format)
            return (header, try db.pragma("schema_version"))
        }
        let mode = try db.statement("PRAGMA journal_mode")
        _ = try mode.step(during: "reading the journal mode")
        let journal = mode.text(0)
        mode.reset()
        if journal != "wal" {
            let set = try db.statement("PRAGMA journal_mode=WAL")
            _ = try set.step(during: "enabling WAL")
            set.reset()
        }
        try db.execute("PRAGMA synchronous=FULL")
        let (kek, codec) = try header.unlock(configuration.keySource, configuration.keyContext)
        let connection = SQLiteConnection(
            db: db, header: header, kek: kek, codec: codec,
            rollback: rollbackCheck(configuration, unlocked: UnlockedStoreKey(kek: kek, header: header)))
        // The schema just checked need not be checked again unless it changed since.
        connection.knownSchemaVersion = checkedSchema
        connection.integrityCheckItemLimit = configuration.openIntegrityCheckItemLimit
        try connection.rollback.prime()
        try db.transaction(write: false) { () throws(SecItemError) in
            if created, connection.rollback.mode != .off, let state = try connection.currentState() {
                // This process made the keychain (none was there): its first state is the
                // host's mark, logged, whatever the mark said of a keychain once at this path.
                _ = try connection.rollback.accept(state, note: "created a new keychain (none was at this path)")
            } else {
                try connection.synchronise(force: true)
            }
            // A format-1 file is checked on open (its reads are not all compared with the
            // key); format 2 and later before this connection's first write (the check's own comment says why).
            if connection.format < 2 { try connection.checkIndexesAgreeWithRows() }
        }
        return connection
    }

    /// A connection's own rollback check (not thread-safe: one per connection), of the
    /// file as ``witnessed(_:)`` names it; `unlocked` is the key it was opened with (a
    /// key source's witness may authenticate its marks with a key derived from it).
    static func rollbackCheck(_ configuration: SQLiteBackend.Configuration, unlocked: UnlockedStoreKey) -> RollbackCheck {
        RollbackCheck.make(
            mode: configuration.rollbackCheck, witness: configuration.rollbackWitness, keySource: configuration.keySource,
            store: witnessed(configuration.path), unlocked: unlocked,
            environment: configuration.environment ?? ProcessInfo.processInfo.environment)
    }

    /// The file as the rollback evidence names it: its canonical path (the file exists by now).
    static func witnessed(_ path: String) -> WitnessedStore {
        let canonical = realpath(path, nil).map { p in
            defer { free(p) }
            return String(cString: p)
        } ?? path
        return WitnessedStore(identity: "file " + canonical, location: path)
    }
}
