internal import CSecItemSQLite3
import Foundation
import SecItemCore

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

    /// Opens an existing file (never creates one: creation is atomic, see ``KeychainFile``).
    init(path: String, create: Bool = false, busyTimeoutMilliseconds: Int32 = 30_000) throws(SecItemError) {
        self.path = path
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
    }

    deinit { close() }

    /// Finalizes every statement and closes the handle (idempotent).
    func close() {
        statements.removeAll()
        begin = nil
        beginImmediate = nil
        commit = nil
        if let handle {
            sqlite3_close_v2(handle)
            self.handle = nil
        }
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

/// A prepared statement owned by its ``Database``; finalized in `deinit`.
final class Statement {
    private let stmt: OpaquePointer
    private unowned let database: Database

    init(_ stmt: OpaquePointer, database: Database) {
        self.stmt = stmt
        self.database = database
    }

    deinit { sqlite3_finalize(stmt) }

    /// Resets the statement (releasing its read snapshot) and clears bindings.
    func reset() {
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
    }

    func bind(_ index: Int32, _ bytes: [UInt8]?) {
        guard let bytes else {
            sqlite3_bind_null(stmt, index)
            return
        }
        bytes.withUnsafeBytes { raw in
            // A zero-length blob still binds as a blob, not NULL.
            _ = sqlite3_bind_blob(stmt, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count),
                                  csecitem_sqlite_transient())
        }
    }

    func bind(_ index: Int32, _ text: String) {
        _ = sqlite3_bind_text(stmt, index, text, -1, csecitem_sqlite_transient())
    }

    func bind(_ index: Int32, _ value: Int64) {
        _ = sqlite3_bind_int64(stmt, index, value)
    }

    /// Steps once: `true` when a row is available, `false` when done.
    func step(during what: String) throws(SecItemError) -> Bool {
        let rc = sqlite3_step(stmt)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = database.lastError(rc, during: what)
            sqlite3_reset(stmt)
            throw error
        }
    }

    /// Steps a statement that returns no rows, then resets it.
    func run(during what: String) throws(SecItemError) {
        defer { reset() }
        _ = try step(during: what)
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(stmt, column) }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(stmt, column) == SQLITE_NULL }

    func bytes(_ column: Int32) -> [UInt8]? {
        let type = sqlite3_column_type(stmt, column)
        if type == SQLITE_NULL { return nil }
        let pointer = sqlite3_column_blob(stmt, column)
        let count = Int(sqlite3_column_bytes(stmt, column))
        guard let pointer, count > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// The column's bytes in place, `nil` for NULL. Valid until the statement
    /// steps, resets or is read as another type.
    func blob(_ column: Int32) -> UnsafeRawBufferPointer? {
        if sqlite3_column_type(stmt, column) == SQLITE_NULL { return nil }
        let pointer = sqlite3_column_blob(stmt, column)
        let count = Int(sqlite3_column_bytes(stmt, column))
        guard let pointer, count > 0 else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: pointer, count: count)
    }

    func text(_ column: Int32) -> String? {
        guard sqlite3_column_type(stmt, column) != SQLITE_NULL, let c = sqlite3_column_text(stmt, column) else {
            return nil
        }
        return String(cString: c)
    }
}
