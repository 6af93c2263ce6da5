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
}
