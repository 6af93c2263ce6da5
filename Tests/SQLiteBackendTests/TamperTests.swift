import Foundation
import SecItem
import SecItemSQLite
import SecItemTestSupport
import Testing

@Suite("File backend: tampering and damage")
struct TamperTests {
    static let columns = ["uuid", "class", "pk", "h_svce", "h_acct", "h_srvr", "h_labl", "h_agrp", "h_sync", "version", "ct"]

    /// Three items a, b, c (rows 1, 2, 3); the file closed and checkpointed.
    func makeKeychain(_ dir: TempDir, key: String) throws -> String {
        let db = dir.file("k.db")
        let backend = try openBackend(db, .keyFile(key))
        let client = SecItemClient(backend: backend, accessGroups: groups)
        for name in ["a", "b", "c"] {
            var item = genp(name, data: "data-\(name)")
            item["labl"] = "label-\(name)"
            try client.addItem(item)
        }
        backend.close()
        return db
    }

    func copy(_ db: String, _ name: String, _ dir: TempDir) throws -> String {
        let target = dir.file(name)
        try FileManager.default.copyItem(atPath: db, toPath: target)
        return target
    }

    /// Expects `damaged` to fail with errSecDecode, the others to read back, and verify to list `rows`.
    /// `absent`: items whose lookup misses (their pk column was altered, so the
    /// lookup's one indexed SELECT cannot find them: a miss is one HMAC and one
    /// SELECT, as for a deleted row; verify still lists the row).
    func expectDetected(
        _ db: String, key: String, damaged: [String], absent: [String] = [], intact: [String], rows: Set<Int64>
    ) throws {
        let backend = try openBackend(db, .keyFile(key))
        let client = SecItemClient(backend: backend, accessGroups: groups)
        for name in damaged {
            #expect(status { _ = try readData(client, name) } == errSecDecode, "lookup of \(name) in \(db)")
        }
        for name in absent {
            #expect(status { _ = try readData(client, name) } == errSecItemNotFound, "lookup of \(name) in \(db)")
        }
        for name in intact {
            #expect(try readData(client, name) == "data-\(name)", "\(name) in \(db)")
        }
        let report = try backend.verify().damaged
        #expect(Set(report.map(\.row)) == rows, "\(report)")
        // A query over many items skips the damaged rows.
        let all = try client.copyMatchingItems(["class": "genp", "m_Limit": "m_LimitAll", "r_Data": true]) as? [Data]
        #expect(Set(all ?? []) == Set(intact.map { Data("data-\($0)".utf8) }))
        if !absent.isEmpty {
            // What a lookup cannot see, the row-set check and the damaged-row list both name.
            #expect(!(try backend.verify().isIntact))
        }
    }

    @Test("a byte flipped in any column of a row is detected; other items still read", arguments: columns)
    func flippedByte(column: String) throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = try copy(try makeKeychain(dir, key: key), "\(column).db", dir)
        let raw = RawDB(db)
        if column == "version" {
            raw.exec("UPDATE sealed_items SET version = version - 1 WHERE seq = 2")
        } else if column == "h_srvr" {
            // genp has no server: a forged HMAC where the column is NULL is damage too.
            raw.set(column, row: 2, [UInt8](repeating: 7, count: 32))
        } else {
            var bytes = try #require(raw.blob("SELECT \(column) FROM sealed_items WHERE seq = 2"))
            bytes[bytes.count / 2] ^= 0x01
            raw.set(column, row: 2, bytes)
        }
        if column == "pk" {
            try expectDetected(db, key: key, damaged: [], absent: ["b"], intact: ["a", "c"], rows: [2])
        } else {
            try expectDetected(db, key: key, damaged: ["b"], intact: ["a", "c"], rows: [2])
        }
    }

    @Test("swapped ciphertexts, swapped primary-key and attribute HMACs are detected")
    func swaps() throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let original = try makeKeychain(dir, key: key)
        for column in ["ct", "pk", "h_acct", "h_labl"] {
            let db = try copy(original, "swap-\(column).db", dir)
            let raw = RawDB(db)
            let one = try #require(raw.blob("SELECT \(column) FROM sealed_items WHERE seq = 1"))
            let two = try #require(raw.blob("SELECT \(column) FROM sealed_items WHERE seq = 2"))
            raw.set(column, row: 1, [UInt8](repeating: 0, count: 1))  // dodge the UNIQUE index while swapping
            raw.set(column, row: 2, one)
            raw.set(column, row: 1, two)
            try expectDetected(db, key: key, damaged: ["a", "b"], intact: ["c"], rows: [1, 2])
        }
        // A row copied over another (ciphertext and every column but the unique ones): still caught.
        let db = try copy(original, "copied-row.db", dir)
        RawDB(db).exec(
            "UPDATE sealed_items SET (class, h_svce, h_acct, h_srvr, h_labl, h_agrp, h_sync, ct) = "
                + "(SELECT class, h_svce, h_acct, h_srvr, h_labl, h_agrp, h_sync, ct FROM sealed_items WHERE seq = 1) "
                + "WHERE seq = 3")
        let backend = try openBackend(db, .keyFile(key))
        #expect(Set(try backend.verify().damaged.map(\.row)) == [3])
        #expect(try readData(SecItemClient(backend: backend, accessGroups: groups), "b") == "data-b")
    }

    @Test("a truncated file gives a clear status, never a crash or wrong data")
    func truncated() throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = dir.file("k.db")
        do {
            let backend = try openBackend(db, .keyFile(key))
            let client = SecItemClient(backend: backend, accessGroups: groups)
            for i in 0..<120 { try client.addItem(genp("n\(i)", data: "data-n\(i)-" + String(repeating: "x", count: 1500))) }
            backend.close()
        }
        let size = try #require(fileBytes(db)).count
        for fraction in [0.9, 0.5, 0.05] {
            let copy = dir.file("trunc-\(fraction).db")
            try FileManager.default.copyItem(atPath: db, toPath: copy)
            truncate(copy, off_t(Double(size) * fraction))
            let backend: SQLiteBackend
            do {
                backend = try openBackend(copy, .keyFile(key))
            } catch let error as SecItemError {
                #expect(error.status == errSecInvalidKeychain, "\(error)")
                continue
            }
            let client = SecItemClient(backend: backend, accessGroups: groups)
            var failures = 0
            for i in 0..<120 {
                do {
                    let value = try readData(client, "n\(i)")
                    #expect(value == "data-n\(i)-" + String(repeating: "x", count: 1500))
                } catch {
                    failures += 1
                    #expect([errSecInvalidKeychain, errSecDecode, errSecItemNotFound].contains(error.status), "\(error)")
                }
            }
            let verify = thrownSecItemError { _ = try backend.verify() }
            #expect(verify?.status == errSecInvalidKeychain, "truncation to \(fraction) not reported by verify")
            // Reads notice it too (the last items' pages are gone), not only verify.
            #expect(failures > 0, "every item of a file truncated to \(fraction) read back")
        }
    }
}
