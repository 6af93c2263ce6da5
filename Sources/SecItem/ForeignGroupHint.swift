import Foundation
import SecItemCore
import Synchronization

/// Debug builds: when `SecItemCopyMatching` finds nothing but the same query matches an
/// item in an access group this program is not entitled to, say so once on stderr, with
/// the group's name (never an attribute value or data). The usual cause is a second
/// program reading what another one stored: each program has its own group unless both
/// list a shared one (`SECITEM_ACCESS_GROUPS`). Release builds never look.
enum ForeignGroupHint {
    private static let said = Mutex(false)

    static func check(_ query: CFDictionary, _ client: SecItemClient) {
        #if DEBUG
        guard !client.accessGroups.coversEveryGroup, !said.withLock({ $0 }),
            var dictionary = try? query._secItemDictionary()
        else { return }
        // Attributes only: the look never reads data, so it never asks for user presence.
        for key in [kSecReturnData, kSecReturnRef, kSecReturnPersistentRef, kSecUseAuthenticationContext] {
            dictionary[key as String] = nil
        }
        dictionary[kSecAttrAccessGroup as String] = nil
        dictionary[kSecReturnAttributes as String] = true
        dictionary[kSecMatchLimit as String] = kSecMatchLimitAll
        let everywhere = SecItemClient(
            backend: client.backend, accessGroups: .everyGroup(listing: client.accessGroups.groups))
        guard let found = try? everywhere.copyMatchingItems(dictionary) as? [[String: Any]] else { return }
        let groups = Set(found.compactMap { $0[kSecAttrAccessGroup as String] as? String })
            .filter { !client.accessGroups.permits($0) }.sorted()
        guard !groups.isEmpty, said.withLock({ done in defer { done = true }; return !done }) else { return }
        let message = """
            SecItem: note: errSecItemNotFound, but a matching item is in the access group \
            \(groups.map { "'\($0)'" }.joined(separator: ", ")), which this program (entitled to \
            \(client.accessGroups.groups.map { "'\($0)'" }.joined(separator: ", "))) cannot see: each program \
            has its own group. To share items, list the same group in SECITEM_ACCESS_GROUPS (or access-groups \
            in the config file) of both programs. Debug builds say this once; release builds never look.

            """
        FileHandle.standardError.write(Data(message.utf8))
        #endif
    }
}

/// A test process (an `.xctest` bundle, as `swift test` runs) whose global `SecItem…`
/// calls reach the user's real keychain because nothing chose a store: said once on
/// stderr, with the way to isolate. A store chosen on purpose (`SECITEM_BACKEND`, code)
/// or the memory backend says nothing.
enum TestProcessWarning {
    private static let said = Mutex(false)

    static var isTestProcess: Bool {
        let program = CommandLine.arguments.first ?? ""
        return program.hasSuffix(".xctest") || ProcessInfo.processInfo.environment["XCTestConfigurationFilePath"] != nil
    }

    static func check(_ choice: SecItemBackendChoice, _ configuration: SecItemConfiguration) {
        guard choice.backend.kind != .memory, isTestProcess else { return }
        switch configuration.backendOrigin {
        case .code, .environment: return
        case .configFile, .defaults: break
        }
        guard said.withLock({ done in defer { done = true }; return !done }) else { return }
        let message = """
            SecItem: warning: this test process uses the user's real \(choice.backend.kind) keychain \
            (\(choice.reason)): a test that adds or deletes items changes them. Give each test its own store: \
            SecItemClient.withClient(SecItemClient(backend: MemoryBackend(), accessGroups: ["tests"])) { … } \
            (import SecItemMemory), or Keychain.forTesting(); or set SECITEM_BACKEND=memory.

            """
        FileHandle.standardError.write(Data(message.utf8))
    }
}
