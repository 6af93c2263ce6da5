import Foundation
import SecItem
import SecItemSQLite
import Testing

/// Issue 27, finding 2: a WAL left behind by a crash, and only `keychain.db` deleted.
@Suite("File backend: a WAL without its keychain")
struct StaleWALTests {
    @Test("a -wal and -shm left without their keychain.db are not replayed into the next keychain")
    func staleWALIsNotReplayed() throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = dir.file("keychain.db")
        let saved = dir.file("saved")
        do {
            let backend = try openBackend(db, .keyFile(key))
            let client = SecItemClient(backend: backend, accessGroups: groups)
            for account in ["a", "b", "c", "d"] { try client.addItem(genp(account, data: "data-\(account)")) }
            // What a crash leaves: the WAL as it is while the program runs.
            let wal = try #require(fileBytes(db + "-wal"))
            #expect(wal.count > 0)
            try wal.write(to: URL(fileURLWithPath: saved + "-wal"))
            try #require(fileBytes(db + "-shm")).write(to: URL(fileURLWithPath: saved + "-shm"))
            backend.close()
        }
        // Someone deletes only keychain.db; the crash's WAL and shared memory are still there.
        try FileManager.default.removeItem(atPath: db)
        for suffix in ["-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: db + suffix)
            try FileManager.default.copyItem(atPath: saved + suffix, toPath: db + suffix)
        }
        let backend = try openBackend(db, .keyFile(key))
        let client = SecItemClient(backend: backend, accessGroups: groups)
        #expect(status { _ = try readData(client, "a") } == errSecItemNotFound)
        try client.addItem(genp("new", data: "data-new"))
        #expect(try readData(client, "new") == "data-new")
        #expect(try backend.verify().isIntact)
    }
}
