import Foundation
import SecItem
import SecItemCore
import SecItemSecretService
import SecItemTestSupport
import Testing

/// Issue 27, finding 4: an app listing `org.secitem.foreign` runs the iOS sign-out
/// wipe (`SecItemDelete([kSecClass: c])` per class). Other tools' items must survive,
/// and stay unchanged unless writes to them were asked for by name.
@Suite("Secret Service: other tools' items are read-only by default", .requires(.secretService))
struct ForeignItemsReadOnlyTests {
    static let foreign = "org.secitem.foreign"

    func secretTool(_ arguments: [String], stdin: String? = nil) throws -> ProcessOutput {
        try SecretServiceWitness.secretTool(arguments, stdin: stdin)
    }

    @Test("the sign-out wipe of an app listing the foreign group deletes its own items, not secret-tool's")
    func classWideDeleteSparesForeignItems() throws {
        let service = "svc.wipe-\(UUID().uuidString)"
        let stored = try secretTool(["store", "--label=kept", "service", service, "account", "bob"], stdin: "tool-secret")
        #expect(stored.status == 0, "\(stored.stderr)")
        defer { _ = try? secretTool(["clear", "service", service, "account", "bob"]) }
        let backend = try SharedService.backend()
        let app = SecItemClient(backend: backend, accessGroups: AccessGroups(["app", Self.foreign]))
        try app.addItem([
            SecConstant.kSecClass: SecConstant.kSecClassGenericPassword, SecConstant.kSecAttrService: "own",
            SecConstant.kSecAttrAccount: "me", SecConstant.kSecValueData: Data("own-secret".utf8),
        ])
        // The foreign item is visible to the app (reading is what the group is for).
        let read: [String: Any] = [
            SecConstant.kSecClass: SecConstant.kSecClassGenericPassword, SecConstant.kSecAttrService: service,
            SecConstant.kSecReturnData: true,
        ]
        #expect(try app.copyMatchingItems(read) as? Data == Data("tool-secret".utf8))
        // The wipe.
        let deleted = try app.deleteItems([SecConstant.kSecClass: SecConstant.kSecClassGenericPassword])
        #expect(deleted == 1, "the wipe deleted \(deleted) items; only the app's own one is its to delete")
        #expect(try secretTool(["lookup", "service", service, "account", "bob"]).stdout == "tool-secret")
        // Deleting or updating the foreign item by service (no group named) leaves it too.
        let byService: [String: Any] = [SecConstant.kSecClass: SecConstant.kSecClassGenericPassword, SecConstant.kSecAttrService: service]
        #expect((try? app.deleteItems(byService)) == nil)
        #expect((try? app.updateItems(byService, [SecConstant.kSecValueData: Data("changed".utf8)])) == nil)
        #expect(try secretTool(["lookup", "service", service, "account", "bob"]).stdout == "tool-secret")
    }

    @Test("naming the foreign group without the opt-in: update and delete are refused (errSecReadOnly), nothing changes")
    func namedGroupWithoutOptIn() throws {
        let service = "svc.ro-\(UUID().uuidString)"
        let stored = try secretTool(["store", "--label=ro", "service", service, "account", "bob"], stdin: "tool-secret")
        #expect(stored.status == 0, "\(stored.stderr)")
        defer { _ = try? secretTool(["clear", "service", service, "account", "bob"]) }
        let app = SecItemClient(backend: try SharedService.backend(), accessGroups: AccessGroups(["app", Self.foreign]))
        let query: [String: Any] = [
            SecConstant.kSecClass: SecConstant.kSecClassGenericPassword, SecConstant.kSecAttrService: service,
            SecConstant.kSecAttrAccessGroup: Self.foreign,
        ]
        var updateStatus: OSStatus = errSecSuccess
        do { try app.updateItems(query, [SecConstant.kSecValueData: Data("changed".utf8)]) } catch { updateStatus = error.status }
        #expect(updateStatus == errSecReadOnly)
        var deleteStatus: OSStatus = errSecSuccess
        do { try app.deleteItems(query) } catch { deleteStatus = error.status }
        #expect(deleteStatus == errSecReadOnly)
        #expect(try secretTool(["lookup", "service", service, "account", "bob"]).stdout == "tool-secret")
    }
}
