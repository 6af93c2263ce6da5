import SecItemCore
import SecItem
public import SecItemMemory

extension Keychain {
    /// A keychain of generic passwords for `service` on the process's default store
    /// (or the task's, inside `SecItemClient.withClient`).
    /// - Throws: `SecItemError` when the default store cannot be opened, or the group is not entitled.
    public init(
        service: String, accessGroup: String? = nil, accessibility: Accessibility = .afterFirstUnlock,
        synchronizable: Bool = false
    ) throws {
        try self.init(
            service: service, client: try SecItemSystem.currentClient(), accessGroup: accessGroup,
            accessibility: accessibility, synchronizable: synchronizable)
    }

    /// A keychain of internet passwords on the process's default store.
    public init(
        internet: InternetScope, accessGroup: String? = nil, accessibility: Accessibility = .afterFirstUnlock,
        synchronizable: Bool = false
    ) throws {
        try self.init(
            internet: internet, client: try SecItemSystem.currentClient(), accessGroup: accessGroup,
            accessibility: accessibility, synchronizable: synchronizable)
    }

    /// A keychain on a fresh, isolated memory store, for tests: no desktop, no file,
    /// nothing shared with other tests. Use `store` to inject faults:
    ///
    /// ```swift
    /// let (keychain, store) = Keychain.forTesting(service: "api")
    /// store.injectFault(errSecInteractionNotAllowed)
    /// #expect(throws: SecItemError.interactionNotAllowed) { try keychain.set("x", forKey: "k") }
    /// ```
    public static func forTesting(service: String = "test", accessGroups: [String] = ["test"]) -> (
        keychain: Keychain, store: MemoryBackend
    ) {
        let store = MemoryBackend()
        let client = SecItemClient(backend: store, accessGroups: AccessGroups(accessGroups))
        // The group is the client's own first group, so this cannot fail.
        let keychain = try! Keychain(service: service, client: client)
        return (keychain, store)
    }
}
