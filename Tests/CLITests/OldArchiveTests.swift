import CSecItemSQLite3
import Foundation
import SecItemCore
import SecItemSQLite
import SecItemTestSupport
import Testing
import SecItemSealedStore

/// Issue 14: new archives cost scrypt N=2^17, and archives written with the old
/// N=2^15 (the parameters are stored in the file) still import.
@Suite("secitem import of an N=2^15 archive")
struct OldArchiveTests {
    @Test("an export archive written with scrypt N=2^15 still imports")
    func oldArchive() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        let path = cli.root.appendingPathComponent("old.secitem").path
        let passphrase = "an-old-export-passphrase"
        // An archive as secitem wrote them before issue 14: a file keychain under the
        // passphrase at the file backend's default cost (N=2^15), plus the manifest item.
        let backend = try SQLiteBackend(
            configuration: SQLiteBackend.Configuration(
                path: path, keySource: .passphrase(passphrase), scryptParameters: ScryptParameters(logN: 15, r: 8, p: 1)))
        let now = Date()
        try backend.add(StoredItem(
            itemClass: .genericPassword, id: UUID(),
            attributes: ["svce": .string("old"), "acct": .string("a"), "agrp": .string("default"), "sync": .number(0),
                         "pdmn": .string("ak"), "cdat": .date(now), "mdat": .date(now)],
            data: Data("old-archive-secret".utf8)))
        let manifest = #"{"accessGroups":["default"],"count":1,"created":0,"format":"secitem-export","version":1}"#
        try backend.add(StoredItem(
            itemClass: .genericPassword, id: UUID(),
            attributes: ["svce": .string("org.secitem.export.manifest"), "acct": .string(""),
                         "agrp": .string("org.secitem.export"), "sync": .number(0), "pdmn": .string("ak"),
                         "cdat": .date(now), "mdat": .date(now)],
            data: Data(manifest.utf8)))
        backend.close()
        let imported = try cli.run(["import", "--input", path], environment: ["SECITEM_EXPORT_PASSPHRASE": passphrase])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try cli.run(["find-generic-password", "-s", "old", "-a", "a", "-w"]).stdout == "old-archive-secret\n")
    }

    @Test("a new export archive records scrypt N=2^17, r=8, p=1 (the file backend's default is 2^15)")
    func newArchiveCost() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        #expect(try cli.run(["add-generic-password", "-a", "x", "-s", "cost", "-w", "-"], stdin: "s").status == 0)
        let path = cli.root.appendingPathComponent("new.secitem").path
        let export = try cli.run(["export", "--output", path], environment: ["SECITEM_EXPORT_PASSPHRASE": "a long export passphrase"])
        #expect(export.status == 0, "\(export.stderr)")
        // Read the archive's header as anyone holding the file can (docs/file-format.md, meta).
        var db: OpaquePointer?
        #expect(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK)
        defer { sqlite3_close_v2(db) }
        var cost: [String: Int64] = [:]
        var stmt: OpaquePointer?
        #expect(sqlite3_prepare_v2(db, "SELECT key, value FROM meta WHERE key LIKE 'scrypt_%' AND key != 'scrypt_salt'", -1, &stmt, nil) == SQLITE_OK)
        while sqlite3_step(stmt) == SQLITE_ROW {
            cost[String(cString: sqlite3_column_text(stmt, 0))] = sqlite3_column_int64(stmt, 1)
        }
        sqlite3_finalize(stmt)
        #expect(cost == ["scrypt_log_n": 17, "scrypt_r": 8, "scrypt_p": 1], "\(cost)")
    }
}
