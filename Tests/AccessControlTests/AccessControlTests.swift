import Testing
import SecItem
import SecItemCore
import SecItemPolkit
import SecItemMemory
import SecItemTestSupport
import SecItemTools
import Foundation

/// User presence through polkit and accessibility bound to logind's session
/// lock, on every store, against the mock polkit and logind of
/// scripts/with-system-bus (real D-Bus, real processes).
@Suite("Access control")
struct AccessControlTests {
    // MARK: User presence

    @Test("polkit's answers map to Apple's statuses", arguments: Store.allCases)
    func presenceOutcomes(store: Store) throws {
        try Bus.require()
        let backend = try store.makeBackend()
        try client(backend).addItem(password("a", flags: .userPresence))
        let cases: [(outcome: String, status: OSStatus)] = [
            ("allow", errSecSuccess), ("deny", errSecAuthFailed), ("dismiss", errSecUserCanceled),
            ("noagent", errSecInteractionNotAllowed),
        ]
        for (outcome, expected) in cases {
            let action = Bus.action(outcome)
            let keychain = client(backend, action: action)
            var result: Any?
            let got = status { () throws(SecItemError) in
                result = try keychain.copyMatchingItems(dataQuery("a"))
                return result
            }
            #expect(got == expected, "\(outcome) on \(store)")
            #expect((result as? Data) == (expected == errSecSuccess ? Data("secret".utf8) : nil), "\(outcome)")
            #expect(try Bus.checks(of: action).count == 1, "polkit asked once for \(outcome)")
        }
    }

    @Test("every flag that asks the user on Apple asks polkit; privateKeyUsage does not", arguments: Store.allCases)
    func flagsThatAsk(store: Store) throws {
        try Bus.require()
        let backend = try store.makeBackend()
        let flags: [(AccessControlFlags, Bool)] = [
            (.userPresence, true), (.biometryAny, true), (.biometryCurrentSet, true), (.devicePasscode, true),
            ([.biometryAny, .or, .devicePasscode], true), (.applicationPassword, true), (.privateKeyUsage, false),
            ([], false),
        ]
        for (index, (flag, asks)) in flags.enumerated() {
            try client(backend).addItem(password("f\(index)", flags: flag))
            let denied = client(backend, action: Bus.action("deny"))
            let got = status { () throws(SecItemError) in try denied.copyMatchingItems(dataQuery("f\(index)")) }
            #expect(got == (asks ? errSecAuthFailed : errSecSuccess), "flags \(flag.rawValue) on \(store)")
        }
    }

    @Test("the operation prompt reaches polkit, and is dropped when polkit refuses details", arguments: Store.allCases)
    func operationPrompt(store: Store) throws {
        try Bus.require()
        let backend = try store.makeBackend()
        try client(backend).addItem(password("p", flags: .userPresence))
        let prompt = "Unlock the payment token \(UUID().uuidString)"
        let action = Bus.action("allow")
        _ = try client(backend, action: action).copyMatchingItems(
            dataQuery("p", extra: [kSecUseOperationPrompt as String: prompt]))
        let calls = try Bus.checks(of: action)
        #expect(calls.count == 1)
        #expect(calls.first?.contains("'polkit.message': '\(prompt)'") == true, "\(calls)")

        // polkit takes details only from uid 0 or the action's owner: the read still works, without the prompt.
        let untrusted = Bus.action("untrusted")
        let data = try client(backend, action: untrusted).copyMatchingItems(
            dataQuery("p", extra: [kSecUseOperationPrompt as String: prompt]))
        #expect(data as? Data == Data("secret".utf8))
        let retried = try Bus.checks(of: untrusted)
        #expect(retried.last?.contains("{}") == true, "answered without the prompt: \(retried)")

        let bad = status { () throws(SecItemError) in
            try client(backend).copyMatchingItems(dataQuery("p", extra: [kSecUseOperationPrompt as String: 7]))
        }
        #expect(bad == errSecParam)
    }

    @Test("no polkit, no system bus: errSecInteractionNotAllowed with the reason", arguments: Store.allCases)
    func nobodyToAsk(store: Store) throws {
        try Bus.require()
        let backend = try store.makeBackend()
        try client(backend).addItem(password("n", flags: .userPresence))
        try client(backend).addItem(password("plain"))
        for address in [try Bus.emptyBusAddress, "unix:path=/nonexistent/secitem-test-bus"] {
            let keychain = client(backend, busAddress: address)
            do {
                _ = try keychain.copyMatchingItems(dataQuery("n"))
                Issue.record("a protected item was read with no polkit at \(address)")
            } catch {
                #expect(error.status == errSecInteractionNotAllowed)
                let detail = error.detail ?? ""
                #expect(detail.contains("polkit is not running") || detail.contains("cannot connect"), "\(detail)")
                #expect(!detail.contains("secret"))
            }
            // Without logind the session counts as unlocked: a WhenUnlocked item stays readable.
            #expect(try keychain.copyMatchingItems(dataQuery("plain")) as? Data == Data("secret".utf8))
        }
    }

    @Test("an action polkit does not know: errSecInteractionNotAllowed saying to install the file")
    func unregisteredAction() throws {
        try Bus.require()
        let backend = MemoryBackend()
        try client(backend).addItem(password("u", flags: .userPresence))
        do {
            _ = try client(backend, action: Bus.action("unregistered")).copyMatchingItems(dataQuery("u"))
            Issue.record("read without a registered action")
        } catch {
            #expect(error.status == errSecInteractionNotAllowed)
            #expect(error.detail?.contains("install org.secitem.policy") == true, "\(error)")
        }
    }

    @Test("export takes protected items only after one authorization for all", arguments: Store.allCases)
    func exportGoesThroughTheCheck(store: Store) throws {
        try Bus.require()
        let backend = try store.makeBackend()
        try client(backend).addItem(password("e1", flags: .userPresence))
        try client(backend).addItem(password("e2", flags: .biometryAny))
        try client(backend).addItem(password("plain"))
        let selection = KeychainTransfer.Selection(accessGroups: ["test"])
        for outcome in ["deny", "dismiss", "noagent"] {
            #expect(throws: SecItemError.self, "\(outcome)") {
                try KeychainTransfer.items(
                    in: backend, selection, authority: PolkitAccessAuthority(action: Bus.action(outcome)))
            }
        }
        #expect(throws: SecItemError.interactionNotAllowed) {
            try KeychainTransfer.items(in: backend, selection)  // nobody to ask
        }
        let action = Bus.action("allow")
        let exported = try KeychainTransfer.items(
            in: backend, selection, authority: PolkitAccessAuthority(action: action))
        #expect(exported.items.count == 3)
        #expect(try Bus.checks(of: action).count == 1)
        #expect(throws: SecItemError.interactionNotAllowed) {
            try KeychainTransfer.items(
                in: backend, selection, authority: PolkitAccessAuthority(action: action, sessionID: "locked"))
        }
    }

    // MARK: kSecUseAuthenticationUI and attribute-only queries

    @Test("Fail refuses without asking; Skip leaves protected items out", arguments: Store.allCases)
    func authenticationUI(store: Store) throws {
        try Bus.require()
        let backend = try store.makeBackend()
        try client(backend).addItem(password("1-protected", data: "p", flags: .userPresence))
        try client(backend).addItem(password("2-plain", data: "q"))
        let action = Bus.action("allow")
        let keychain = client(backend, action: action)

        let fail = status { () throws(SecItemError) in
            try keychain.copyMatchingItems(
                dataQuery("1-protected", extra: [kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail]))
        }
        #expect(fail == errSecInteractionNotAllowed)

        let skipOne = status { () throws(SecItemError) in
            try keychain.copyMatchingItems(
                dataQuery("1-protected", extra: [kSecUseAuthenticationUI as String: kSecUseAuthenticationUISkip]))
        }
        #expect(skipOne == errSecItemNotFound)

        // The protected item is the older one: with Skip, limit one finds the plain one.
        let all: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc",
            kSecReturnData as String: true, kSecUseAuthenticationUI as String: kSecUseAuthenticationUISkip,
        ]
        #expect(try keychain.copyMatchingItems(all) as? Data == Data("q".utf8))
        var everything = all
        everything[kSecMatchLimit as String] = kSecMatchLimitAll
        #expect(try keychain.copyMatchingItems(everything) as? [Data] == [Data("q".utf8)])
        #expect(try Bus.checks(of: action).isEmpty, "Fail and Skip never ask")

        // Allow (explicit, as the default) asks once for all the protected items found.
        everything[kSecUseAuthenticationUI as String] = kSecUseAuthenticationUIAllow
        #expect(try keychain.copyMatchingItems(everything) as? [Data] == [Data("p".utf8), Data("q".utf8)])
        #expect(try Bus.checks(of: action).count == 1)
    }

    @Test("attributes and persistent references never ask; their data does", arguments: Store.allCases)
    func attributeOnlyQueries(store: Store) throws {
        try Bus.require()
        let backend = try store.makeBackend()
        try client(backend).addItem(password("m", flags: .userPresence))
        let action = Bus.action("deny")
        let denied = client(backend, action: action)
        let base: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc",
            kSecAttrAccount as String: "m",
        ]
        var attributes = base
        attributes[kSecReturnAttributes as String] = true
        let found = try #require(try denied.copyMatchingItems(attributes) as? [String: Any])
        #expect(found[kSecAttrAccount as String] as? String == "m")
        #expect(found[kSecValueData as String] == nil)
        var reference = base
        reference[kSecReturnPersistentRef as String] = true
        let ref = try #require(try denied.copyMatchingItems(reference) as? Data)
        #expect(try denied.copyMatchingItems(base) == nil)  // existence check
        #expect(try Bus.checks(of: action).isEmpty)

        // Every path to the data goes through the check.
        let byReference: [String: Any] = [kSecValuePersistentRef as String: ref, kSecReturnData as String: true]
        var all = base
        all[kSecReturnData as String] = true
        all[kSecMatchLimit as String] = kSecMatchLimitAll
        var both = base
        both[kSecReturnData as String] = true
        both[kSecReturnAttributes as String] = true
        for query in [byReference, all, both, dataQuery("m")] {
            let got = status { () throws(SecItemError) in try denied.copyMatchingItems(query) }
            #expect(got == errSecAuthFailed, "\(query.keys.sorted())")
        }
        let checks = try Bus.checks(of: action)
        #expect(checks.count == 4, "\(checks)")
    }

    // MARK: Accessibility and the session lock

    nonisolated(unsafe) static let classes: [(CFString, Bool)] = [  // CFString (NSString) is not Sendable on Linux
        (kSecAttrAccessibleWhenUnlocked, true), (kSecAttrAccessibleWhenUnlockedThisDeviceOnly, true),
        (kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, true), (kSecAttrAccessibleAfterFirstUnlock, false),
        (kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly, false), (kSecAttrAccessibleAlways, false),
        (kSecAttrAccessibleAlwaysThisDeviceOnly, false),
    ]

    @Test("a locked session withholds WhenUnlocked data, not AfterFirstUnlock", arguments: Store.allCases)
    func sessionLock(store: Store) throws {
        try Bus.require()
        let backend = try store.makeBackend()
        for (accessible, _) in Self.classes {
            try client(backend).addItem(password(accessible as String, accessible: accessible))
        }
        try client(backend).addItem(password("default"))  // kSecAttrAccessible absent: WhenUnlocked
        let locked = client(backend, session: "locked")
        let unlocked = client(backend, session: "unlocked")
        for (accessible, bound) in Self.classes + [("default" as CFString, true)] {
            let account = accessible as String
            #expect(try unlocked.copyMatchingItems(dataQuery(account)) as? Data == Data("secret".utf8), "\(account)")
            let got = status { () throws(SecItemError) in try locked.copyMatchingItems(dataQuery(account)) }
            #expect(got == (bound ? errSecInteractionNotAllowed : errSecSuccess), "\(account) on \(store)")
            // Attributes stay readable while locked, as on Apple.
            var attributes = dataQuery(account)
            attributes[kSecReturnData as String] = false
            attributes[kSecReturnAttributes as String] = true
            #expect(try locked.copyMatchingItems(attributes) is [String: Any])
        }
    }

    @Test("the lock state follows logind's LockedHint as it changes")
    func lockFollowsLogind() throws {
        try Bus.require()
        let keychain = client(MemoryBackend(), session: "toggle")
        try keychain.addItem(password("t"))
        #expect(try keychain.copyMatchingItems(dataQuery("t")) as? Data == Data("secret".utf8))
        defer { try? Bus.setLocked(false, session: "toggle") }
        for locked in [true, false, true, false] {
            try Bus.setLocked(locked, session: "toggle")
            // The change arrives as a signal: wait for it, then read.
            try Wait.until("logind's LockedHint=\(locked) to reach the gate") {
                (keychain.accessAuthority.sessionLockState() == .locked) == locked
            }
            let got = status { () throws(SecItemError) in try keychain.copyMatchingItems(dataQuery("t")) }
            #expect(got == (locked ? errSecInteractionNotAllowed : errSecSuccess))
        }
    }

    @Test("a locked session refuses before polkit is asked")
    func lockBeforePresence() throws {
        try Bus.require()
        let backend = MemoryBackend()
        try client(backend).addItem(password("both", flags: .userPresence))
        let action = Bus.action("allow")
        let got = status { () throws(SecItemError) in
            try client(backend, action: action, session: "locked").copyMatchingItems(dataQuery("both"))
        }
        #expect(got == errSecInteractionNotAllowed)
        #expect(try Bus.checks(of: action).isEmpty)
    }

    @Test("the authority's report names polkit, the agent and the session")
    func report() throws {
        try Bus.require()
        let report = PolkitAccessAuthority(sessionID: "locked").report()
        #expect(report.polkitReachable && report.logindReachable)
        #expect(report.session.contains("/org/freedesktop/login1/session/locked") && report.session.contains("locked"))
        let empty = PolkitAccessAuthority(busAddress: try Bus.emptyBusAddress).report()
        #expect(!empty.polkitReachable && !empty.logindReachable)
        #expect(empty.session.contains("counts as unlocked"), "\(empty.session)")
        let none = PolkitAccessAuthority(busAddress: "unix:path=/nonexistent/secitem-test-bus").report()
        #expect(none.systemBus.hasPrefix("not reachable"))
    }
}
