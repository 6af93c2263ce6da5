import Foundation
import SecItem
import SecItemCore
import SecItemSQLite
import Testing

/// Issue 27, finding 1: an index out of step with its table.
@Suite("File backend: index tampering")
struct IndexTamperTests {
    /// What someone without the key sees after the file was tampered with: every
    /// path must say the file is damaged (errSecInvalidKeychain), none may say ok.
    /// `limit`: the open-time full check's item limit (0: only each index's root is checked on open).
    func expectRefused(_ db: String, key: String, _ what: String, limit: Int) {
        let backend: SQLiteBackend
        var configuration = SQLiteBackend.Configuration(
            path: db, keySource: .keyFile(key), generatedKeyFilePath: (db as NSString).deletingLastPathComponent + "/gen.key")
        configuration.openIntegrityCheckItemLimit = limit
        do {
            backend = try SQLiteBackend(configuration: configuration)
        } catch {
            #expect(error.status == errSecInvalidKeychain, "\(what): open: \(error)")
            return
        }
        let client = SecItemClient(backend: backend, accessGroups: groups)
        let lookup = status { _ = try readData(client, "b") }
        #expect(lookup == errSecInvalidKeychain, "\(what): lookup of b gave \(lookup)")
        let readd = status { try client.addItem(genp("b", data: "duplicate")) }
        #expect(readd == errSecInvalidKeychain, "\(what): a re-add of b gave \(readd)")
        let verify = status { _ = try backend.verify() }
        #expect(verify == errSecInvalidKeychain, "\(what): verify gave \(verify)")
    }

    @Test("two attribute indexes' rootpages swapped: refused by the root check alone")
    func swappedAttributeIndexes() throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = try makeKeychain(dir, key: key, name: "svce-acct.db")
        let raw = RawDB(db)
        let svce = raw.strings("SELECT rootpage FROM sqlite_schema WHERE name = 'sealed_items_svce'")
        let acct = raw.strings("SELECT rootpage FROM sqlite_schema WHERE name = 'sealed_items_acct'")
        try #require(svce.count == 1 && acct.count == 1)
        raw.exec("PRAGMA writable_schema = ON")
        raw.exec(
            "UPDATE sqlite_schema SET rootpage = CASE name WHEN 'sealed_items_svce' THEN \(acct[0]) ELSE \(svce[0]) END "
                + "WHERE name IN ('sealed_items_svce', 'sealed_items_acct')")
        raw.exec("PRAGMA writable_schema = OFF")
        expectRefused(db, key: key, "swapped attribute indexes", limit: 0)
    }

    @Test("one rootpage swapped through writable_schema (the two UNIQUE indexes): refused, not a miss or a duplicate",
          arguments: [10_000, 0])
    func swappedRootpage(limit: Int) throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = try makeKeychain(dir, key: key, name: "swapped.db")
        let raw = RawDB(db)
        let uuidRoot = raw.strings("SELECT rootpage FROM sqlite_schema WHERE name = 'sqlite_autoindex_sealed_items_1'")
        let pkRoot = raw.strings("SELECT rootpage FROM sqlite_schema WHERE name = 'sqlite_autoindex_sealed_items_2'")
        try #require(uuidRoot.count == 1 && pkRoot.count == 1)
        raw.exec("PRAGMA writable_schema = ON")
        raw.exec(
            "UPDATE sqlite_schema SET rootpage = CASE name WHEN 'sqlite_autoindex_sealed_items_1' THEN \(pkRoot[0]) "
                + "ELSE \(uuidRoot[0]) END WHERE name IN ('sqlite_autoindex_sealed_items_1', 'sqlite_autoindex_sealed_items_2')")
        raw.exec("PRAGMA writable_schema = OFF")
        #expect(raw.strings("SELECT rootpage FROM sqlite_schema WHERE name = 'sqlite_autoindex_sealed_items_2'") == uuidRoot)
        expectRefused(db, key: key, "swapped rootpage", limit: limit)
    }

    @Test("one index page overwritten with another's bytes: refused", arguments: [10_000, 0])
    func copiedIndexPage(limit: Int) throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = try makeKeychain(dir, key: key, name: "copied.db")
        let (uuidRoot, pkRoot): (Int, Int)
        do {
            let raw = RawDB(db)
            uuidRoot = Int(raw.strings("SELECT rootpage FROM sqlite_schema WHERE name = 'sqlite_autoindex_sealed_items_1'").first ?? "") ?? 0
            pkRoot = Int(raw.strings("SELECT rootpage FROM sqlite_schema WHERE name = 'sqlite_autoindex_sealed_items_2'").first ?? "") ?? 0
        }
        try #require(uuidRoot > 1 && pkRoot > 1)
        var bytes = try #require(fileBytes(db))
        let pageSize = Int(bytes[16]) << 8 | Int(bytes[17])
        let source = bytes[(uuidRoot - 1) * pageSize..<uuidRoot * pageSize]
        bytes.replaceSubrange((pkRoot - 1) * pageSize..<pkRoot * pageSize, with: source)
        try bytes.write(to: URL(fileURLWithPath: db))
        expectRefused(db, key: key, "copied index page", limit: limit)
    }

    /// Reads run no integrity check (a connection runs it before its first write), so a
    /// read must never hand out the row a lying index points at. The `pk` index of a copy
    /// whose two rows swapped their `pk` columns is copied over the original's: the table
    /// is intact, the index says one item's key is the other's row. The two are neither
    /// the first nor the last entry of the index (the root check on open reads those).
    @Test("a primary-key index pointing at another item's row: reads fail or miss, never return that item; a write is refused",
          arguments: [10_000, 0])
    func primaryKeyIndexPointsElsewhere(limit: Int) throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = dir.file("lying.db")
        let accounts = ["a", "b", "c", "d", "e", "f"]
        do {
            let backend = try openBackend(db, .keyFile(key))
            let client = SecItemClient(backend: backend, accessGroups: groups)
            for account in accounts { try client.addItem(genp(account, data: "data-\(account)")) }
            backend.close()
        }
        let copy = dir.file("copy.db")
        try #require(FileManager.default.fileExists(atPath: db))
        try FileManager.default.copyItem(atPath: db, toPath: copy)
        let pkRoot: Int
        let asked: String  // the account looked up: its key's index entry points at the other's row
        do {
            let raw = RawDB(copy)
            pkRoot = Int(raw.strings("SELECT rootpage FROM sqlite_schema WHERE name = 'sqlite_autoindex_sealed_items_2'").first ?? "") ?? 0
            let byKey = raw.strings("SELECT seq FROM sealed_items ORDER BY pk").compactMap { Int64($0) }
            try #require(byKey.count == accounts.count)
            let (one, other) = (byKey[1], byKey[2])
            asked = accounts[Int(one) - 1]
            let oneKey = try #require(raw.blob("SELECT pk FROM sealed_items WHERE seq = \(one)"))
            let otherKey = try #require(raw.blob("SELECT pk FROM sealed_items WHERE seq = \(other)"))
            raw.set("pk", row: one, [0])
            raw.set("pk", row: other, oneKey)
            raw.set("pk", row: one, otherKey)
            try #require(raw.blob("SELECT pk FROM sealed_items WHERE seq = \(other)") == oneKey)
        }
        try #require(pkRoot > 1)
        var bytes = try #require(fileBytes(db))
        let copied = try #require(fileBytes(copy))
        let pageSize = Int(bytes[16]) << 8 | Int(bytes[17])
        let page = (pkRoot - 1) * pageSize..<pkRoot * pageSize
        try #require(bytes[page] != copied[page], "the copy's pk index page differs")
        bytes.replaceSubrange(page, with: copied[page])
        try bytes.write(to: URL(fileURLWithPath: db))

        var configuration = SQLiteBackend.Configuration(
            path: db, keySource: .keyFile(key), generatedKeyFilePath: dir.file("gen.key"))
        configuration.openIntegrityCheckItemLimit = limit
        let backend: SQLiteBackend
        do {
            backend = try SQLiteBackend(configuration: configuration)
        } catch {
            Issue.record("open: \(error) (a read-only open does not check every index entry)")
            return
        }
        let client = SecItemClient(backend: backend, accessGroups: groups)
        // The data alone (the lookup `find -w` makes): the box, bound to a's key, does not open.
        var data: String?
        let dataStatus = status { data = try readData(client, asked) }
        #expect(data == nil && (dataStatus == errSecDecode || dataStatus == errSecInvalidKeychain),
                "data of \(asked): \(dataStatus), \(data ?? "none")")
        // The attributes: the row is the other item's (SQLite may give the index's copy of
        // `pk`, which then fails the box; or the row's, which is not the key asked for).
        var attributesQuery = genp(asked)
        attributesQuery["r_Attributes"] = true
        var found: Any?
        let attributesStatus = status { found = try client.copyMatchingItems(attributesQuery) }
        #expect(found == nil && (attributesStatus == errSecDecode || attributesStatus == errSecInvalidKeychain),
                "attributes of \(asked): \(attributesStatus), \(String(describing: found))")
        // A write runs the full check first (unless the store is over the limit).
        if limit > 0 {
            let readd = status { try client.addItem(genp("g", data: "new")) }
            #expect(readd == errSecInvalidKeychain, "an add gave \(readd)")
        }
        backend.close()
    }
}
