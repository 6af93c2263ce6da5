import Foundation
import SecItem
import SecItemCore
import SecItemSQLite
import SecItemSealedStore
import SecItemSecretService
import SecItemTestSupport
import Testing

/// Rollback evidence of a file store keyed by the login keyring (docs/file-format.md,
/// "Rollback evidence"): the high-water mark is also an `org.secitem.RollbackMark` item in
/// the login keyring (gnome-keyring), so deleting the state directory does not lose it.
/// Each "new process" below is `secitem` or SecItemSQLiteHelper: a process that never
/// read the keyring's mark before (this process caches it once read).
@Suite("Rollback evidence: the login keyring's mark", .serialized)
struct SecretServiceRollbackTests {
    struct Host {
        var store: KeyedStore
        var db: String { store.path }
        var stateHome: String { store.root.appendingPathComponent("state").path }
        var stateDirectory: String { stateHome + "/secitem/high-water" }

        init(base: [String: String] = ProcessInfo.processInfo.environment) throws {
            store = try KeyedStore(keySource: "secret-service", base: base)
            store.environment["XDG_STATE_HOME"] = store.root.appendingPathComponent("state").path
        }

        /// Opens the store in this process (its bus is scripts/test's gnome-keyring).
        func open(_ mode: RollbackCheckMode = .enforce) throws -> SQLiteBackend {
            var configuration = SQLiteBackend.Configuration(path: db, keySource: .secretServiceItem(), rollbackCheck: mode)
            configuration.environment = ["XDG_STATE_HOME": stateHome]
            return try SQLiteBackend(configuration: configuration)
        }

        func helper(_ arguments: [String], stdin: String? = nil) throws -> ProcessOutput {
            var env = store.environment
            env["SECITEM_KEY_FILE"] = "-"
            return try ChildProcess.run(
                try Executables.built("SecItemSQLiteHelper"), arguments, environment: env, stdin: stdin.map { Data($0.utf8) },
                timeout: .seconds(60))
        }

        /// The keyring's mark alone, as a new process with an empty state directory reads it.
        func keyringMark() throws -> String {
            let out = try helper(["keyring-mark", db])
            guard out.status == 0, let line = out.stdout.split(separator: "\n").last else {
                throw TestSetupError("keyring-mark: \(out.stdout) \(out.stderr)")
            }
            return String(line)
        }

        func commitment() throws -> String {
            let backend = try open(.report)
            defer { backend.close() }
            return try backend.verify().commitment
        }

        func deleteState() { try? FileManager.default.removeItem(atPath: stateHome) }

        func replace(with copy: String) throws {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: db + suffix) }
            try FileManager.default.copyItem(atPath: copy, toPath: db)
            if FileManager.default.fileExists(atPath: copy + "-wal") { try FileManager.default.copyItem(atPath: copy + "-wal", toPath: db + "-wal") }
        }

        /// How many mark items the keyring holds for this file (`secret-tool search` prints
        /// each item: its output is counted, never shown).
        func markItems() throws -> Int {
            let out = try KeyedStore.secretTool(
                ["search", "--all", "xdg:schema", "org.secitem.RollbackMark", "witnessed", try witnessedName()],
                environment: store.environment)
            return out.stdout.split(separator: "\n").filter { $0.hasPrefix("label = secitem rollback mark") }.count
        }

        func witnessedName() throws -> String {
            let real = try #require(realpath(db, nil))
            defer { free(real) }
            return HighWaterMark.hex(KeyringMarkPayload.identityDigest(WitnessedStore(identity: "file " + String(cString: real), location: db)))
        }

        func client(_ backend: SQLiteBackend) -> SecItemClient {
            SecItemClient(backend: backend, accessGroups: AccessGroups([KeyedStore.group]))
        }

        func remove() {
            if let name = try? witnessedName() {
                _ = try? KeyedStore.secretTool(["clear", "xdg:schema", "org.secitem.RollbackMark", "witnessed", name], environment: store.environment)
            }
            store.remove()
        }
    }

    static func update(_ account: String, _ value: String) -> ([String: Any], [String: Any]) {
        (
            [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: account, kSecAttrService as String: "keysource"],
            [kSecValueData as String: Data(value.utf8)]
        )
    }

    @Test("an older copy put back after the state directory was deleted is refused by a new process (the keyring's mark, digest and all); the newest state is not; accept-restore resets the keyring's mark, logged")
    func stateDirectoryDeleted() throws {
        try TestService.secretService.require()
        let host = try Host()
        defer { host.remove() }
        #expect(try host.store.add("alice", "v1").status == 0)
        let old = host.store.root.appendingPathComponent("old.db").path
        try FileManager.default.copyItem(atPath: host.db, toPath: old)
        if FileManager.default.fileExists(atPath: host.db + "-wal") {
            try FileManager.default.copyItem(atPath: host.db + "-wal", toPath: old + "-wal")
        }
        do {
            let backend = try host.open()
            let (query, change) = Self.update("alice", "v2")
            try host.client(backend).updateItems(query, change)
            backend.close()
        }
        #expect(try host.store.add("bob", "b").status == 0)
        let newest = try host.commitment()
        #expect(try host.keyringMark() == newest, "the keyring's mark follows each commit, digest and all")
        #expect(try host.markItems() == 1)

        // The state directory deleted: the newest state opens in a new process (no false alarm).
        host.deleteState()
        let fresh = try host.store.find("alice")
        #expect(fresh.status == 0 && fresh.stdout == "v2\n", "\(fresh.stderr)")

        // Deleted again, and the older copy put back: a new process refuses it, the file unchanged.
        host.deleteState()
        try host.replace(with: old)
        let before = host.store.fileBytes()
        let refused = try host.store.find("alice")
        #expect(refused.status != 0)
        #expect(mentions(refused, status: errSecDecode), "\(refused.stderr)")
        #expect(refused.stderr.contains("an older generation") && refused.stderr.contains(newest), "seen vs expected: \(refused.stderr)")
        #expect(refused.stderr.contains("login keyring"), "the message names where the mark was kept: \(refused.stderr)")
        #expect(host.store.fileBytes() == before, "a refused open changed the file")
        let verify = try host.store.cli(["verify"])
        #expect(verify.status != 0 && verify.stdout.contains("rolled back"), "\(verify.stdout) \(verify.stderr)")

        // The operator accepts it (a new process): the keyring's mark is the restored state, logged.
        let accept = try host.store.cli(["accept-restore", "--reason", "restored on purpose (keyring test)"])
        #expect(accept.status == 0, "\(accept.stderr)")
        let restored = try host.commitment()
        #expect(accept.stdout.contains("\(newest) -> \(restored)"), "\(accept.stdout)")
        #expect(try host.keyringMark() == restored)
        let log = try String(contentsOfFile: host.stateDirectory + "/accepted.log", encoding: .utf8)
        #expect(log.contains("restored on purpose (keyring test)") && log.contains("login keyring mark set to it"), "\(log)")
        #expect(try host.store.find("alice").stdout == "v1\n")
        // Without the state directory again: the accepted history goes on.
        host.deleteState()
        #expect(try host.store.add("carol", "c").status == 0)
        #expect(try host.store.find("alice").stdout == "v1\n")
        #expect(try host.markItems() == 1)
    }

    @Test("a mark item another program wrote (garbage, or a lower mark whose MAC does not verify) is errSecDecode, not a silent pass; accept-restore replaces it")
    func forgedMark() throws {
        try TestService.secretService.require()
        let host = try Host()
        defer { host.remove() }
        #expect(try host.store.add("alice", "v1").status == 0)
        #expect(try host.store.add("bob", "b").status == 0)
        let storeID = try host.store.meta("kek_store")
        let real = try #require(realpath(host.db, nil))
        let store = WitnessedStore(identity: "file " + String(cString: real), location: host.db)
        free(real)
        // A well-formed lower mark, for this store and naming its key, MAC'd under another key.
        var lower = KeyringMarkPayload(
            mark: HighWaterMark(generation: 1, digest: [UInt8](repeating: 7, count: 16)), keyID: storeID,
            identity: KeyringMarkPayload.identityDigest(store))
        try lower.seal(SecretBytes(copying: [UInt8](repeating: 0x42, count: 32)))
        for (name, secret) in [("garbage", Data("not a mark".utf8)), ("lower", Data(lower.bytes))] {
            let stored = try ChildProcess.run(
                try Executables.which("secret-tool"),
                ["store", "--label=secitem rollback mark: forged", "xdg:schema", "org.secitem.RollbackMark", "witnessed", try host.witnessedName()],
                environment: host.store.environment, stdin: secret, timeout: .seconds(30))
            #expect(stored.status == 0, "\(stored.stderr)")
            host.deleteState()
            let find = try host.store.find("alice")
            #expect(mentions(find, status: errSecDecode), "\(name): \(find.stderr)")
            #expect(find.stderr.contains("not authentic"), "\(name): \(find.stderr)")
            let accept = try host.store.cli(["accept-restore", "--reason", "forged mark (\(name))"])
            #expect(accept.status == 0, "\(name): \(accept.stderr)")
            #expect(try host.keyringMark() == (try host.commitment()), "\(name)")
            #expect(try host.store.find("alice").stdout == "v1\n", "\(name)")
        }
    }

    @Test("the mark item deleted: no false alarm (the state directory's mark is the evidence), and the next commit writes it again; both deleted: a first use")
    func missingItem() throws {
        try TestService.secretService.require()
        let host = try Host()
        defer { host.remove() }
        #expect(try host.store.add("alice", "v1").status == 0)
        let cleared = try KeyedStore.secretTool(
            ["clear", "xdg:schema", "org.secitem.RollbackMark", "witnessed", try host.witnessedName()], environment: host.store.environment)
        #expect(cleared.status == 0)
        #expect(try host.keyringMark() == "none")
        #expect(try host.store.find("alice").stdout == "v1\n", "a deleted keyring mark is no alarm")
        #expect(try host.store.add("bob", "b").status == 0)
        #expect(try host.keyringMark() == (try host.commitment()), "the next commit wrote the keyring's mark again")
        // Both gone: nothing is known; the check starts again from the store as it is.
        _ = try KeyedStore.secretTool(
            ["clear", "xdg:schema", "org.secitem.RollbackMark", "witnessed", try host.witnessedName()], environment: host.store.environment)
        host.deleteState()
        #expect(try host.store.find("bob").stdout == "b\n")
    }

    @Test("a process killed after its commit, before any mark or between the file's mark and the keyring's: no false alarm, with or without the state directory; the keyring catches up")
    func crashAroundTheMark() throws {
        try TestService.secretService.require()
        let host = try Host()
        defer { host.remove() }
        #expect(try host.store.add("seed", "s").status == 0)
        for when in ["between", "before", "after"] {
            let start = try host.commitment()
            #expect(try host.keyringMark() == start)
            let child = try host.helper(["die-at-mark", host.db, "bob-\(when)", host.stateDirectory, when, "secret-service"])
            #expect(child.stdout.contains("dying"), "\(when): \(child.stdout) \(child.stderr)")
            #expect(child.status != 0)
            if when != "after" {
                #expect(try host.keyringMark() == start, "\(when): the keyring's mark was not raised")
            }
            if when != "between" { host.deleteState() }
            let backend = try host.open()
            let committed = try backend.verify().commitment
            #expect(Int64(committed.prefix { $0 != ":" }) == Int64(start.prefix { $0 != ":" })! + 1, "\(when)")
            var q = Query.genericPassword("reopen", "bob-\(when)")
            q["r_Data"] = true
            #expect((try SecItemClient(backend: backend, accessGroups: AccessGroups(["test"])).copyMatchingItems(q) as? Data) == Data("value-bob-\(when)".utf8))
            backend.close()
            #expect(try host.store.find("seed").stdout == "s\n", "\(when): a new process")
            // The next commit (a new process) raises the keyring's mark to the store.
            #expect(try host.store.add("next-\(when)", "n").status == 0)
            #expect(try host.keyringMark() == (try host.commitment()), "\(when): the keyring caught up")
        }
    }

    @Test("the keyring locked, then stopped, under an open store: its writes and reads go on (the evidence lags, no error); a new process cannot open it (the key is there too)")
    func lockedAndStoppedKeyring() throws {
        try TestService.secretService.require()
        let keyring = try PortalSession(withPortal: false)
        let host = try Host(base: keyring.environment)
        defer { host.store.remove() }
        var env = host.store.environment
        env["SECITEM_KEY_FILE"] = "-"
        let child = try ChildProcess(try Executables.built("SecItemSQLiteHelper"), ["keyring-survivor", host.db, host.stateHome], environment: env)
        let opened = try child.line(0)
        #expect(opened.hasPrefix("opened "), "\(opened) \(child.printedErrors)")
        let first = Int64(opened.dropFirst("opened ".count)) ?? -1
        try keyring.session.lockLogin()
        try child.send(Data("add\n".utf8))
        #expect(try child.line(1) == "added \(first + 1)", "a commit with the keyring locked: \(child.lines)")
        let mark = try String(contentsOfFile: try #require(
            try FileManager.default.contentsOfDirectory(atPath: host.stateDirectory).first { $0.hasSuffix(".mark") }
                .map { host.stateDirectory + "/" + $0 }), encoding: .utf8)
        #expect(mark.contains("generation \(first + 1)\n"), "the state directory's mark went on: \(mark)")
        host.deleteState()
        try child.send(Data("read\n".utf8))
        #expect(try child.line(2) == "read first", "a read with the state directory gone and the keyring locked: \(child.lines)")
        let locked = try host.store.find("first")
        #expect(mentions(locked, status: errSecInteractionNotAllowed), "\(locked.stderr)")
        // The keyring stopped (no Secret Service on the bus): the open store goes on.
        keyring.session.killKeyring()
        try child.send(Data("add\n".utf8))
        #expect(try child.line(3) == "added \(first + 2)", "a commit with no keyring: \(child.lines)")
        try child.send(Data("read\n".utf8))
        #expect(try child.line(4) == "read first", "\(child.lines)")
        let out = try child.finish()
        #expect(out.status == 0, "\(out.stderr)")
    }
}
