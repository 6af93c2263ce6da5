import SecItemCore
import SecItemSealedStore

/// The tables of each format, and the check that a file holds exactly them.
///
/// The schema is part of what is authenticated: a trigger, view, table or index
/// someone added with the sqlite3 shell (say `BEFORE UPDATE … RAISE(IGNORE)`,
/// which would make updates report success and change nothing) or a changed
/// definition makes the file refused (`errSecInvalidKeychain`, naming what was
/// found) before anything is read or written.
enum KeychainSchema {
    /// SQLite's name for each kind of column.
    private static func type(_ kind: SealedTables.Kind) -> String {
        switch kind {
        case .bytes: "BLOB"
        case .text: "TEXT"
        case .integer: "INTEGER"
        }
    }

    /// An items table (``SealedTables/itemLines(withVersion:)``) and its indexes.
    private static func itemsTable(_ name: String, withVersion: Bool) -> String {
        "CREATE TABLE \(name)"
            + SealedTables.render(SealedTables.itemLines(withVersion: withVersion), first: ["seq INTEGER PRIMARY KEY"], types: type)
            + SealedTables.indexes.map { "\nCREATE INDEX \(name)_\($0.suffix) ON \(name)(\($0.column));" }.joined()
    }

    static let meta = "CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value NOT NULL) WITHOUT ROWID;"

    /// Format 1 (read, and upgraded on the first write): `meta` and `items`.
    static let format1 = meta + "\n" + itemsTable("items", withVersion: false)

    /// Format 2's tables after `meta` (which both formats share, so an upgrade adds these).
    static let format2Tables =
        "CREATE TABLE state"
        + SealedTables.render(SealedTables.stateLines, first: ["id INTEGER PRIMARY KEY CHECK (id = 1)"], types: type)
        + "\n" + itemsTable("sealed_items", withVersion: true)

    /// Format 2, whole.
    static let format2 = meta + "\n" + format2Tables

    /// The items table of each format.
    static func itemsTable(format: Int64) -> String { format >= 2 ? "sealed_items" : "items" }

    /// One row of `sqlite_schema`.
    struct Entry: Hashable, Sendable {
        var type: String
        var name: String
        var table: String
        var sql: String?
    }

    /// What `sqlite_schema` holds for each format: made by running the schema on an
    /// in-memory database, so it is SQLite's own rendering (autoindexes included).
    /// Computed only when a file's schema is not ``rendered(format:)`` (0.5 ms of
    /// SQLite parsing that every open would otherwise pay).
    static let expected1 = entries(of: format1)
    static let expected2 = entries(of: format2)

    /// The same rows, written out as SQLite renders them: each `CREATE` statement as
    /// given without its `;`, and a `NULL`-SQL autoindex per `UNIQUE` column
    /// (`KeychainSchemaTests` checks they equal ``expected1``/``expected2``). A file
    /// whose schema is exactly this needs no in-memory database to be checked.
    static func rendered(format: Int64) -> Set<Entry> {
        // Plain byte scanning: this runs once per process, at the first open.
        let bytes = Array((format >= 2 ? format2 : format1).utf8)
        func text(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }
        /// The end of the word starting at `i` (a space, `(` or the statement's end).
        func wordEnd(_ i: Int, _ end: Int) -> Int {
            var j = i
            while j < end, bytes[j] != 0x20, bytes[j] != 0x28 { j += 1 }
            return j
        }
        func matches(_ word: StaticString, at i: Int) -> Bool {
            let count = word.utf8CodeUnitCount
            guard i + count <= bytes.count, bytes[i] == word.utf8Start.pointee else { return false }
            return (0..<count).allSatisfy { bytes[i + $0] == word.utf8Start[$0] }
        }
        var out = Set<Entry>(minimumCapacity: 16)
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != 0x3B { end += 1 }  // ';'
            var i = start
            while i < end, bytes[i] == 0x0A || bytes[i] == 0x20 { i += 1 }
            defer { start = end + 1 }
            let statement = i..<end
            if matches("CREATE TABLE ", at: i) {
                let nameStart = i + 13
                let name = text(nameStart..<wordEnd(nameStart, end))
                out.insert(Entry(type: "table", name: name, table: name, sql: text(statement)))
                // One autoindex per UNIQUE column constraint, numbered in column order.
                var unique = 0
                for k in statement where matches("UNIQUE", at: k) && k + 6 < end && (bytes[k + 6] == 0x2C || bytes[k + 6] == 0x29) {
                    unique += 1
                    out.insert(Entry(type: "index", name: "sqlite_autoindex_\(name)_\(unique)", table: name, sql: nil))
                }
            } else if matches("CREATE INDEX ", at: i) {  // CREATE INDEX name ON table(column)
                let nameStart = i + 13
                let nameEnd = wordEnd(nameStart, end)
                let tableStart = nameEnd + 4
                out.insert(
                    Entry(type: "index", name: text(nameStart..<nameEnd), table: text(tableStart..<wordEnd(tableStart, end)),
                          sql: text(statement)))
            }
        }
        return out
    }

    private static let rendered1 = rendered(format: 1)
    private static let rendered2 = rendered(format: 2)

    private static func entries(of sql: String) -> Set<Entry> {
        do {
            let db = try Database(path: ":memory:", create: true)
            defer { db.close() }
            try db.execute(sql)
            return try read(db)
        } catch {
            fatalError("the built-in schema does not compile: \(error)")
        }
    }

    static func read(_ db: Database) throws(SecItemError) -> Set<Entry> {
        let stmt = try db.statement("SELECT type, name, tbl_name, sql FROM sqlite_schema")
        defer { stmt.reset() }
        var out = Set<Entry>(minimumCapacity: 16)
        while try stmt.step(during: "reading the keychain's schema") {
            out.insert(Entry(type: stmt.text(0) ?? "", name: stmt.text(1) ?? "", table: stmt.text(2) ?? "", sql: stmt.text(3)))
        }
        return out
    }

    /// What differs from the format's schema, one phrase each (empty: exactly the format's).
    static func differences(_ db: Database, format: Int64) throws(SecItemError) -> [String] {
        let actual = try read(db)
        if actual == (format >= 2 ? rendered2 : rendered1) { return [] }
        let expected = format >= 2 ? expected2 : expected1
        var out: [String] = []
        let expectedByName = Dictionary(expected.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let actualByName = Dictionary(actual.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for entry in actual.sorted(by: { $0.name < $1.name }) {
            if let want = expectedByName[entry.name] {
                if want != entry { out.append("\(entry.type) \(entry.name) has an altered definition") }
            } else {
                out.append("an extra \(entry.type) \(entry.name)\(entry.type == "table" ? "" : " on \(entry.table)")")
            }
        }
        for entry in expected.sorted(by: { $0.name < $1.name }) where actualByName[entry.name] == nil {
            out.append("\(entry.type) \(entry.name) is missing")
        }
        return out
    }

    /// Each index of the items table and the column it holds.
    static func indexes(format: Int64) -> [(index: String, column: String)] {
        let table = itemsTable(format: format)
        return [("sqlite_autoindex_\(table)_1", "uuid"), ("sqlite_autoindex_\(table)_2", "pk")]
            + IndexedColumns.attributes.map { ("\(table)_\($0)", IndexedColumns.column(for: $0)) }
    }

    /// Throws unless every index of the items table is the b-tree of its own column:
    /// its first and last entries (read from the index alone) must be the column's
    /// value in the row they point to (read from the table). A `rootpage` swapped
    /// between two indexes, or pointed at another b-tree, fails here — a few indexed
    /// reads, whatever the size of the store. (A single index page overwritten needs
    /// ``checkIntegrity(_:table:)``.)
    static func checkIndexRoots(_ db: Database, format: Int64) throws(SecItemError) {
        let table = itemsTable(format: format)
        for (index, column) in indexes(format: format) {
            var ends: [String] = []
            for order in ["ASC", "DESC"] {
                ends.append(
                    "SELECT * FROM (SELECT seq AS s, \(column) AS v FROM \(table) INDEXED BY \(index) "
                        + "ORDER BY \(column) \(order), seq \(order) LIMIT 1)")
            }
            let stmt = try db.statement(
                "SELECT count(*) FROM (\(ends.joined(separator: " UNION ALL "))) AS e "
                    + "WHERE NOT EXISTS (SELECT 1 FROM \(table) NOT INDEXED WHERE seq = e.s AND \(column) IS e.v)")
            defer { stmt.reset() }
            guard try stmt.step(during: "checking the keychain's indexes"), stmt.int64(0) == 0 else {
                throw SecItemError(
                    errSecInvalidKeychain,
                    "the keychain \(db.path) was altered outside secitem: index \(index) is not the index of "
                        + "\(table).\(column) (its rootpage was changed). Nothing was written. Restore the file from a backup")
            }
        }
    }

    /// Throws when a b-tree of the file disagrees with the others: SQLite's
    /// `PRAGMA integrity_check`, of `table` and its indexes (the items table, on every
    /// open and schema change), or of the whole file (`verify`).
    ///
    /// The schema check above compares definitions, not where each b-tree lives: an
    /// index whose `rootpage` was swapped with another's through `writable_schema`, or
    /// an index page overwritten with another page's bytes, keeps every definition
    /// intact while lookups by key miss, a duplicate add passes the UNIQUE index and a
    /// deleted row stays findable. The integrity check compares every index entry with
    /// its row, which catches both; `quick_check` does not.
    static func checkIntegrity(_ db: Database, table: String?) throws(SecItemError) {
        let sql = table.map { "PRAGMA integrity_check(\($0))" } ?? "PRAGMA integrity_check"
        let check = try db.statement(sql)
        defer { check.reset() }
        var problems: [String] = []
        while try check.step(during: "checking the file's b-trees") {
            if let line = check.text(0), line != "ok" { problems.append(line) }
        }
        guard problems.isEmpty else {
            throw SecItemError(
                errSecInvalidKeychain,
                "the keychain \(db.path) is damaged or was altered outside secitem: its indexes disagree with its rows ("
                    + problems.prefix(3).joined(separator: "; ")
                    + (problems.count > 3 ? "; and \(problems.count - 3) more" : "")
                    + "). Nothing was written. Restore the file from a backup")
        }
    }

    /// Throws when the file's schema is not exactly the format's.
    static func check(_ db: Database, format: Int64) throws(SecItemError) {
        let found = try differences(db, format: format)
        guard found.isEmpty else {
            throw SecItemError(
                errSecInvalidKeychain,
                "the keychain \(db.path) was altered outside secitem: its schema is not format \(format)'s: "
                    + found.prefix(5).joined(separator: "; ")
                    + (found.count > 5 ? "; and \(found.count - 5) more" : "")
                    + ". Nothing was written. Restore the file from a backup, or remove what was added "
                    + "(docs/file-format.md, \"The schema is authenticated\") and run secitem verify")
        }
    }
}
