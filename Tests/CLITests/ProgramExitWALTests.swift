import Foundation
import SecItemTestSupport
import Testing

/// Issue 27, finding 2: what a program using the global SecItem functions leaves behind.
@Suite("Programs with default settings: no leftover WAL")
struct ProgramExitWALTests {
    static func bin(_ cli: CLI) throws -> URL {
        let bin = cli.root.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        return bin
    }

    static func size(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int
    }

    @Test("an app adds 4 items, deletes them and exits: no WAL with content remains; deleting only keychain.db then is harmless")
    func noLeftoverWAL() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        let app = try AppProgram(named: "walApp", in: try Self.bin(cli))
        let db = cli.root.appendingPathComponent("data/secitem/keychain.db").path
        try app.ok(["store", "W"], cli)
        try app.ok(["wipe"], cli)
        #expect(FileManager.default.fileExists(atPath: db))
        // SQLite removes the WAL when the last connection closes after a checkpoint;
        // a WAL of zero bytes (TRUNCATE) holds nothing either.
        let wal = Self.size(db + "-wal")
        #expect(wal == nil || wal == 0, "the app left a \(wal ?? 0)-byte WAL holding the pages of its deleted items")
        // Someone removes only keychain.db: the next program gets a fresh, working keychain.
        try FileManager.default.removeItem(atPath: db)
        let next = try app.run(["store", "X"], cli)
        #expect(next.status == 0, "after removing only keychain.db: \(next.status) \(next.stderr)")
        let dump = try app.ok(["dump"], cli)
        #expect(dump.split(separator: "\n").count == 4, "\(dump)")
    }
}
