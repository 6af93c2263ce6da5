import CSecItemCrypto
import Foundation
import SecItem
import SecItemCore
import SecItemSQLite
import SecItemTestSupport
import Testing
import SecItemSealedStore

/// Format 2 against an attacker who can write the file but has no key, and the
/// upgrade from format 1 (docs/file-format.md).
@Suite("File backend: format 2 (schema, row set, rekey, upgrade)")
struct Format2Tests {
    /// Three items a, b, c; the file closed.
    func makeKeychain(_ dir: TempDir, key: String, name: String = "k.db") throws -> String {
        let db = dir.file(name)
        let backend = try openBackend(db, .keyFile(key))
        let client = SecItemClient(backend: backend, accessGroups: groups)
        for name in ["a", "b", "c"] { try client.addItem(genp(name, data: "data-\(name)")) }
        backend.close()
        return db
    }

    // MARK: The schema is authenticated

    static let plants = [
        "CREATE TRIGGER keep BEFORE UPDATE ON sealed_items BEGIN SELECT RAISE(IGNORE); END",
        "CREATE TRIGGER undead BEFORE DELETE ON sealed_items BEGIN SELECT RAISE(IGNORE); END",
        "CREATE TRIGGER vanish AFTER INSERT ON sealed_items BEGIN DELETE FROM sealed_items WHERE seq = new.seq; END",
        "CREATE VIEW peek AS SELECT * FROM sealed_items",
        "CREATE TABLE extra(x)",
        "CREATE INDEX sneaky ON sealed_items(class)",
        "DROP INDEX sealed_items_labl; CREATE INDEX sealed_items_labl ON sealed_items(h_labl, class)",
    ]

    @Test("planted triggers, views, tables or a changed index: open refuses, naming it, the file untouched", arguments: plants)
    func plantedSchema(sql: String) throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = try makeKeychain(dir, key: key)
        RawDB(db).exec(sql)
        #expect(RawDB(db).strings("SELECT count(*) FROM sqlite_schema").first != "error")
        let before = try #require(fileBytes(db))
        let error = thrownSecItemError { _ = try openBackend(db, .keyFile(key)) }
        #expect(error?.status == errSecInvalidKeychain, "\(sql)")
        #expect(error?.detail?.contains("altered outside secitem") == true, "\(error?.detail ?? "")")
        let named = ["keep", "undead", "vanish", "peek", "extra", "sneaky", "sealed_items_labl"].filter { sql.contains($0) }
        #expect(named.allSatisfy { error?.detail?.contains($0) == true }, "\(error?.detail ?? "")")
        #expect(fileBytes(db) == before, "the refused file was written")
    }

    @Test("a trigger planted while the file is open: the next write refuses and changes nothing")
    func triggerWhileOpen() throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = try makeKeychain(dir, key: key)
        let backend = try openBackend(db, .keyFile(key))
        let client = SecItemClient(backend: backend, accessGroups: groups)
        #expect(try readData(client, "a") == "data-a")
        RawDB(db).exec("CREATE TRIGGER keep BEFORE UPDATE ON sealed_items BEGIN SELECT RAISE(IGNORE); END")
        let update = thrownSecItemError { try client.updateItems(genp("a"), ["v_Data": Data("changed".utf8)]) }
        #expect(update?.status == errSecInvalidKeychain, "\(String(describing: update))")
        #expect(status { try client.addItem(genp("d", data: "data-d")) } == errSecInvalidKeychain)
        #expect(status { try client.deleteItems(genp("b")) } == errSecInvalidKeychain)
        RawDB(db).exec("DROP TRIGGER keep")
        #expect(try readData(client, "a") == "data-a")
        #expect(try readData(client, "b") == "data-b")
        #expect(status { _ = try readData(client, "d") } == errSecItemNotFound)
    }

    // MARK: The row set is committed

    @Test("a row deleted, restored from an older copy, or copied in from another file: verify names each")
    func rowSetTampering() throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = try makeKeychain(dir, key: key)
        let raw = RawDB(db)
        func uuid(_ account: String) throws -> UUID {
            let backend = try openBackend(db, .keyFile(key))
            defer { backend.close() }
            let client = SecItemClient(backend: backend, accessGroups: groups)
            var q = genp(account)
            q["r_Attributes"] = true
            q["r_PersistentRef"] = true
            let found = try #require(try client.copyMatchingItems(q) as? [String: Any])
            let ref = try #require(found["v_PersistentRef"] as? Data)
            return ref.suffix(16).withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
        }
        let idA = try uuid("a"), idB = try uuid("b")
        // An older copy of b's row, then b updated through the API.
        let oldB = raw.strings("SELECT hex(ct) || ':' || version FROM sealed_items WHERE seq = 2")[0]
        do {
            let backend = try openBackend(db, .keyFile(key))
            try SecItemClient(backend: backend, accessGroups: groups).updateItems(genp("b"), ["v_Data": Data("new-b".utf8)])
            backend.close()
        }
        let snapshot = dir.file("snapshot.db")
        try FileManager.default.copyItem(atPath: db, toPath: snapshot)

        // 1. b rolled back to its older row.
        let parts = oldB.split(separator: ":")
        raw.exec("UPDATE sealed_items SET ct = x'\(parts[0])', version = \(parts[1]) WHERE seq = 2")
        // 2. a deleted.
        raw.exec("DELETE FROM sealed_items WHERE seq = 1")
        var report = try openBackend(db, .keyFile(key)).verify()
        #expect(report.damaged.isEmpty, "\(report.damaged)")
        let kinds = Dictionary(report.rowSet.map { ($0.id, $0.kind) }, uniquingKeysWith: { a, _ in a })
        #expect(kinds[idB] == .older, "\(report.problems)")
        #expect(kinds[idA] == .missing, "\(report.problems)")
        #expect(report.rowCountDifference == -1)
        #expect(!report.isIntact)
        // During normal operation the rolled-back b reads as its old value: only
        // verify (or the commitment kept elsewhere) reveals a single-row rollback.
        #expect(try readData(SecItemClient(backend: openBackend(db, .keyFile(key)), accessGroups: groups), "b") == "data-b")

        // 3. A row copied in from another copy of the file (same key), written after that copy was taken.
        let other = dir.file("other.db")
        try FileManager.default.copyItem(atPath: snapshot, toPath: other)
        do {
            let backend = try openBackend(other, .keyFile(key))
            let client = SecItemClient(backend: backend, accessGroups: groups)
            try client.addItem(genp("x", data: "data-x"))
            try client.addItem(genp("y", data: "data-y"))
            backend.close()
        }
        let otherRaw = RawDB(other)
        let columns = "uuid, class, pk, h_svce, h_acct, h_srvr, h_labl, h_agrp, h_sync, version, ct"
        let target = dir.file("target.db")
        try FileManager.default.copyItem(atPath: snapshot, toPath: target)
        let attach = RawDB(target)
        attach.exec("ATTACH '\(other)' AS o")
        attach.exec("INSERT INTO sealed_items(\(columns)) SELECT \(columns) FROM o.sealed_items WHERE seq = (SELECT max(seq) FROM o.sealed_items)")
        #expect(attach.strings("SELECT count(*) FROM sealed_items") == ["4"])
        _ = otherRaw
        let backend = try openBackend(target, .keyFile(key))
        let client = SecItemClient(backend: backend, accessGroups: groups)
        // Normal operation: a row newer than the committed state is refused when read.
        #expect(status { _ = try readData(client, "y") } == errSecDecode)
        report = try backend.verify()
        #expect(report.rowSet.map(\.kind) == [.unknown], "\(report.problems)")
        #expect(report.rowCountDifference == 1)
        #expect(report.damaged.count == 1, "the row from the future is also unreadable")
        // The untouched snapshot verifies clean, and its commitment moves with every write.
        let clean = try openBackend(snapshot, .keyFile(key))
        let first = try clean.verify()
        #expect(first.isIntact, "\(first.problems)")
        try SecItemClient(backend: clean, accessGroups: groups).addItem(genp("z", data: "data-z"))
        let second = try clean.verify()
        #expect(second.isIntact && second.commitment != first.commitment && !first.commitment.isEmpty)
    }

    @Test("the state row edited without the key: the file is refused")
    func stateForged() throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = try makeKeychain(dir, key: key)
        RawDB(db).exec("UPDATE state SET count = count + 1")
        let error = thrownSecItemError { _ = try openBackend(db, .keyFile(key)) }
        #expect(error?.status == errSecInvalidKeychain)
        #expect(error?.detail?.contains("commitment") == true)
    }

    // MARK: Rekey rotates

    /// What an attacker holding an old copy of the file and the old passphrase does
    /// with the bytes: scrypt, unwrap the old data key, HKDF, and try to open every
    /// box in the current file. Returns how many boxes opened.
    func boxesOpenedWithOldSecret(oldCopy: String, current: String, passphrase: String) throws -> Int {
        let old = RawDB(oldCopy)
        let salt = try #require(old.blob("SELECT value FROM meta WHERE key = 'scrypt_salt'"))
        let logN = Int(try #require(old.strings("SELECT value FROM meta WHERE key = 'scrypt_log_n'").first.flatMap { Int($0) }))
        let r = try #require(old.strings("SELECT value FROM meta WHERE key = 'scrypt_r'").first.flatMap { UInt64($0) })
        let p = try #require(old.strings("SELECT value FROM meta WHERE key = 'scrypt_p'").first.flatMap { UInt64($0) })
        let wrapped = try #require(old.blob("SELECT value FROM meta WHERE key = 'data_key'"))
        var kek = [UInt8](repeating: 0, count: 32)
        let pass = Array(passphrase.utf8)
        let rc = pass.withUnsafeBufferPointer { pp in
            pp.withMemoryRebound(to: CChar.self) {
                csecitem_scrypt($0.baseAddress, pass.count, salt, salt.count, 1 << UInt64(logN), r, p, 1 << 30, &kek, 32)
            }
        }
        #expect(rc == 0)
        var aad = Array("secitem-file".utf8) + [3] + Array("data-key/passphrase".utf8)
        aad += Array("/\(logN)/\(r)/\(p)/".utf8) + salt
        var dataKey = [UInt8](repeating: 0, count: 32)
        let unwrapped = wrapped.withUnsafeBufferPointer { w in
            csecitem_aes256gcm_open(kek, w.baseAddress!, aad, aad.count, w.baseAddress! + 12, 32, w.baseAddress! + 44, &dataKey)
        }
        #expect(unwrapped == 0, "the old passphrase must open the old copy's wrapped key")
        var encKey = [UInt8](repeating: 0, count: 32)
        let info = Array("secitem-file/3 aes-256-gcm".utf8)
        #expect(csecitem_hkdf_sha256(dataKey, 32, nil, 0, info, info.count, &encKey, 32) == 0)
        // Every box of the current file, with its associated data rebuilt from the row.
        let now = RawDB(current)
        let count = Int(now.strings("SELECT count(*) FROM sealed_items")[0]) ?? 0
        var opened = 0
        for seq in now.strings("SELECT seq FROM sealed_items") {
            func col(_ name: String) -> [UInt8]? { now.blob("SELECT \(name) FROM sealed_items WHERE seq = \(seq)") }
            var ad = Array("secitem-file".utf8) + [3] + (col("uuid") ?? [])
            let cls = col("class") ?? []
            ad += [UInt8(cls.count)] + cls + (col("pk") ?? [])
            for c in ["h_svce", "h_acct", "h_srvr", "h_labl", "h_agrp", "h_sync"] {
                if now.strings("SELECT \(c) IS NULL FROM sealed_items WHERE seq = \(seq)") == ["1"] {
                    ad.append(0)
                } else {
                    let v = col(c) ?? []
                    ad += [1, UInt8(v.count)] + v
                }
            }
            let version = UInt64(now.strings("SELECT version FROM sealed_items WHERE seq = \(seq)")[0]) ?? 0
            for i in 0..<8 { ad.append(UInt8(truncatingIfNeeded: version >> UInt64(56 - 8 * i))) }
            // Format 3: the row's seq, after the version.
            let position = UInt64(seq) ?? 0
            for i in 0..<8 { ad.append(UInt8(truncatingIfNeeded: position >> UInt64(56 - 8 * i))) }
            let box = col("ct") ?? []
            guard box.count >= 28 else { continue }
            var plain = [UInt8](repeating: 0, count: box.count)
            let n = box.count - 28
            let result = box.withUnsafeBufferPointer { b in
                csecitem_aes256gcm_open(encKey, b.baseAddress!, ad, ad.count, b.baseAddress! + 12, n, b.baseAddress! + 12 + n, &plain)
            }
            if result == 0 { opened += 1 }
        }
        #expect(count > 0)
        return opened
    }

    @Test("rekey rotates: an old copy plus the old passphrase opens no row written after; --rewrap-only would")
    func rekeyRotates() throws {
        for rewrapOnly in [false, true] {
            let dir = TempDir()
            let db = dir.file("k.db")
            do {
                let backend = try openBackend(db, .passphrase("old secret"))
                try SecItemClient(backend: backend, accessGroups: groups).addItem(genp("before", data: "data-before"))
                backend.close()
            }
            let oldCopy = dir.file("backup.db")
            try FileManager.default.copyItem(atPath: db, toPath: oldCopy)
            // The attacker's tool works: the old copy opens with the old secret.
            #expect(try boxesOpenedWithOldSecret(oldCopy: oldCopy, current: oldCopy, passphrase: "old secret") == 1)
            let backend = try openBackend(db, .passphrase("old secret"))
            try backend.rekey(to: .passphrase("new secret"), rewrapOnly: rewrapOnly)
            try SecItemClient(backend: backend, accessGroups: groups).addItem(genp("after", data: "data-after"))
            backend.close()
            let opened = try boxesOpenedWithOldSecret(oldCopy: oldCopy, current: db, passphrase: "old secret")
            #expect(opened == (rewrapOnly ? 2 : 0), "rewrapOnly \(rewrapOnly): \(opened) boxes opened with the old secret")
            let client = SecItemClient(backend: try openBackend(db, .passphrase("new secret")), accessGroups: groups)
            #expect(try readData(client, "before") == "data-before")
            #expect(try readData(client, "after") == "data-after")
            #expect(status { _ = try openBackend(db, .passphrase("old secret")) } == errSecAuthFailed)
        }
    }

    // MARK: Upgrade from format 1

    static let fixture: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<2 { url.deleteLastPathComponent() }
        return url.appendingPathComponent("Fixtures/format1-default-group").path
    }()

    /// The fixture's items as its README lists them: (class, account, group, data).
    static let fixtureItems: [(String, String, String, Data)] = [
        ("genp", "alice", "default", Data("s3cret-alice".utf8)),
        ("inet", "bob", "default", Data("hunter2".utf8)),
        ("genp", "binary", "default", Data((0...255).map { UInt8($0) })),
        ("genp", "carol", "com.example.shared", Data("shared-secret".utf8)),
    ]

    /// A private copy of a fixture file and (for the key-file one) its key, 0600.
    func fixtureCopy(_ dir: TempDir, _ name: String) throws -> (db: String, key: String) {
        let db = dir.file(name)
        try FileManager.default.copyItem(atPath: Self.fixture + "/" + name, toPath: db)
        let key = dir.file("fixture.key")
        if !FileManager.default.fileExists(atPath: key) {
            try FileManager.default.copyItem(atPath: Self.fixture + "/keychain.key", toPath: key)
            chmod(key, 0o600)
        }
        return (db, key)
    }

    /// Every fixture item, attributes and data, through the full SecItem path.
    func readFixture(_ backend: SQLiteBackend) throws -> [[String: Any]] {
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["default", "com.example.shared"]))
        var out: [[String: Any]] = []
        for (cls, account, group, data) in Self.fixtureItems {
            let found = try #require(
                try client.copyMatchingItems(
                    ["class": cls, "acct": account, "r_Attributes": true, "r_Data": true, "agrp": group]) as? [String: Any],
                "\(account)")
            #expect(found["v_Data"] as? Data == data, "\(account): data not byte for byte")
            out.append(found)
        }
        return out
    }

    /// Equal item dictionaries: same keys, each value equal by its printed form
    /// (strings, numbers, dates and data print exactly).
    func same(_ a: [[String: Any]], _ b: [[String: Any]]) -> Bool {
        func canonical(_ d: [String: Any]) -> [String] {
            d.keys.sorted().map { key in
                let value = d[key]!
                if let data = value as? Data { return key + "=" + data.base64EncodedString() }
                if let date = value as? Date { return key + "=" + String(date.timeIntervalSinceReferenceDate) }
                return key + "=" + String(describing: value)
            }
        }
        let equal = a.map(canonical) == b.map(canonical)
        if !equal { print("differ:\n\(a.map(canonical))\n\(b.map(canonical))") }
        return equal
    }

    @Test("the format-1 fixtures read as they are, upgrade on the first write, every item byte for byte")
    func upgradeFixture() throws {
        for (name, source) in [("keychain.db", nil), ("passphrase.db", SQLiteBackend.KeySource.passphrase("fixture passphrase"))] {
            let dir = TempDir()
            let (db, key) = try fixtureCopy(dir, name)
            let backend = try openBackend(db, source ?? .keyFile(key))
            #expect(backend.formatVersion == 1)
            let before = try readFixture(backend)
            #expect(backend.formatVersion == 1, "reading must not upgrade")
            #expect(try backend.verify().isIntact)
            // The first write upgrades, in the same transaction.
            let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["default", "com.example.shared"]))
            try client.addItem(genp("new", data: "data-new"))
            #expect(backend.formatVersion == 3)
            #expect(same(try readFixture(backend), before))
            let report = try backend.verify()
            #expect(report.isIntact && report.format == 3, "\(report.problems)")
            backend.close()
            let raw = RawDB(db)
            #expect(raw.strings("SELECT value FROM meta WHERE key = 'format'") == ["3"])
            #expect(raw.strings("SELECT name FROM sqlite_schema WHERE name = 'items'").isEmpty)
            let reopened = try openBackend(db, source ?? .keyFile(key))
            #expect(same(try readFixture(reopened), before))
            #expect(try reopened.upgrade() == false)
        }
    }

    @Test("SIGKILL in the middle of an upgrade leaves format 1 whole; the next upgrade completes")
    func upgradeKilled() throws {
        let dir = TempDir()
        let (db, key) = try fixtureCopy(dir, "keychain.db")
        let before = try readFixture(try openBackend(db, .keyFile(key)))
        let child = try Child(["upgrade-stall", db], keyFile: key)
        try Wait.until("the helper to reach the middle of the upgrade", timeout: .seconds(60)) { child.lines.contains("stalled") }
        child.kill()
        _ = try child.finish()
        let backend = try openBackend(db, .keyFile(key))
        #expect(backend.formatVersion == 1, "a killed upgrade must leave format 1")
        #expect(same(try readFixture(backend), before))
        #expect(try backend.verify().isIntact)
        backend.close()
        // Random moments too, then a clean upgrade.
        var seed = UInt64(Date().timeIntervalSince1970 * 1000)
        print("upgradeKilled seed \(seed)")
        for _ in 0..<5 {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            let child = try Child(["upgrade", db], keyFile: key)
            usleep(useconds_t(seed >> 40) % 60_000)
            child.kill()
            _ = try child.finish()
            let backend = try openBackend(db, .keyFile(key))
            #expect([1, 3].contains(backend.formatVersion))
            #expect(same(try readFixture(backend), before))
            #expect(try backend.verify().isIntact)
            backend.close()
        }
        let result = try runHelper(["upgrade", db], keyFile: key)
        #expect(result.lines == ["upgraded"] && result.status == 0)
        let upgraded = try openBackend(db, .keyFile(key))
        #expect(upgraded.formatVersion == 3)
        #expect(same(try readFixture(upgraded), before))
    }

    @Test("an upgrade refuses a file with a damaged row, leaving it format 1 and readable")
    func upgradeRefusesDamage() throws {
        let dir = TempDir()
        let (db, key) = try fixtureCopy(dir, "keychain.db")
        RawDB(db).exec("UPDATE items SET ct = substr(ct, 1, 20) || x'00' || substr(ct, 22) WHERE seq = 3")
        let backend = try openBackend(db, .keyFile(key))
        #expect(try backend.verify().damaged.count == 1)
        let error = thrownSecItemError { try backend.upgrade() }
        #expect(error?.status == errSecDecode, "\(String(describing: error))")
        #expect(backend.formatVersion == 1)
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["default", "com.example.shared"]))
        #expect(try (client.copyMatchingItems(["class": "genp", "acct": "alice", "r_Data": true]) as? Data) == Data("s3cret-alice".utf8))
    }

    // MARK: Staying current without a query per operation

    @Test("reads and writes re-read the file's state only after another connection committed")
    func synchronisation() throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = try makeKeychain(dir, key: key)
        let backend = try openBackend(db, .keyFile(key))
        let client = SecItemClient(backend: backend, accessGroups: groups)
        let start = backend.synchronisations
        for i in 0..<20 {
            try client.addItem(genp("own-\(i)", data: "v"))
            #expect(try readData(client, "own-\(i)") == "v")
            #expect(status { _ = try readData(client, "absent-\(i)") } == errSecItemNotFound)
            try client.updateItems(genp("own-\(i)"), ["v_Data": Data("w".utf8)])
        }
        #expect(backend.synchronisations == start, "this connection's own writes made it re-read the file")
        // Another connection writes: the next operation re-reads once, then no more.
        let other = try openBackend(db, .keyFile(key))
        try SecItemClient(backend: other, accessGroups: groups).addItem(genp("theirs", data: "t"))
        #expect(try readData(client, "theirs") == "t")
        #expect(backend.synchronisations == start + 1)
        for _ in 0..<5 { #expect(try readData(client, "a") == "data-a") }
        #expect(backend.synchronisations == start + 1)
    }

    // MARK: Deleted content does not linger

    @Test("a deleted item's box is nowhere in the files once the last connection closed")
    func secureDelete() throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = try makeKeychain(dir, key: key)
        let backend = try openBackend(db, .keyFile(key))
        let client = SecItemClient(backend: backend, accessGroups: groups)
        try client.addItem(genp("doomed", data: String(repeating: "z", count: 3000)))
        let box = try #require(RawDB(db).blob("SELECT ct FROM sealed_items ORDER BY seq DESC LIMIT 1"))
        #expect(box.count > 3000)
        try client.deleteItems(genp("doomed"))
        try client.addItem(genp("after", data: "data-after"))
        backend.close()
        #expect(!FileManager.default.fileExists(atPath: db + "-wal") || (fileBytes(db + "-wal")?.isEmpty ?? true),
                "the WAL was not checkpointed on the last close")
        let needle = Data(box[100..<164])
        for path in [db, db + "-wal"] {
            guard let bytes = fileBytes(path) else { continue }
            #expect(bytes.range(of: needle) == nil, "the deleted box lingers in \(path)")
        }
    }
}
