import Foundation
import SecItem
import SecItemCore
import SecItemSQLite
import SecItemSealedStore
import SecItemSecretService
import SecItemTestSupport
import Testing

/// `SECITEM_KEY_SOURCE=portal` and the automatic choice inside a Flatpak sandbox, against
/// Debian's xdg-desktop-portal with gnome-keyring's Secret portal (headless: it runs on a
/// private session bus with `XDG_CURRENT_DESKTOP=GNOME`). The sandbox is a `.flatpak-info`
/// the test writes and points `SECITEM_FLATPAK_INFO` at; the portal itself sees a host
/// process (its app id is empty), which changes which secret it hands out, not how.
@Suite("Key source: the Flatpak Secret portal")
struct PortalKeySourceTests {
    @Test("inside a sandbox the automatic choice is the portal: created, reopened by `secitem`, diagnosed")
    func automaticInSandbox() throws {
        try TestService.secretPortal.require()
        let store = try KeyedStore(keySource: nil, sandboxed: true)
        defer { store.remove() }
        let backend = try store.open()
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups([KeyedStore.group]))
        _ = try client.addItem([
            kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "alice",
            kSecAttrService as String: "keysource", kSecValueData as String: Data("sandboxed".utf8),
        ])
        backend.close()
        #expect(try store.meta("kek") == "portal")
        #expect(try store.meta("kek_portal_salt").count == 64, "a 32-byte salt in the header")
        #expect(!FileManager.default.fileExists(atPath: store.generatedKeyFile), "a key file was written beside the data")
        let found = try store.find("alice")
        #expect(found.status == 0, "\(found.stderr)")
        #expect(found.stdout == "sandboxed\n")
        let diagnose = try store.cli(["diagnose"])
        #expect(diagnose.stdout.contains("key: portal (chosen automatically inside the Flatpak sandbox of org.secitem.tests.Sandboxed"), "\(diagnose.stdout)")
        #expect(diagnose.stdout.contains("the portal answers"), "\(diagnose.stdout)")
        #expect(diagnose.stdout.contains("key source: portal: stops a leaked backup of the app's data"), "\(diagnose.stdout)")
        #expect(diagnose.stdout.contains("opened and unlocked"), "\(diagnose.stdout)")
        // Out of the sandbox the same file is not opened with a generated key file.
        var outside = store
        outside.environment["SECITEM_FLATPAK_INFO"] = store.root.appendingPathComponent("none").path
        let refused = try outside.find("alice")
        #expect(mentions(refused, status: errSecNotAvailable), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store.generatedKeyFile))
    }

    @Test("no backend named, inside a sandbox whose portal answers: the file keyed by the portal, not the Secret Service")
    func automaticBackendInSandbox() throws {
        try TestService.secretPortal.require()
        var store = try KeyedStore(keySource: nil, sandboxed: true)
        defer { store.remove() }
        store.environment["SECITEM_BACKEND"] = nil
        let add = try store.add("alice", "s3cret")
        #expect(add.status == 0, "\(add.stderr)")
        #expect(try store.meta("kek") == "portal")
        #expect(try store.find("alice").stdout == "s3cret\n")
        let diagnose = try store.cli(["diagnose"])
        #expect(diagnose.stdout.contains("the Secret portal answers (version"), "\(diagnose.stdout)")
        #expect(diagnose.stdout.contains("as libsecret does for sandboxed apps"), "\(diagnose.stdout)")
    }

    @Test("named: a store created with SECITEM_KEY_SOURCE=portal; outside a sandbox the setting is refused")
    func named() throws {
        try TestService.secretPortal.require()
        let store = try KeyedStore(keySource: "portal", sandboxed: true)
        defer { store.remove() }
        #expect(try store.add("alice", "s3cret").status == 0)
        #expect(try store.find("alice").stdout == "s3cret\n")
        #expect(try store.meta("kek") == "portal")
        let plain = try KeyedStore(keySource: "portal")
        defer { plain.remove() }
        let add = try plain.add("alice", "s3cret")
        #expect(mentions(add, status: errSecParam), "\(add.stderr)")
        #expect(add.stderr.contains("not inside a Flatpak sandbox"), "\(add.stderr)")
        #expect(!FileManager.default.fileExists(atPath: plain.path))
    }

    @Test("a store made earlier with the generated key file still opens inside the sandbox")
    func earlierGeneratedKey() throws {
        try TestService.secretPortal.require()
        var store = try KeyedStore(keySource: nil)
        defer { store.remove() }
        #expect(try store.add("alice", "before").status == 0)
        #expect(FileManager.default.fileExists(atPath: store.generatedKeyFile))
        store = try KeyedStore(keySource: nil, sandboxed: true, reusing: store)
        let found = try store.find("alice")
        #expect(found.stdout == "before\n", "\(found.stderr)")
        #expect(try store.meta("kek") == "key")
    }

    @Test("no portal on the bus: errSecNotAvailable naming the portal; no store, no key file")
    func portalMissing() throws {
        try TestService.secretService.require()
        let bus = try PortalSession(withPortal: false)
        for source in [nil, "portal"] {
            let store = try KeyedStore(keySource: source, base: bus.environment, sandboxed: true)
            defer { store.remove() }
            let add = try store.add("alice", "s3cret")
            #expect(mentions(add, status: errSecNotAvailable), "\(add.stderr)")
            #expect(add.stderr.contains("key source portal") && add.stderr.contains("org.secitem.tests.Sandboxed"), "\(add.stderr)")
            #expect(!FileManager.default.fileExists(atPath: store.path))
            #expect(!FileManager.default.fileExists(atPath: store.generatedKeyFile), "a key file was written beside the data")
            // The automatic choice says how to accept a key file instead; a named source does not.
            #expect(add.stderr.contains("SECITEM_KEY_SOURCE=automatic") == (source == nil), "\(add.stderr)")
            let diagnose = try store.cli(["diagnose"])
            #expect(diagnose.stdout.contains("the portal does not answer"), "\(diagnose.stdout)")
        }
    }

    @Test("the portal refuses (its keyring locked, no prompter): errSecAuthFailed, the file unchanged")
    func portalRefuses() throws {
        try TestService.secretService.require()
        let desktop = try PortalSession(withPortal: true)
        let store = try KeyedStore(keySource: nil, base: desktop.environment, sandboxed: true)
        defer { store.remove() }
        #expect(try store.add("alice", "s3cret").status == 0)
        #expect(try store.meta("kek") == "portal")
        try desktop.session.lockLogin()
        let before = store.fileBytes()
        let find = try store.find("alice")
        #expect(mentions(find, status: errSecAuthFailed), "\(find.stderr)")
        #expect(find.stderr.contains("key source portal") && find.stderr.contains("refused"), "\(find.stderr)")
        #expect(store.fileBytes() == before)
        #expect(!FileManager.default.fileExists(atPath: store.generatedKeyFile))
    }
}
