import Testing
import SecItemTestSupport
import SecItemCore
import SecItemKeychain
import SecItemMemory
import SecItemSQLite
import SecItemSecretService
import Foundation
import Synchronization

/// Wraps a real backend and makes its Nth add fail, to break a migration part-way
/// through on a store that has no fault injection of its own.
final class FailingAfterAdds: SecItemBackend {
    let base: any SecItemBackend
    let remaining: Mutex<Int>

    init(_ base: any SecItemBackend, failAfter adds: Int) {
        self.base = base
        self.remaining = Mutex(adds)
    }

    var kind: BackendKind { base.kind }

    func add(_ item: StoredItem) throws(SecItemError) {
        let fail = remaining.withLock { n -> Bool in
            n -= 1
            return n < 0
        }
        if fail { throw SecItemError(errSecIO, "injected failure") }
        try base.add(item)
    }

    func fetch(matching query: ItemQuery, limit: Int?) throws(SecItemError) -> [StoredItem] {
        try base.fetch(matching: query, limit: limit)
    }

    func update(matching query: ItemQuery, _ transform: (StoredItem) -> StoredItem) throws(SecItemError) -> Int {
        try base.update(matching: query, transform)
    }

    func delete(matching query: ItemQuery) throws(SecItemError) -> Int {
        try base.delete(matching: query)
    }
}

@Suite("Keychain migration across real backends")
struct CrossBackendMigrationTests {
    @Test("file backend → Secret Service: a failure part-way leaves both as they were; a retry moves everything")
    func fileToSecretService() throws {
        try TestService.secretService.require()
        let groups = AccessGroups(["migration"])
        let file = SecItemClient(backend: try FileBackendStores.make(), accessGroups: groups)
        let keyring = try SecretServiceBackend(
            configuration: .init(namespace: "migration-\(UUID().uuidString)", timeout: .seconds(20)))
        let source = try Keychain(service: "com.example.legacy", client: file)
        for i in 0..<4 { try source.set("secret-\(i) \u{0}\u{FF}", forKey: "user\(i)") }

        let breaking = SecItemClient(backend: FailingAfterAdds(keyring, failAfter: 2), accessGroups: groups)
        let brokenTarget = try Keychain(service: "com.example.modern", client: breaking)
        #expect(throws: SecItemError.io) { try brokenTarget.migrate(from: source, removeFromSource: true) }

        let target = try Keychain(service: "com.example.modern", client: SecItemClient(backend: keyring, accessGroups: groups))
        #expect(try target.allKeys().isEmpty, "the two items written before the failure were removed from the keyring")
        #expect(try source.allKeys() == ["user0", "user1", "user2", "user3"], "the file is untouched")

        let report = try target.migrate(from: source, removeFromSource: true)
        #expect(report.migratedKeys.count == 4)
        #expect(try target.string(forKey: "user2") == "secret-2 \u{0}\u{FF}", "bytes arrive exactly")
        #expect(try source.allKeys().isEmpty, "removed from the file after verification")
        #expect(try target.removeAll() == 4)
    }
}
