import Foundation
import SecItem
import SecItemCore
import SecItemSQLite
import SecItemTestSupport
import Testing
import SecItemSealedStore

@Suite("File backend: behaviour")
struct BackendTests {
    @Test("add, find, update, delete, duplicates and order on a real file")
    func semantics() throws {
        let dir = TempDir()
        let backend = try openBackend(dir.file("k.db"), .keyFile(try makeKeyFile(dir.file("key"))))
        #expect(backend.kind == .file)
        let client = SecItemClient(backend: backend, accessGroups: groups)
        for i in 0..<5 { try client.addItem(genp("acct\(i)", data: "secret\(i)")) }
        #expect(status { try client.addItem(genp("acct1", data: "other")) } == errSecDuplicateItem)
        #expect(try readData(client, "acct3") == "secret3")
        #expect(status { _ = try readData(client, "nobody") } == errSecItemNotFound)

        // Oldest first, whatever the query path.
        var all: [String: Any] = ["class": "genp", "m_Limit": "m_LimitAll", "r_Attributes": true]
        let items = try #require(try client.copyMatchingItems(all) as? [[String: Any]])
        #expect(items.compactMap { $0["acct"] as? String } == (0..<5).map { "acct\($0)" })
        all["svce"] = "svc"
        let bySvc = try #require(try client.copyMatchingItems(all) as? [[String: Any]])
        #expect(bySvc.count == 5)

        // Case-insensitive matching goes around the HMAC index.
        var ci = genp("ACCT2")
        ci["m_CaseInsensitive"] = true
        ci["r_Data"] = true
        #expect((try client.copyMatchingItems(ci) as? Data) == Data("secret2".utf8))

        // Update keeps order and identity; a collision changes nothing.
        var refQuery = genp("acct0")
        refQuery["r_PersistentRef"] = true
        let ref = try #require(try client.copyMatchingItems(refQuery) as? Data)
        try client.updateItems(genp("acct0"), ["v_Data": Data("new0".utf8), "labl": "L"])
        #expect(try readData(client, "acct0") == "new0")
        #expect(
            (try client.copyMatchingItems(["v_PersistentRef": ref, "r_Data": true]) as? Data) == Data("new0".utf8))
        #expect(status { try client.updateItems(["class": "genp", "svce": "svc"], ["acct": "same"]) } == errSecDuplicateItem)
        #expect(try readData(client, "acct4") == "secret4")
        // A rename onto a freed key within one update is fine (parked primary keys).
        try client.updateItems(genp("acct4"), ["acct": "acct5"])
        #expect(try readData(client, "acct5") == "secret4")
        // Labels are indexed too.
        let byLabel = try client.copyMatchingItems(["class": "genp", "labl": "L", "r_Data": true]) as? Data
        #expect(byLabel == Data("new0".utf8))

        // Sync state and access groups are part of the key.
        var synced = genp("acct1", data: "s")
        synced["sync"] = true
        try client.addItem(synced)
        #expect(try readData(client, "acct1") == "secret1")

        #expect(try client.deleteItems(["class": "genp", "svce": "svc"]) == 5)
        #expect(status { try client.deleteItems(genp("acct1")) } == errSecItemNotFound)
        #expect(try backend.verify().isIntact)
    }

    @Test("many threads at once on one backend and on two connections to one file")
    func threads() async throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let a = try openBackend(dir.file("k.db"), .keyFile(key))
        let b = try openBackend(dir.file("k.db"), .keyFile(key))
        // Every call's outcome is kept: no error may be swallowed.
        let failures = await withTaskGroup(of: [String].self) { group in
            for t in 0..<6 {
                let client = SecItemClient(backend: t % 2 == 0 ? a : b, accessGroups: groups)
                group.addTask {
                    var failures: [String] = []
                    for i in 0..<25 {
                        let account = "t\(t)-\(i)"
                        do {
                            try client.addItem(genp(account, data: "v\(account)"))
                            let back = try readData(client, account)
                            if back != "v\(account)" { failures.append("\(account) read back \(back ?? "nil")") }
                        } catch {
                            failures.append("\(account): \(error)")
                        }
                    }
                    return failures
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(failures.isEmpty, "\(failures)")
        // Each connection sees every item the other wrote, with its own data.
        for backend in [a, b] {
            let all = try backend.fetch(matching: ItemQuery(itemClass: .genericPassword, accessGroups: ["test"]), limit: nil)
            #expect(all.count == 150)
            let accounts = Set(all.compactMap { item -> String? in
                guard case .string(let account)? = item.attributes["acct"] else { return nil }
                return item.data == Data("v\(account)".utf8) ? account : nil
            })
            #expect(accounts == Set((0..<6).flatMap { t in (0..<25).map { "t\(t)-\($0)" } }))
        }
    }

    @Test("items survive closing and reopening, by another process")
    func reopenByAnotherProcess() throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = dir.file("sub/k.db")
        do {
            let backend = try openBackend(db, .keyFile(key))
            let client = SecItemClient(backend: backend, accessGroups: groups)
            try client.addItem(["class": "genp", "svce": "reopen", "acct": "alice", "v_Data": Data("from-parent".utf8)])
            backend.close()
            #expect(status { _ = try backend.verify() } == errSecNotAvailable)
        }
        var st = stat()
        stat(dir.file("sub"), &st)
        #expect(st.st_mode & 0o777 == 0o700)
        stat(db, &st)
        #expect(st.st_mode & 0o777 == 0o600)

        let get = try runHelper(["get", db, "alice"], keyFile: key)
        #expect(get.status == 0)
        #expect(get.lines == ["from-parent"])
        let put = try runHelper(["put", db, "bob", "from-child"], keyFile: key)
        #expect(put.lines == ["ok"])

        let backend = try openBackend(db, .keyFile(key))
        let client = SecItemClient(backend: backend, accessGroups: groups)
        #expect(try readData(client, "bob", service: "reopen") == "from-child")
    }

    @Test("nothing secret in the file or its WAL")
    func noSecretsOnDisk() throws {
        let dir = TempDir()
        let db = dir.file("k.db")
        let passphrase = "Passphrase-Zebra-7731"
        let backend = try openBackend(db, .passphrase(passphrase))
        let client = SecItemClient(backend: backend, accessGroups: groups)
        let markers = ["Account-Quokka-4471", "Service-Narwhal-9902", "Data-Pangolin-3318", "Label-Axolotl-5150",
                       "Server-Okapi-2207", "Group-Tapir-6021"]
        try client.addItem([
            "class": "genp", "acct": markers[0], "svce": markers[1], "v_Data": Data(markers[2].utf8), "labl": markers[3],
        ])
        try client.addItem(["class": "inet", "acct": markers[0], "srvr": markers[4], "v_Data": Data(markers[2].utf8)])
        let other = SecItemClient(backend: backend, accessGroups: AccessGroups([markers[5]]))
        try other.addItem(["class": "genp", "acct": markers[0], "v_Data": Data(markers[2].utf8)])

        func scan(_ label: String) {
            for path in [db, db + "-wal"] {
                guard let bytes = fileBytes(path) else { continue }
                for marker in markers + [passphrase] {
                    #expect(bytes.range(of: Data(marker.utf8)) == nil, "\(marker) found in \(label) \(path)")
                    #expect(bytes.range(of: Data(marker.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })) == nil)
                }
            }
        }
        #expect((fileBytes(db + "-wal")?.count ?? 0) > 0)
        scan("open")
        // An update replaces a row: the WAL, which held the old row's pages, is emptied after the commit.
        try client.updateItems(["class": "genp", "acct": markers[0]], ["icmt": markers[3]])
        #expect((fileBytes(db + "-wal")?.count ?? 0) == 0)
        scan("updated")
        backend.close()
        scan("closed")

        // Nor in descriptions or errors.
        let config = SQLiteBackend.Configuration(path: db, keySource: .passphrase(passphrase))
        #expect(!"\(config)".contains(passphrase))
        #expect(!String(reflecting: config).contains(passphrase))
        var dumped = ""
        dump(config, to: &dumped)
        #expect(!dumped.contains(passphrase))
        let wrong = thrownSecItemError { _ = try openBackend(db, .passphrase(passphrase + "x")) }
        #expect(wrong?.status == errSecAuthFailed)
        #expect(!"\(String(describing: wrong))".contains(passphrase))
    }

    @Test("configuration from the environment")
    func environment() throws {
        let c1 = try SQLiteBackend.Configuration.fromEnvironment(["HOME": "/home/u"])
        #expect(c1.path == "/home/u/.local/share/secitem/keychain.db")
        #expect(c1.generatedKeyFilePath == "/home/u/.config/secitem/keychain.key")
        guard c1.keySource.kind == "automatic" else { Issue.record("expected automatic"); return }
        let c2 = try SQLiteBackend.Configuration.fromEnvironment([
            "HOME": "/home/u", "XDG_DATA_HOME": "/data", "XDG_CONFIG_HOME": "/cfg", "SECITEM_PASSPHRASE": "pw",
        ])
        #expect(c2.path == "/data/secitem/keychain.db")
        #expect(c2.generatedKeyFilePath == "/cfg/secitem/keychain.key")
        guard c2.keySource.kind == "passphrase" else { Issue.record("expected passphrase"); return }
        let c3 = try SQLiteBackend.Configuration.fromEnvironment([
            "SECITEM_FILE": "/x/k.db", "SECITEM_KEY_FILE": "/x/key", "SECITEM_PASSPHRASE": "pw", "HOME": "/h",
        ])
        #expect(c3.path == "/x/k.db")
        guard c3.keySource.keyFilePath == "/x/key" else { Issue.record("key file wins"); return }
        let dir = TempDir()
        _ = try makeKeyFile(dir.file("secitem.key"))
        let c4 = try SQLiteBackend.Configuration.fromEnvironment(["HOME": "/h", "CREDENTIALS_DIRECTORY": dir.path])
        guard c4.keySource.keyFilePath == dir.file("secitem.key") else { Issue.record("credentials"); return }
        let c5 = try SQLiteBackend.Configuration.fromEnvironment([
            "HOME": "/h", "SECITEM_KEY_FILE": "/k", "SECITEM_PASSPHRASE": "pw", "SECITEM_KEY_SOURCE": "passphrase",
        ])
        guard c5.keySource.kind == "passphrase" else { Issue.record("explicit source"); return }
        #expect(
            status { _ = try SQLiteBackend.Configuration.fromEnvironment(["HOME": "/h", "SECITEM_KEY_SOURCE": "nope"]) }
                == errSecParam)
    }

    @Test("automatic: a generated 0600 key file, reused, and missing it is its own status")
    func automaticKey() throws {
        let dir = TempDir()
        let db = dir.file("data/k.db")
        let config = SQLiteBackend.Configuration(
            path: db, keySource: .automatic, generatedKeyFilePath: dir.file("config/secitem/keychain.key"))
        do {
            let client = SecItemClient(backend: try SQLiteBackend(configuration: config), accessGroups: groups)
            try client.addItem(genp("a", data: "x"))
        }
        var st = stat()
        #expect(stat(config.generatedKeyFilePath, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o600)
        let client = SecItemClient(backend: try SQLiteBackend(configuration: config), accessGroups: groups)
        #expect(try readData(client, "a") == "x")
        unlink(config.generatedKeyFilePath)
        let before = fileBytes(db)
        let error = thrownSecItemError { _ = try SQLiteBackend(configuration: config) }
        #expect(error?.status == errSecNotAvailable)
        #expect(error?.detail?.contains("missing") == true)
        #expect(!FileManager.default.fileExists(atPath: config.generatedKeyFilePath))
        #expect(fileBytes(db) == before)
    }
}
