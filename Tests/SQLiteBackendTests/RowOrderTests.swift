import Foundation
import SecItem
import SecItemCore
import SecItemSQLite
import Testing

/// Issue 27, finding 8: `seq` (the order results come in) changed by someone without the key.
@Suite("File backend: row order is sealed (format 3)")
struct RowOrderTests {
    @Test("swapping two rows' seq (which item a one-item search returns) is detected by reads and verify")
    func swappedSeq() throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = try makeKeychain(dir, key: key, name: "seq.db")
        let raw = RawDB(db)
        raw.exec("UPDATE sealed_items SET seq = 100 WHERE seq = 1")
        raw.exec("UPDATE sealed_items SET seq = 1 WHERE seq = 2")
        raw.exec("UPDATE sealed_items SET seq = 2 WHERE seq = 100")
        #expect(raw.strings("SELECT seq FROM sealed_items ORDER BY seq") == ["1", "2", "3"])
        let backend = try openBackend(db, .keyFile(key))
        let client = SecItemClient(backend: backend, accessGroups: groups)
        // Before: the oldest item under "svc" is a. A search for one item must not now return b.
        var first: String?
        let got = status {
            let data = try client.copyMatchingItems(["class": "genp", "svce": "svc", "r_Data": true]) as? Data
            first = data.flatMap { String(bytes: $0, encoding: .utf8) }
        }
        #expect(first != "data-b", "a one-item search returned b: the rows' order was changed without the key")
        #expect(got == errSecSuccess || got == errSecDecode, "\(got)")
        let report = try backend.verify()
        #expect(!report.isIntact, "verify says the file is intact after two rows' seq were swapped")
    }

    @Test("a format-2 file (seq not bound) still reads, upgrades to format 3 on its first write, and then binds seq")
    func format2FixtureUpgrades() throws {
        var fixture = URL(fileURLWithPath: #filePath)
        for _ in 0..<2 { fixture.deleteLastPathComponent() }
        fixture.appendPathComponent("Fixtures/format2")
        let dir = TempDir()
        let db = dir.file("format2.db"), key = dir.file("format2.key")
        try FileManager.default.copyItem(atPath: fixture.appendingPathComponent("keychain.db").path, toPath: db)
        try FileManager.default.copyItem(atPath: fixture.appendingPathComponent("keychain.key").path, toPath: key)
        chmod(key, 0o600)
        let expected: [(String, String, String, Data)] = [
            ("genp", "alice", "default", Data("s3cret-alice".utf8)), ("inet", "bob", "default", Data("hunter2".utf8)),
            ("genp", "binary", "default", Data((0...255).map { UInt8($0) })),
            ("genp", "carol", "com.example.shared", Data("shared-secret".utf8)),
        ]
        func readAll(_ backend: SQLiteBackend) throws {
            let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["default", "com.example.shared"]))
            for (cls, account, group, data) in expected {
                let found = try client.copyMatchingItems(["class": cls, "acct": account, "agrp": group, "r_Data": true]) as? Data
                #expect(found == data, "\(account)")
            }
        }
        do {
            let backend = try openBackend(db, .keyFile(key))
            #expect(backend.formatVersion == 2)
            try readAll(backend)
            #expect(backend.formatVersion == 2, "reading must not upgrade")
            #expect(try backend.verify().isIntact)
            #expect(try backend.upgrade())
            #expect(backend.formatVersion == 3)
            try readAll(backend)
            let report = try backend.verify()
            #expect(report.isIntact && report.format == 3, "\(report.problems)")
            backend.close()
        }
        // Upgraded, its rows' seq is bound: swapping two is detected.
        let raw = RawDB(db)
        raw.exec("UPDATE sealed_items SET seq = 100 WHERE seq = 1")
        raw.exec("UPDATE sealed_items SET seq = 1 WHERE seq = 3")
        raw.exec("UPDATE sealed_items SET seq = 3 WHERE seq = 100")
        let backend = try openBackend(db, .keyFile(key))
        #expect(Set(try backend.verify().damaged.map(\.row)) == [1, 3])
    }
}
