import Foundation
import SecItem
import SecItemCore
import SecItemSecretService
import SecItemTestSupport
import Testing

/// Items other Secret Service clients stored (secret-tool, Python keyring, git's
/// libsecret helper), read, updated and deleted in place through the API, with
/// the other tool seeing each change.
@Suite("Secret Service: items other tools stored")
struct ForeignItemsTests {
    static let foreign = "org.secitem.foreign"

    func secretTool(_ arguments: [String], stdin: String? = nil) throws -> ProcessOutput {
        try SharedService.require()
        return try SecretServiceWitness.secretTool(arguments, stdin: stdin)
    }

    func python(_ code: String) throws -> ProcessOutput {
        try SharedService.require()
        let result = try SecretServiceWitness.run("/usr/bin/python3", ["-c", "import keyring, sys\n" + code])
        if result.status != 0, result.stderr.contains("No module named") {
            throw TestSetupError("/usr/bin/python3 has no keyring module (apt-get install python3-keyring): \(result.stderr)")
        }
        return result
    }

    /// A client on a backend opened with the opt-in to write other tools' items
    /// (`foreignItemsWritable`); writes to them name their group.
    func client(_ groups: [String]) throws -> SecItemClient {
        try SharedService.availability.get()
        let backend = try SecretServiceBackend(
            configuration: .init(namespace: "test-\(UUID().uuidString)", timeout: .seconds(10), foreignItemsWritable: true))
        return SecItemClient(backend: backend, accessGroups: AccessGroups(groups))
    }

    @Test("secret-tool's item: invisible by default; with the foreign group read, updated in place, deleted")
    func secretToolItem() throws {
        let service = "svc.foreign-\(UUID().uuidString)"
        let stored = try secretTool(["store", "--label=x", "service", service, "account", "bob"], stdin: "tok-1")
        #expect(stored.status == 0, "\(stored.stderr)")
        defer { _ = try? secretTool(["clear", "service", service, "account", "bob"]) }
        let query: [String: Any] = [SecConstant.kSecClass: SecConstant.kSecClassGenericPassword, SecConstant.kSecAttrService: service, SecConstant.kSecAttrAccount: "bob",
                                    SecConstant.kSecReturnData: true]
        // Not entitled to the foreign group: invisible, as before.
        #expect(throws: SecItemError.itemNotFound) { try self.client(["test"]).copyMatchingItems(query) }

        let c = try client(["test", Self.foreign])
        #expect(try c.copyMatchingItems(query) as? Data == Data("tok-1".utf8))
        var attributes = query
        attributes[SecConstant.kSecReturnData] = nil
        attributes[SecConstant.kSecReturnAttributes] = true
        let found = try #require(try c.copyMatchingItems(attributes) as? [String: Any])
        #expect(found[SecConstant.kSecAttrLabel] as? String == "x")
        #expect(found[SecConstant.kSecAttrAccessGroup] as? String == Self.foreign)

        // The secret is updated in place: secret-tool still finds the item by its own attributes.
        try c.updateItems([SecConstant.kSecClass: SecConstant.kSecClassGenericPassword, SecConstant.kSecAttrService: service, SecConstant.kSecAttrAccount: "bob",
                           SecConstant.kSecAttrAccessGroup: Self.foreign],
                          [SecConstant.kSecValueData: Data("tok-2".utf8)])
        let lookup = try secretTool(["lookup", "service", service, "account", "bob"])
        #expect(lookup.stdout == "tok-2")
        // Attributes of a foreign item are not rewritten: changing one is refused, nothing changes.
        #expect(throws: SecItemError.self) {
            try c.updateItems([SecConstant.kSecClass: SecConstant.kSecClassGenericPassword, SecConstant.kSecAttrService: service, SecConstant.kSecAttrAccessGroup: Self.foreign],
                              [SecConstant.kSecAttrAccount: "eve"])
        }
        #expect(try secretTool(["lookup", "service", service, "account", "bob"]).stdout == "tok-2")
        // Creating items in the foreign group is refused.
        #expect(throws: SecItemError.self) {
            try c.addItem([SecConstant.kSecClass: SecConstant.kSecClassGenericPassword, SecConstant.kSecAttrService: service + ".new", SecConstant.kSecAttrAccount: "x",
                           SecConstant.kSecAttrAccessGroup: Self.foreign, SecConstant.kSecValueData: Data("y".utf8)])
        }

        let deleted = try c.deleteItems([SecConstant.kSecClass: SecConstant.kSecClassGenericPassword, SecConstant.kSecAttrService: service, SecConstant.kSecAttrAccount: "bob",
                                         SecConstant.kSecAttrAccessGroup: Self.foreign])
        #expect(deleted == 1)
        #expect(try secretTool(["lookup", "service", service, "account", "bob"]).status != 0)
    }

    @Test("Python keyring's item: read, updated (keyring sees the new password), deleted (keyring sees none)")
    func pythonKeyringItem() throws {
        let service = "svc.py-\(UUID().uuidString)"
        let set = try python("keyring.set_password('\(service)', 'carol', 'py-1')")
        #expect(set.status == 0, "\(set.stderr)")
        defer { _ = try? python("keyring.delete_password('\(service)', 'carol')") }
        let c = try client(["test", Self.foreign])
        let query: [String: Any] = [SecConstant.kSecClass: SecConstant.kSecClassGenericPassword, SecConstant.kSecAttrService: service, SecConstant.kSecAttrAccount: "carol",
                                    SecConstant.kSecReturnData: true]
        #expect(try c.copyMatchingItems(query) as? Data == Data("py-1".utf8))
        try c.updateItems([SecConstant.kSecClass: SecConstant.kSecClassGenericPassword, SecConstant.kSecAttrService: service, SecConstant.kSecAttrAccount: "carol",
                           SecConstant.kSecAttrAccessGroup: Self.foreign],
                          [SecConstant.kSecValueData: Data("py-2".utf8)])
        let read = try python("print(keyring.get_password('\(service)', 'carol'))")
        #expect(read.stdout == "py-2\n", "\(read.stderr)")
        #expect(try c.deleteItems([SecConstant.kSecClass: SecConstant.kSecClassGenericPassword, SecConstant.kSecAttrService: service,
                                   SecConstant.kSecAttrAccessGroup: Self.foreign]) == 1)
        let gone = try python("print(keyring.get_password('\(service)', 'carol'))")
        #expect(gone.stdout == "None\n", "\(gone.stderr)")
    }
}
