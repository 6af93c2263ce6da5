import Foundation
import SecItem
import SecItemCore
@testable import SecItemSecretService
import SecItemTestSupport
import Testing

/// KWallet (kwalletd5 5.103) loses about 1 encryption session in 100–250: every secret sent
/// or read on it fails with "Can't find session" (docs/secret-service-mapping.md,
/// "Providers"). The tests force the same condition on every provider by closing the
/// backend's session on the provider (`Session.Close`), then check that each operation
/// opens a new session, runs again once, and leaves nothing behind.
@Suite("Secret Service: a session the provider lost")
struct LostSessionTests {
    let backend: SecretServiceBackend
    let client: SecItemClient

    init() throws {
        backend = try SharedService.backend()
        client = SharedService.client(backend)
    }

    private func genp(_ account: String, _ extra: [String: Any] = [:]) -> [String: Any] {
        Query.genericPassword("lost-session", account, extra)
    }

    /// Closes the session on the provider and returns its number.
    private func loseSession() throws -> Int {
        let serial = try #require(backend.sessionSerial)
        try backend.closeSessionOnProvider()
        return serial
    }

    @Test("a read on a closed session opens a new one and answers")
    func read() throws {
        try client.addItem(genp("a", [kSecValueData as String: Data("pw-a".utf8)]))
        // The data-only path (the holder the add remembered) and the general path.
        for extra: [String: Any] in [[:], [kSecReturnAttributes as String: true]] {
            let lostBefore = backend.sessionsLost
            let lost = try loseSession()
            var query = genp("a", [kSecReturnData as String: true])
            query.merge(extra) { $1 }
            let result = try client.copyMatchingItems(query)
            let data = (result as? Data) ?? ((result as? [String: Any])?[kSecValueData as String] as? Data)
            #expect(data == Data("pw-a".utf8))
            #expect(try #require(backend.sessionSerial) != lost, "a new session answered")
            #expect(backend.sessionsLost > lostBefore, "the loss was counted")
        }
    }

    @Test("an add on a closed session is made once, on a new session, and leaves no item behind")
    func add() throws {
        // CreateItem sends the secret in the backend's session, as reads and SetSecret do;
        // an add first, so the loss is of a session that has already carried one.
        try client.addItem(genp("b-first", [kSecValueData as String: Data("pw".utf8)]))
        let lost = try loseSession()
        try client.addItem(genp("b", [kSecValueData as String: Data("pw-b".utf8)]))
        #expect(try #require(backend.sessionSerial) != lost)
        let namespace = try #require(backend.configuration.namespace)
        let stored = try backend.searchPaths([
            ItemCodec.Reserved.namespace: namespace, "service": "lost-session", "account": "b",
        ])
        #expect(stored.count == 1, "exactly one item, none without its secret: \(stored)")
        let data = try client.copyMatchingItems(genp("b", [kSecReturnData as String: true])) as? Data
        #expect(data == Data("pw-b".utf8))
    }

    @Test("an update and a delete on a closed session succeed on a new one")
    func updateAndDelete() throws {
        try client.addItem(genp("c", [kSecValueData as String: Data("old".utf8)]))
        _ = try loseSession()
        try client.updateItems(genp("c"), [kSecValueData as String: Data("new".utf8)])
        #expect(try client.copyMatchingItems(genp("c", [kSecReturnData as String: true])) as? Data == Data("new".utf8))
        _ = try loseSession()
        try client.deleteItems(genp("c"))
        #expect(throws: SecItemError.itemNotFound) { try client.copyMatchingItems(genp("c")) }
    }
}
