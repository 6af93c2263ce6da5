internal import CSecItemSQLite3
import SecItemCore
import SecItemSealedStore

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

    /// Resets the statement (releasing its read snapshot) and keeps its bindings:
    /// for a statement whose every parameter is bound again before each step.
    func resetKeepingBindings() {
        sqlite3_reset(stmt)
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

    /// Binds bytes without copying them: they must stay unchanged until ``reset()``.
    func bindStatic(_ index: Int32, _ bytes: UnsafeRawBufferPointer) {
        _ = sqlite3_bind_blob(stmt, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(bytes.count), nil)
    }

    /// Binds UTF-8 text without copying it: it must stay unchanged until ``reset()``.
    func bindStaticText(_ index: Int32, _ bytes: UnsafeRawBufferPointer) {
        _ = sqlite3_bind_text(
            stmt, index, (bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self),
            Int32(bytes.count), nil)
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
    ///
    /// The type is asked only when SQLite gives no pointer (NULL, or an empty blob):
    /// a lookup reads eight blob columns, and each `sqlite3_column_type` is a call.
    func blob(_ column: Int32) -> UnsafeRawBufferPointer? {
        if let pointer = sqlite3_column_blob(stmt, column) {
            let count = Int(sqlite3_column_bytes(stmt, column))
            return UnsafeRawBufferPointer(start: count > 0 ? pointer : nil, count: count)
        }
        if sqlite3_column_type(stmt, column) == SQLITE_NULL { return nil }
        return UnsafeRawBufferPointer(start: nil, count: 0)
    }

    func text(_ column: Int32) -> String? {
        guard sqlite3_column_type(stmt, column) != SQLITE_NULL, let c = sqlite3_column_text(stmt, column) else {
            return nil
        }
        return String(cString: c)
    }
}
