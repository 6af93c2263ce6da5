import Foundation
import SecItemCore
import SecItemSQLite
import SecItemTestSupport
import Testing

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
}
