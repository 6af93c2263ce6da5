import Foundation
import SecItem
import SecItemCore
import SecItemSQLite
import SecItemSealedStore
import SecItemSecretService
import SecItemTestSupport
import Testing

/// `SECITEM_KEY_SOURCE=secret-service`: the file keychain's key-encryption key is an
/// item in gnome-keyring's login collection (scripts/with-secret-service's, or a private
/// one for the tests that lock or stop it).
@Suite("Key source: the login keyring holds the key")
struct SecretServiceKeySourceTests {
    @Test("created with the store, reopened by `secitem` in another process; no key file written")
    func createAndReopen() throws {
        try TestService.secretService.require()
        let store = try KeyedStore(keySource: "secret-service")
        defer { store.remove() }
        let backend = try store.open()
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups([KeyedStore.group]))
        _ = try client.addItem([
            kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "alice",
            kSecAttrService as String: "keysource", kSecValueData as String: Data("in-process".utf8),
        ])
        backend.close()
        #expect(try store.meta("kek") == "secret-service")
        let storeID = try store.meta("kek_store")
        #expect(storeID.count == 32, "store id \(storeID)")
        #expect(!FileManager.default.fileExists(atPath: store.generatedKeyFile), "a key file was written beside the data")
        // Exactly one key item, with its own schema and the store's id.
        #expect(try KeyedStore.keyItems(storeID, environment: store.environment) == 1)

        let found = try store.find("alice")
        #expect(found.status == 0, "\(found.stderr)")
        #expect(found.stdout == "in-process\n")
        #expect(try store.add("bob", "from-the-cli").status == 0)
        let again = try store.open()
        defer { again.close() }
        let bob = try SecItemClient(backend: again, accessGroups: AccessGroups([KeyedStore.group])).copyMatchingItems([
            kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "bob", kSecReturnData as String: true,
        ])
        #expect(bob as? Data == Data("from-the-cli".utf8))
        // The keychain's key item is not a foreign item the Secret Service backend lists.
        #expect(ForeignItems.item(
            path: "/x", label: "", attributes: ["xdg:schema": "org.secitem.KeychainKey", "store": storeID], created: nil,
            modified: nil, data: nil) == nil)
    }

    @Test("the key item deleted: errSecNotAvailable naming the source, no new key, the file unchanged")
    func missingKeyItem() throws {
        try TestService.secretService.require()
        let store = try KeyedStore(keySource: "secret-service")
        defer { store.remove() }
        #expect(try store.add("alice", "s3cret").status == 0)
        let storeID = try store.meta("kek_store")
        let cleared = try KeyedStore.secretTool(
            ["clear", "xdg:schema", "org.secitem.KeychainKey", "store", storeID], environment: store.environment)
        #expect(cleared.status == 0, "\(cleared.stderr)")
        let before = store.fileBytes()
        let find = try store.find("alice")
        #expect(find.status != 0)
        #expect(mentions(find, status: errSecNotAvailable), "\(find.stderr)")
        #expect(find.stderr.contains("secret-service") && find.stderr.contains("no key item"), "\(find.stderr)")
        let add = try store.add("bob", "other")
        #expect(mentions(add, status: errSecNotAvailable), "\(add.stderr)")
        #expect(store.fileBytes() == before, "the keychain changed on a failed open")
        #expect(try KeyedStore.keyItems(storeID, environment: store.environment) == 0, "a new key item appeared")
        #expect(!FileManager.default.fileExists(atPath: store.generatedKeyFile))
        do {
            _ = try store.open()
            Issue.record("the store opened without its key item")
        } catch {
            #expect(error.status == errSecNotAvailable)
            #expect(!"\(error)".contains(storeID) || "\(error)".contains("store \(storeID)"))
        }
    }

    @Test("locked keyring: errSecInteractionNotAllowed naming the source, no prompt, the file unchanged")
    func lockedKeyring() throws {
        try TestService.secretService.require()
        let keyring = try PortalSession(withPortal: false)
        let store = try KeyedStore(keySource: "secret-service", base: keyring.environment)
        defer { store.remove() }
        #expect(try store.add("alice", "s3cret").status == 0)
        #expect(try store.find("alice").stdout == "s3cret\n")
        try keyring.session.lockLogin()
        let before = store.fileBytes()
        let clock = ContinuousClock.now
        let find = try store.find("alice")
        #expect(ContinuousClock.now - clock < .seconds(10), "a locked keyring must not wait for a prompt")
        #expect(mentions(find, status: errSecInteractionNotAllowed), "\(find.stderr)")
        #expect(find.stderr.contains("secret-service") && find.stderr.contains("locked"), "\(find.stderr)")
        #expect(store.fileBytes() == before)
        // A new store is not created either while the keyring is locked.
        let other = try KeyedStore(keySource: "secret-service", base: keyring.environment)
        defer { other.remove() }
        let add = try other.add("alice", "s3cret")
        #expect(mentions(add, status: errSecInteractionNotAllowed), "\(add.stderr)")
        #expect(!FileManager.default.fileExists(atPath: other.path), "a keychain was created without its key")
    }

    @Test("no Secret Service: errSecNotAvailable naming the source; nothing created")
    func absentService() throws {
        try TestService.secretService.require()
        let bare = try PortalSession(withKeyring: false, withPortal: false)
        for base in [bare.environment, ProcessInfo.processInfo.environment.merging(["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"]) { $1 }] {
            let store = try KeyedStore(keySource: "secret-service", base: base)
            defer { store.remove() }
            let add = try store.add("alice", "s3cret")
            #expect(mentions(add, status: errSecNotAvailable), "\(add.stderr)")
            #expect(add.stderr.contains("key source secret-service"), "\(add.stderr)")
            #expect(!FileManager.default.fileExists(atPath: store.path))
            #expect(!FileManager.default.fileExists(atPath: store.generatedKeyFile))
        }
    }

    @Test("a creation that fails after the key item was stored leaves no key item, and keeps the items it did not create")
    func failedCreationLeavesNoKeyItem() throws {
        try TestService.secretService.require()
        let store = try KeyedStore(keySource: "secret-service")
        defer { store.remove() }
        // The keychain's directory is a regular file: the key item is stored first, then the file cannot be made.
        try Data().write(to: store.root.appendingPathComponent("data"))
        // Another program's item with the same schema and path (another store id): never ours to delete.
        let decoy = try ChildProcess.run(
            try Executables.which("secret-tool"),
            ["store", "--label=secitem keychain key: decoy", "xdg:schema", "org.secitem.KeychainKey", "store", "decoy", "path", store.path],
            environment: store.environment, stdin: Data("not-a-key".utf8), timeout: .seconds(30))
        #expect(decoy.status == 0, "\(decoy.stderr)")
        defer { _ = try? KeyedStore.secretTool(["clear", "xdg:schema", "org.secitem.KeychainKey", "store", "decoy"], environment: store.environment) }
        #expect(try KeyedStore.keyItems(path: store.path, environment: store.environment) == 1)

        let add = try store.add("alice", "s3cret")
        #expect(add.status != 0, "the keychain was created under a regular file")
        #expect(!FileManager.default.fileExists(atPath: store.path))
        #expect(
            try KeyedStore.keyItems(path: store.path, environment: store.environment) == 1,
            "`secitem add` left a key item for a keychain it did not create (or deleted the decoy)")
        do {
            _ = try store.open()
            Issue.record("a keychain opened under a regular file")
        } catch {
            #expect(error.status != errSecSuccess)
        }
        #expect(
            try KeyedStore.keyItems(path: store.path, environment: store.environment) == 1,
            "SQLiteBackend left a key item for a keychain it did not create (or deleted the decoy)")
        #expect(try KeyedStore.keyItems("decoy", environment: store.environment) == 1, "the decoy item was deleted")
    }

    @Test("`secitem diagnose` names the source and what it protects against")
    func diagnose() throws {
        try TestService.secretService.require()
        let store = try KeyedStore(keySource: "secret-service")
        defer { store.remove() }
        #expect(try store.add("alice", "s3cret").status == 0)
        let out = try store.cli(["diagnose"])
        #expect(out.stdout.contains("key: secret-service"), "\(out.stdout)")
        #expect(out.stdout.contains("key source: secret-service: stops disk theft"), "\(out.stdout)")
        #expect(out.stdout.contains("not malware running as you while the keyring is unlocked"), "\(out.stdout)")
        #expect(out.stdout.contains("opened and unlocked"), "\(out.stdout)")
    }
}
