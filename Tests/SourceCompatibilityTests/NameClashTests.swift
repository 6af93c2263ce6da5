// Issue 15, point 6: `import SecItem` exports Security's names and `SecItem…` names only,
// so this file, which imports a library with its own `Keychain`, `ItemClass`,
// `AccessGroups` and `KeychainItem`, uses them unqualified without "ambiguous use" errors.
// That it compiles is the test; the assertions check each name is the library's.
import ClashingNamesLibrary
import Foundation
import SecItem
import Testing

@Suite("import SecItem next to a library with generic names")
struct NameClashTests {
    @Test("Keychain, ItemClass, AccessGroups, KeychainItem and friends resolve to the other library")
    func unqualifiedNamesAreTheLibrarys() throws {
        let keychain = Keychain(service: "wrapper")
        let itemClass = ItemClass.genericPassword
        let groups = AccessGroups(["team.app"])
        let item = KeychainItem(key: "alice")
        _ = (StoredItem(), ItemQuery(), AttributeValue(), MigrationReport())
        #expect(keychain.service == "wrapper")
        #expect(itemClass.rawValue == "genericPassword")
        #expect(groups.names == ["team.app"])
        #expect(item.key == "alice")
        #expect(Schema.version == 1)
    }

    @Test("the same file still reaches the keychain through Security's names")
    func securityNamesStillWork() throws {
        // SecItemClient and its array-literal access groups come with `import SecItem`.
        let client = SecItemClient(backend: isolatedStore(), accessGroups: ["team.app"])
        try SecItemClient.withClient(client) {
            let item = [kSecClass: kSecClassGenericPassword, kSecAttrService: "wrapper", kSecAttrAccount: "alice",
                        kSecValueData: Data("pw".utf8)] as CFDictionary
            #expect(SecItemAdd(item, nil) == errSecSuccess)
            var result: CFTypeRef?
            let query = [kSecClass: kSecClassGenericPassword, kSecAttrService: "wrapper", kSecReturnData: true]
                as CFDictionary
            #expect(SecItemCopyMatching(query, &result) == errSecSuccess)
            #expect(result as? Data == Data("pw".utf8))
            do {
                try client.addItem([kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "wrapper",
                                    kSecAttrAccount as String: "alice"])
                Issue.record("a duplicate add must throw")
            } catch SecItemError.duplicateItem {}  // SecItemError's pattern match comes with `import SecItem` too
        }
    }
}
