import Foundation
import SecItem
import SecItemSQLite
import SecItemTestSupport
import Testing
import SecItemSealedStore

@Suite("File backend: keys, rekey and rotation")
struct KeyTests {
    /// A keychain with three items, closed; returns its path.
    func makeKeychain(_ dir: TempDir, _ source: SQLiteBackend.KeySource) throws -> String {
        let db = dir.file("k.db")
        let backend = try openBackend(db, source)
        let client = SecItemClient(backend: backend, accessGroups: groups)
        for name in ["a", "b", "c"] { try client.addItem(genp(name, data: "data-\(name)")) }
        backend.close()
        return db
    }

    func expectReadable(_ db: String, _ source: SQLiteBackend.KeySource) throws {
        let client = SecItemClient(backend: try openBackend(db, source), accessGroups: groups)
        for name in ["a", "b", "c"] { #expect(try readData(client, name) == "data-\(name)") }
    }

    @Test("wrong passphrase, wrong key file, loose permissions, missing key: each its own status, file unchanged")
    func badKeys() throws {
        let dir = TempDir()
        let db = try makeKeychain(dir, .passphrase("right horse battery"))
        let keyDB = dir.file("key.db")
        let key = try makeKeyFile(dir.file("key"))
        do {
            let backend = try openBackend(keyDB, .keyFile(key))
            try SecItemClient(backend: backend, accessGroups: groups).addItem(genp("a", data: "x"))
        }
        let before = fileBytes(db)
        let keyBefore = fileBytes(keyDB)

        let wrongPass = thrownSecItemError { _ = try openBackend(db, .passphrase("wrong horse")) }
        #expect(wrongPass?.status == errSecAuthFailed)
        #expect(wrongPass?.detail?.contains("passphrase does not unlock") == true)

        let otherKey = try makeKeyFile(dir.file("other.key"))
        let wrongKey = thrownSecItemError { _ = try openBackend(keyDB, .keyFile(otherKey)) }
        #expect(wrongKey?.status == errSecAuthFailed)
        #expect(wrongKey?.detail?.contains("key does not unlock") == true)

        let kindMismatch = thrownSecItemError { _ = try openBackend(db, .keyFile(key)) }
        #expect(kindMismatch?.status == errSecAuthFailed)
        #expect(kindMismatch?.detail?.contains("protected by a passphrase") == true)

        chmod(key, 0o640)
        let loose = thrownSecItemError { _ = try openBackend(keyDB, .keyFile(key)) }
        #expect(loose?.status == errSecParam)
        #expect(loose?.detail?.contains("chmod 600") == true)
        chmod(key, 0o600)

        let missing = thrownSecItemError { _ = try openBackend(keyDB, .keyFile(dir.file("nope.key"))) }
        #expect(missing?.status == errSecNotAvailable)
        #expect(missing?.detail?.contains("does not exist") == true)

        let shortKey = thrownSecItemError { _ = try openBackend(keyDB, .rawKey(Data(count: 16))) }
        #expect(shortKey?.status == errSecParam)

        _ = FileManager.default.createFile(atPath: dir.file("junk.key"), contents: Data("hello".utf8),
                                       attributes: [.posixPermissions: 0o600])
        #expect(thrownSecItemError { _ = try openBackend(keyDB, .keyFile(dir.file("junk.key"))) }?.status == errSecParam)

        // Nothing was written, and no new keychain appeared for a missing key.
        #expect(fileBytes(db) == before)
        #expect(fileBytes(keyDB) == keyBefore)
        #expect(status { _ = try openBackend(dir.file("fresh.db"), .keyFile(dir.file("nope.key"))) } == errSecNotAvailable)
        #expect(!FileManager.default.fileExists(atPath: dir.file("fresh.db")))

        try expectReadable(db, .passphrase("right horse battery"))
        // Text key files work too (hex).
        let raw = try #require(fileBytes(key))
        let hexPath = dir.file("hex.key")
        _ = FileManager.default.createFile(
            atPath: hexPath, contents: Data((raw.map { String(format: "%02x", $0) }.joined() + "\n").utf8),
            attributes: [.posixPermissions: 0o400])
        #expect(status { _ = try openBackend(keyDB, .keyFile(hexPath)) } == errSecSuccess)
    }

    @Test("not a keychain, or a newer format: errSecInvalidKeychain saying which")
    func invalidFiles() throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        _ = FileManager.default.createFile(atPath: dir.file("text.db"), contents: Data(repeating: 0x41, count: 5000))
        let text = thrownSecItemError { _ = try openBackend(dir.file("text.db"), .keyFile(key)) }
        #expect(text?.status == errSecInvalidKeychain)
        #expect(text?.detail?.contains("not an SQLite database") == true)

        _ = FileManager.default.createFile(atPath: dir.file("empty.db"), contents: Data())
        let empty = thrownSecItemError { _ = try openBackend(dir.file("empty.db"), .keyFile(key)) }
        #expect(empty?.status == errSecInvalidKeychain)
        #expect(empty?.detail?.contains("not a keychain") == true)
        #expect(fileBytes(dir.file("empty.db"))?.isEmpty == true)

        let other = RawDB(dir.file("other.db"))
        other.exec("CREATE TABLE t(x)")
        let notOurs = thrownSecItemError { _ = try openBackend(dir.file("other.db"), .keyFile(key)) }
        #expect(notOurs?.status == errSecInvalidKeychain)
        #expect(notOurs?.detail?.contains("without secitem metadata") == true)

        let db = dir.file("k.db")
        _ = try openBackend(db, .keyFile(key))
        RawDB(db).exec("UPDATE meta SET value = 4 WHERE key = 'format'")
        let newer = thrownSecItemError { _ = try openBackend(db, .keyFile(key)) }
        #expect(newer?.status == errSecInvalidKeychain)
        #expect(newer?.detail?.contains("newer") == true)
    }

    @Test("rekey both ways: passphrase → key file → passphrase")
    func rekey() throws {
        let dir = TempDir()
        let db = try makeKeychain(dir, .passphrase("first"))
        let key = try makeKeyFile(dir.file("key"))
        do {
            let backend = try openBackend(db, .passphrase("first"))
            try backend.rekey(to: .keyFile(key))
            // The open backend keeps working after its own rekey.
            #expect(try readData(SecItemClient(backend: backend, accessGroups: groups), "a") == "data-a")
        }
        #expect(status { _ = try openBackend(db, .passphrase("first")) } == errSecAuthFailed)
        try expectReadable(db, .keyFile(key))
        do {
            let backend = try openBackend(db, .keyFile(key))
            try backend.rekey(to: .passphrase("second"))
        }
        #expect(status { _ = try openBackend(db, .keyFile(key)) } == errSecAuthFailed)
        try expectReadable(db, .passphrase("second"))
        // A rekey to a bad source changes nothing.
        let backend = try openBackend(db, .passphrase("second"))
        #expect(status { try backend.rekey(to: .keyFile(dir.file("missing"))) } == errSecNotAvailable)
        try expectReadable(db, .passphrase("second"))
    }

    @Test("rotation re-encrypts every row; another connection follows; a failure mid-rotation leaves the old state")
    func rotation() throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = try makeKeychain(dir, .keyFile(key))
        let raw = RawDB(db)
        let before = raw.strings("SELECT hex(ct) || hex(pk) FROM sealed_items ORDER BY seq")
        let wrappedBefore = raw.blob("SELECT value FROM meta WHERE key = 'data_key'")

        let a = try openBackend(db, .keyFile(key))
        let b = try openBackend(db, .keyFile(key))
        let failAfterTwoRows: SQLiteBackend.RewriteObserver = { (index: Int, _: Int) throws(SecItemError) in
            if index >= 2 { throw SecItemError(errSecIO, "failure injected while re-encrypting the keychain") }
        }
        #expect(status { try a.rotateDataKey(beforeRow: failAfterTwoRows) } == errSecIO)
        #expect(raw.strings("SELECT hex(ct) || hex(pk) FROM sealed_items ORDER BY seq") == before)
        #expect(raw.blob("SELECT value FROM meta WHERE key = 'data_key'") == wrappedBefore)
        try expectReadable(db, .keyFile(key))
        #expect(try readData(SecItemClient(backend: a, accessGroups: groups), "b") == "data-b")

        try a.rotateDataKey()
        let after = raw.strings("SELECT hex(ct) || hex(pk) FROM sealed_items ORDER BY seq")
        #expect(after.count == 3)
        #expect(Set(after).isDisjoint(with: before))
        #expect(raw.blob("SELECT value FROM meta WHERE key = 'data_key'") != wrappedBefore)
        // b still holds the old data key: it notices the new epoch and unwraps again.
        let clientB = SecItemClient(backend: b, accessGroups: groups)
        #expect(try readData(clientB, "c") == "data-c")
        try clientB.addItem(genp("d", data: "data-d"))
        #expect(try readData(SecItemClient(backend: a, accessGroups: groups), "d") == "data-d")
        #expect(try a.verify().isIntact)
        try expectReadable(db, .keyFile(key))

        // After a rekey elsewhere, a connection with the old key gets a clear status.
        try a.rekey(to: .passphrase("new"))
        #expect(status { _ = try readData(clientB, "a") } == errSecAuthFailed)
    }

    @Test("a passphrase file keeps the default scrypt cost (N=2^15, r=8, p=1) in its metadata")
    func defaultScrypt() throws {
        let dir = TempDir()
        let db = dir.file("k.db")
        let config = SQLiteBackend.Configuration(path: db, keySource: .passphrase("pw"))
        #expect(config.scryptParameters == .default)
        do {
            let client = SecItemClient(backend: try SQLiteBackend(configuration: config), accessGroups: groups)
            try client.addItem(genp("a", data: "data-a"))
        }
        let raw = RawDB(db)
        #expect(raw.strings("SELECT value FROM meta WHERE key IN ('scrypt_log_n', 'scrypt_r', 'scrypt_p') ORDER BY key")
            == ["15", "1", "8"])
        #expect(raw.blob("SELECT value FROM meta WHERE key = 'scrypt_salt'")?.count == 16)
        // The cost travels with the file: opening with other defaults still works.
        let client = SecItemClient(backend: try openBackend(db, .passphrase("pw")), accessGroups: groups)
        #expect(try readData(client, "a") == "data-a")
        #expect("\(SQLiteBackend.KeySource.rawKey(Data(repeating: 0xAB, count: 32)))" == "raw key (redacted)")
    }
}
