internal import CSecItemSQLite3
import Foundation
import SecItemCore
import SecItemSealedStore

/// One SQLite connection and its prepared-statement cache.
///
/// Not thread-safe by itself: ``SQLiteBackend`` keeps it inside a `Mutex`, so
/// exactly one thread uses it at a time. Closes the handle (and finalizes every
/// statement) in `deinit`.
final class Database {
    private(set) var handle: OpaquePointer?
    private var statements: [String: Statement] = [:]
    /// BEGIN, BEGIN IMMEDIATE and COMMIT, held directly: every call runs two of them.
    private var begin: Statement?
    private var beginImmediate: Statement?
    private var commit: Statement?
    let path: String
    private let busyTimeoutMilliseconds: Int32

    /// Opens an existing file (never creates one: creation is atomic, see ``KeychainFile``).
    init(path: String, create: Bool = false, busyTimeoutMilliseconds: Int32 = 30_000) throws(SecItemError) {
        _ = Self.configureOnce
        self.path = path
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        var db: OpaquePointer?
        var flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX
        if create { flags |= SQLITE_OPEN_CREATE }
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        handle = db
        guard rc == SQLITE_OK, db != nil else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            handle = nil
            throw Self.error(rc, message, path: path, during: "opening")
        }
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        // A keychain file may come from anywhere: refuse the schema tricks a hostile file could play.
        _ = csecitem_sqlite_db_config_int(db, SQLITE_DBCONFIG_DEFENSIVE, 1)
        _ = csecitem_sqlite_db_config_int(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0)
        // Deleted and overwritten content is zeroed in the file, not left in free pages;
        // and a WAL that a checkpoint emptied is cut to nothing when it is next reset,
        // so old page images do not linger past it.
        _ = sqlite3_exec(db, "PRAGMA secure_delete=ON; PRAGMA journal_size_limit=0", nil, nil, nil)
    }

    deinit { close() }

    /// Before the process's first connection: no memory statistics (a process-wide
    /// mutex on every SQLite allocation, which pooled readers on two cores queued on).
    private static let configureOnce: Void = { _ = csecitem_sqlite_memstatus_off() }()

    /// Finalizes every statement, empties the WAL when no other connection needs it
    /// (``checkpointTruncate()``), and closes the handle (idempotent). The last
    /// connection's close also removes the WAL and shared-memory files.
    func close() {
        statements.removeAll()
        begin = nil
        beginImmediate = nil
        commit = nil
        checkpointTruncate()
        if let handle {
            sqlite3_close_v2(handle)
            self.handle = nil
        }
    }

    /// Copies every committed page from the WAL into the file and cuts the WAL to
    /// zero bytes (`wal_checkpoint(TRUNCATE)`), so the page images it held — the
    /// contents of rows since deleted or replaced — are gone from it. Does not wait:
    /// when another connection is reading or writing it leaves the WAL to the next
    /// checkpoint (the busy timeout is 0 for this call). Returns whether it was emptied.
    @discardableResult
    func checkpointTruncate() -> Bool {
        guard let handle, sqlite3_get_autocommit(handle) != 0 else { return false }
        sqlite3_busy_timeout(handle, 0)
        defer { sqlite3_busy_timeout(handle, busyTimeoutMilliseconds) }
        return sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_TRUNCATE, nil, nil) == SQLITE_OK
    }

    /// Runs SQL without results (schema, pragmas, transaction control).
    func execute(_ sql: String) throws(SecItemError) {
        guard let handle else { throw SecItemError(errSecNotAvailable, "the keychain file is closed") }
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw lastError(rc, during: "running \(sql.prefix(40))") }
    }

    /// A cached prepared statement, reset and with bindings cleared.
    func statement(_ sql: String) throws(SecItemError) -> Statement {
        if let cached = statements[sql] { return cached }
        guard let handle else { throw SecItemError(errSecNotAvailable, "the keychain file is closed") }
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw lastError(rc, during: "preparing a statement") }
        let statement = Statement(stmt, database: self)
        if statements.count > 64 { statements.removeAll() }
        statements[sql] = statement
        return statement
    }

    /// Runs `body` in a transaction: `BEGIN IMMEDIATE` for writes (the write lock
    /// up front, so two writers never deadlock), plain `BEGIN` for reads.
    /// Rolls back on any error and rethrows it (GRDB's `inTransaction`).
    func transaction<R>(write: Bool, _ body: () throws(SecItemError) -> R) throws(SecItemError) -> R {
        // Prepared once and cached: sqlite3_exec would compile BEGIN and COMMIT on every call.
        let start: Statement
        if write {
            if let beginImmediate { start = beginImmediate } else { start = try statement("BEGIN IMMEDIATE") }
            beginImmediate = start
        } else {
            if let begin { start = begin } else { start = try statement("BEGIN") }
            begin = start
        }
        try start.run(during: write ? "beginning a write" : "beginning a read")
        do {
            let result = try body()
            let end: Statement
            if let commit { end = commit } else { end = try statement("COMMIT") }
            commit = end
            try end.run(during: "committing")
            return result
        } catch {
            if let handle, sqlite3_get_autocommit(handle) == 0 {
                _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
            }
            throw error
        }
    }

    func lastError(_ rc: Int32, during what: String) -> SecItemError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "closed"
        return Self.error(rc, message, path: path, during: what)
    }

    /// Maps an SQLite result code to a status. Messages come from SQLite and name
    /// no values: every value is a bound parameter.
    static func error(_ rc: Int32, _ message: String, path: String, during what: String) -> SecItemError {
        let detail = "\(path): \(message) (while \(what))"
        switch rc & 0xFF {
        case SQLITE_NOTADB:
            return SecItemError(errSecInvalidKeychain, "not a keychain: not an SQLite database: \(detail)")
        case SQLITE_CORRUPT:
            return SecItemError(errSecInvalidKeychain, "the keychain file is damaged: \(detail)")
        case SQLITE_BUSY, SQLITE_LOCKED:
            return SecItemError(errSecIO, "the keychain file stayed locked by another connection: \(detail)")
        case SQLITE_READONLY, SQLITE_PERM:
            return SecItemError(errSecReadOnly, "the keychain file cannot be written: \(detail)")
        case SQLITE_CANTOPEN:
            return SecItemError(errSecNoSuchKeychain, "the keychain file cannot be opened: \(detail)")
        case SQLITE_NOMEM:
            return SecItemError(errSecAllocate, detail)
        case SQLITE_CONSTRAINT:
            return SecItemError(errSecDuplicateItem, detail)
        default:
            return SecItemError(errSecIO, detail)
        }
    }
}

extension Database {
    /// SQLite's data version of the main file (`SQLITE_FCNTL_DATA_VERSION`): a C
    /// call, no statement. It changes with every commit, this connection's or
    /// another's, and is brought up to date when a transaction starts, so read
    /// after a statement it describes the snapshot that statement saw.
    var fileDataVersion: Int64 {
        guard let handle else { return -1 }
        var version: UInt32 = 0
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_DATA_VERSION, &version) == SQLITE_OK else { return -1 }
        return Int64(version)
    }

    /// Rows the last INSERT, UPDATE or DELETE changed.
    var changes: Int { handle.map { Int(sqlite3_changes($0)) } ?? 0 }

    /// An integer pragma (`data_version`, `schema_version`), its statement prepared once.
    func pragma(_ name: String) throws(SecItemError) -> Int64 {
        let stmt = try statement("PRAGMA \(name)")
        defer { stmt.reset() }
        guard try stmt.step(during: "reading \(name)") else { return 0 }
        return stmt.int64(0)
    }
}
