import Testing
import Foundation
import SecItemKeychain
import SecItemCore
import SecItemMemory

@Suite("Keychain (Swift-native layer)")
struct KeychainTests {
    @Test("forTesting gives an isolated store whose faults surface as typed errors")
    func testHelper() throws {
        let (keychain, store) = Keychain.forTesting(service: "api")
        let (other, _) = Keychain.forTesting(service: "api")
        try keychain.set("v", forKey: "k")
        #expect(try other.string(forKey: "k") == nil, "stores are isolated")
        store.injectFault(errSecInteractionNotAllowed)
        #expect(throws: SecItemError.interactionNotAllowed) { try keychain.string(forKey: "k") }
        #expect(try keychain.string(forKey: "k") == "v", "one-shot fault")
        store.injectFault(errSecIO, on: [.add], persistent: true)
        #expect(throws: SecItemError.io) { try keychain.set("w", forKey: "new") }
        #expect(try keychain.contains("new") == false, "a failed write changes nothing")
    }

    @Test("the default initializer uses the task's client")
    func defaultClient() throws {
        let client = SecItemClient(backend: MemoryBackend(), accessGroups: AccessGroups(["g"]))
        try SecItemClient.withClient(client) {
            let keychain = try Keychain(service: "svc")
            try keychain.set("x", forKey: "k")
            #expect(keychain.accessGroup == "g")
            var result: AnyObject?
            let q = [kSecClass: kSecClassGenericPassword, kSecAttrService: "svc", kSecAttrAccount: "k",
                     kSecReturnData: true] as CFDictionary
            #expect(SecItemCopyMatching(q, &result) == errSecSuccess, "the same item through the Apple-style API")
            #expect(result as? Data == Data("x".utf8))
        }
    }

    func legacyFile(_ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("legacy-\(UUID().uuidString)")
        try Data(text.utf8).write(to: url)
        return url
    }

    @Test("legacy JSON (object and array) and INI files migrate into keychains, and the file can be removed",
          arguments: [
            #"{"mail": {"alice": "pw-a", "bob": "pw-b"}, "api": {"token": "t0k"}}"#,
            #"[{"service": "mail", "account": "alice", "secret": "pw-a"}, {"service": "mail", "account": "bob", "password": "pw-b"}, {"service": "api", "account": "token", "secret": "t0k"}]"#,
            "# old config\n[mail]\nalice = pw-a\nbob = pw-b\n\n[api]\n; comment\ntoken = t0k\n",
          ])
    func legacyMigration(contents: String) throws {
        let url = try legacyFile(contents)
        let client = SecItemClient(backend: MemoryBackend(), accessGroups: AccessGroups(["g"]))
        let reports = try Keychain.migrateLegacyFile(at: url, into: client, removeFile: true)
        #expect(reports["mail"]?.migratedKeys.sorted() == ["alice", "bob"])
        #expect(reports["api"]?.migratedKeys == ["token"])
        #expect(try Keychain(service: "mail", client: client).string(forKey: "bob") == "pw-b")
        #expect(try Keychain(service: "api", client: client).string(forKey: "token") == "t0k")
        #expect(!FileManager.default.fileExists(atPath: url.path), "the plaintext file is gone")
    }

    @Test("a malformed legacy file writes nothing and is kept")
    func legacyMalformed() throws {
        let url = try legacyFile("[mail]\nalice = pw\nthis line has no equals sign\n")
        defer { try? FileManager.default.removeItem(at: url) }
        let store = MemoryBackend()
        let client = SecItemClient(backend: store, accessGroups: AccessGroups(["g"]))
        #expect(throws: SecItemError.decode) { try Keychain.migrateLegacyFile(at: url, into: client, removeFile: true) }
        #expect(store.count == 0)
        #expect(FileManager.default.fileExists(atPath: url.path))
    }

    @Test("a legacy migration failing mid-way removes what it wrote and keeps the file")
    func legacyFailure() throws {
        let url = try legacyFile(#"{"a": {"1": "x", "2": "y"}, "b": {"3": "z"}}"#)
        defer { try? FileManager.default.removeItem(at: url) }
        let store = MemoryBackend()
        let client = SecItemClient(backend: store, accessGroups: AccessGroups(["g"]))
        store.injectFault(errSecIO, on: [.add], after: 2)
        #expect(throws: SecItemError.io) { try Keychain.migrateLegacyFile(at: url, into: client, removeFile: true) }
        #expect(store.count == 0, "rolled back")
        #expect(FileManager.default.fileExists(atPath: url.path), "the file is kept")
        let reports = try Keychain.migrateLegacyFile(at: url, into: client)
        #expect(reports.values.map(\.migratedKeys.count).reduce(0, +) == 3, "a retry succeeds")
    }

    @Test("errors describe what failed without the secret")
    func errorDescriptions() throws {
        let (keychain, _) = Keychain.forTesting()
        try keychain.set(Data([0xFF, 0x00, 0xFE]), forKey: "k")
        do {
            _ = try keychain.string(forKey: "k")
            Issue.record("expected errSecDecode")
        } catch let error as SecItemError {
            #expect(error.status == errSecDecode)
            #expect(error.description.contains("not UTF-8"))
        } catch {
            Issue.record("not a SecItemError: \(error)")
        }
    }
}
