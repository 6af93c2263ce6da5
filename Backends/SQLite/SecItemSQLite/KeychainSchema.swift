import SecItemCore

/// The tables of each format, and the check that a file holds exactly them.
///
/// The schema is part of what is authenticated: a trigger, view, table or index
/// someone added with the sqlite3 shell (say `BEFORE UPDATE … RAISE(IGNORE)`,
/// which would make updates report success and change nothing) or a changed
/// definition makes the file refused (`errSecInvalidKeychain`, naming what was
/// found) before anything is read or written.
enum KeychainSchema {
    /// Format 1 (read, and upgraded on the first write).
    static let format1 = """
        CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value NOT NULL) WITHOUT ROWID;
        CREATE TABLE items(
            seq INTEGER PRIMARY KEY,
            uuid BLOB NOT NULL UNIQUE,
            class TEXT NOT NULL,
            pk BLOB NOT NULL UNIQUE,
            h_svce BLOB, h_acct BLOB, h_srvr BLOB, h_labl BLOB,
            h_agrp BLOB NOT NULL, h_sync BLOB NOT NULL,
            ct BLOB NOT NULL);
        CREATE INDEX items_svce ON items(h_svce);
        CREATE INDEX items_acct ON items(h_acct);
        CREATE INDEX items_srvr ON items(h_srvr);
        CREATE INDEX items_labl ON items(h_labl);
        """

    /// Format 2's tables after `meta` (which both formats share, so an upgrade adds these).
    static let format2Tables = """
        CREATE TABLE state(
            id INTEGER PRIMARY KEY CHECK (id = 1),
            generation INTEGER NOT NULL,
            count INTEGER NOT NULL,
            cells BLOB NOT NULL,
            mac BLOB NOT NULL);
        CREATE TABLE sealed_items(
            seq INTEGER PRIMARY KEY,
            uuid BLOB NOT NULL UNIQUE,
            class TEXT NOT NULL,
            pk BLOB NOT NULL UNIQUE,
            h_svce BLOB, h_acct BLOB, h_srvr BLOB, h_labl BLOB,
            h_agrp BLOB NOT NULL, h_sync BLOB NOT NULL,
            version INTEGER NOT NULL,
            ct BLOB NOT NULL);
        CREATE INDEX sealed_items_svce ON sealed_items(h_svce);
        CREATE INDEX sealed_items_acct ON sealed_items(h_acct);
        CREATE INDEX sealed_items_srvr ON sealed_items(h_srvr);
        CREATE INDEX sealed_items_labl ON sealed_items(h_labl);
        """

    static let meta = "CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value NOT NULL) WITHOUT ROWID;"

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
    static let expected1 = entries(of: format1)
    static let expected2 = entries(of: format2)

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
        var out = Set<Entry>()
        while try stmt.step(during: "reading the keychain's schema") {
            out.insert(Entry(type: stmt.text(0) ?? "", name: stmt.text(1) ?? "", table: stmt.text(2) ?? "", sql: stmt.text(3)))
        }
        return out
    }

    /// What differs from the format's schema, one phrase each (empty: exactly the format's).
    static func differences(_ db: Database, format: Int64) throws(SecItemError) -> [String] {
        let actual = try read(db)
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
