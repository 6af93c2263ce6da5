import Foundation
import SecItem
import SecItemCore
import SecItemMemory
import SecItemPolkit
import Testing

/// Issue 27, findings 3 and 9: removing or weakening an item's protection passes the
/// same gate as reading it; an unknown session never counts as unlocked.
@Suite("Access control: weakening, and unknown sessions")
struct AccessControlWeakeningTests {
    static var base: [String: Any] { [
        kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc", kSecAttrAccount as String: "w",
    ] }

    /// The stored `accc` and `pdmn` of the one item, read as attributes (never asks).
    func protection(_ client: SecItemClient) throws -> (accc: String, pdmn: String?) {
        var query = Self.base
        query[kSecReturnAttributes as String] = true
        let found = try #require(try client.copyMatchingItems(query) as? [String: Any])
        return ("\(found[kSecAttrAccessControl as String] ?? "none")", found[kSecAttrAccessible as String] as? String)
    }

    @Test("removing .userPresence (an access control without flags) asks polkit; refused → errSecAuthFailed, item unchanged",
          arguments: Store.allCases)
    func removingPresence(store: Store) throws {
        try Bus.require()
        let backend = try store.makeBackend()
        try client(backend).addItem(password("w", flags: .userPresence))
        let before = try protection(client(backend))
        let deny = Bus.action("deny")
        let refused = client(backend, action: deny)
        let none = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, [], nil)!
        let got = status { () throws(SecItemError) in
            try refused.updateItems(Self.base, [kSecAttrAccessControl as String: none])
        }
        #expect(got == errSecAuthFailed, "\(store): removing the access control without authentication gave \(got)")
        #expect(try Bus.checks(of: deny).count == 1, "polkit asked once")
        #expect(try protection(client(backend)).accc == before.accc)
        // Still protected: polkit refusing, the secret is not released.
        let read = status { () throws(SecItemError) in try refused.copyMatchingItems(dataQuery("w")) }
        #expect(read == errSecAuthFailed)
        // Authorized, the change goes through; then the item no longer asks.
        try client(backend, action: Bus.action("allow")).updateItems(Self.base, [kSecAttrAccessControl as String: none])
        #expect(try refused.copyMatchingItems(dataQuery("w")) as? Data == Data("secret".utf8))
    }

    @Test("making a WhenUnlocked item AfterFirstUnlock while the session is locked is refused; strengthening never asks",
          arguments: Store.allCases)
    func weakerAccessibility(store: Store) throws {
        try Bus.require()
        let backend = try store.makeBackend()
        try client(backend).addItem(password("w", accessible: kSecAttrAccessibleWhenUnlocked))
        let locked = client(backend, session: "locked")
        let got = status { () throws(SecItemError) in
            try locked.updateItems(Self.base, [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock])
        }
        #expect(got == errSecInteractionNotAllowed, "\(store): weakening while locked gave \(got)")
        #expect(try protection(client(backend)).pdmn == kSecAttrAccessibleWhenUnlocked as String)
        #expect(status { () throws(SecItemError) in try locked.copyMatchingItems(dataQuery("w")) } == errSecInteractionNotAllowed)
        // Adding protection needs no authentication (nothing is released by it).
        let deny = Bus.action("deny")
        let presence = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, .userPresence, nil)!
        try client(backend, action: deny).updateItems(Self.base, [kSecAttrAccessControl as String: presence])
        #expect(try Bus.checks(of: deny).isEmpty)
    }

    @Test("an unknown session id never counts as unlocked")
    func unknownSession() throws {
        try Bus.require()
        let bogus = PolkitAccessAuthority(sessionID: "bogus\(UUID().uuidString.prefix(8))")
        #expect(bogus.sessionLockState() == .locked)
        #expect(!bogus.report().session.contains(": unlocked"), "\(bogus.report().session)")
        let keychain = SecItemClient(backend: MemoryBackend(), accessGroups: AccessGroups(["test"]), accessAuthority: bogus)
        try keychain.addItem(password("u", accessible: kSecAttrAccessibleWhenUnlocked))
        #expect(status { () throws(SecItemError) in try keychain.copyMatchingItems(dataQuery("u")) } == errSecInteractionNotAllowed)
        // The sessions logind knows still work as before.
        #expect(PolkitAccessAuthority(sessionID: "unlocked").sessionLockState() == .unlocked)
        #expect(PolkitAccessAuthority(sessionID: "locked").sessionLockState() == .locked)
    }
}
