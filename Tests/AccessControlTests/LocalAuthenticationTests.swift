import Foundation
import LocalAuthentication
import SecItem
import SecItemCore
import SecItemPolkit
import Testing

/// Module LocalAuthentication on the mock polkit of scripts/with-system-bus (issue 26):
/// Apple's LAContext flows, and one authentication covering several keychain reads
/// through kSecUseAuthenticationContext.
@Suite("LocalAuthentication on polkit")
struct LocalAuthenticationTests {
    func context(_ outcome: String) -> (LAContext, action: String) {
        let action = Bus.action(outcome)
        return (LAContext(accessAuthority: PolkitAccessAuthority(action: action, sessionID: "unlocked")), action)
    }

    /// The LocalAuthentication code of what `body` threw, or nil when it did not throw.
    func code(_ body: () async throws -> Void) async -> LAError.Code? {
        do {
            try await body()
            return nil
        } catch let error as LAError {
            return error.code
        } catch {
            Issue.record("not an LAError: \(error)")
            return nil
        }
    }

    @Test("allow, deny, cancel, no agent: evaluatePolicy answers as Apple's, asking polkit once each")
    func evaluateOutcomes() async throws {
        try Bus.require()
        let expected: [(String, LAError.Code?)] = [
            ("allow", nil), ("deny", .authenticationFailed), ("dismiss", .userCancel), ("noagent", .notInteractive),
        ]
        for (outcome, want) in expected {
            let (context, action) = context(outcome)
            var error: NSError?
            #expect(context.canEvaluatePolicy(.deviceOwnerAuthentication, error: &error), "\(outcome): \(String(describing: error))")
            let got = await code { try await context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "Unlock \(outcome)") }
            #expect(got == want, "\(outcome)")
            #expect(try Bus.checks(of: action).count == 1, "polkit asked once for \(outcome)")
        }
    }

    @Test("the reply form, and catch LAError.userCancel by name")
    func replyAndCatchByName() async throws {
        try Bus.require()
        let (context, _) = context("dismiss")
        let (success, error) = await withCheckedContinuation { (done: CheckedContinuation<(Bool, (any Error)?), Never>) in
            context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "reply") { done.resume(returning: ($0, $1)) }
        }
        #expect(!success)
        let thrown = try #require(error)
        var caught = false
        do { throw thrown } catch LAError.userCancel { caught = true } catch {}
        #expect(caught)
        let ns = thrown as NSError
        #expect(ns.domain == LAErrorDomain && ns.code == -2)
        #expect(ns.localizedDescription.hasPrefix("Canceled by user."))
    }

    @Test("an evaluated context covers several reads with kSecUseAuthenticationContext, without asking again", arguments: Store.allCases)
    func oneAuthenticationSeveralReads(store: Store) async throws {
        try Bus.require()
        let backend = try store.makeBackend()
        try client(backend).addItem(password("a", flags: .userPresence))
        try client(backend).addItem(password("b", data: "second", flags: .biometryAny))
        let (context, contextAction) = context("allow")
        try await context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "Read your tokens")
        // The keychain's own authority would refuse: only the context can release the items.
        let denyAction = Bus.action("deny")
        let keychain = client(backend, action: denyAction)
        SecItemClient.withClient(keychain) {
            for (account, data) in [("a", "secret"), ("b", "second"), ("a", "secret")] {
                var result: CFTypeRef?
                let query = dataQuery(account, extra: [kSecUseAuthenticationContext as String: context])
                #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess, "\(account) on \(store)")
                #expect(result as? Data == Data(data.utf8))
            }
            // Without the context the keychain asks its authority, which refuses.
            #expect(SecItemCopyMatching(dataQuery("a") as CFDictionary, nil) == errSecAuthFailed)
        }
        #expect(try Bus.checks(of: contextAction).count == 1, "one authentication")
        #expect(try Bus.checks(of: denyAction).count == 1, "asked only for the read without the context")
        // An invalidated context covers nothing.
        context.invalidate()
        #expect(status { () throws(SecItemError) in
            try keychain.copyMatchingItems(dataQuery("a", extra: [kSecUseAuthenticationContext as String: context]))
        } == errSecAuthFailed)
        let after = await code { try await context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "again") }
        #expect(after == .invalidContext)
    }

    @Test("a read that asked records its authentication in the context: the next read does not ask")
    func readRecordsAuthentication() throws {
        try Bus.require()
        let backend = Store.memory.makeBackendOrFail()
        try client(backend).addItem(password("a", flags: .userPresence))
        let action = Bus.action("allow")
        let keychain = client(backend, action: action)
        let context = LAContext(accessAuthority: PolkitAccessAuthority(action: Bus.action("deny"), sessionID: "unlocked"))
        context.localizedReason = "Sign in to Example"
        for _ in 0..<3 {
            let data = try keychain.copyMatchingItems(dataQuery("a", extra: [kSecUseAuthenticationContext as String: context]))
            #expect(data as? Data == Data("secret".utf8))
        }
        let checks = try Bus.checks(of: action)
        #expect(checks.count == 1, "asked once, for the first read")
        #expect(checks.first?.contains("Sign in to Example") == true, "the context's localizedReason is the prompt: \(checks)")
    }

    @Test("touchIDAuthenticationAllowableReuseDuration: reads reuse the authentication within it, not after")
    func reuseWithinDuration() async throws {
        try Bus.require()
        let backend = Store.memory.makeBackendOrFail()
        try client(backend).addItem(password("a", flags: .userPresence))
        let (context, _) = context("allow")
        context.touchIDAuthenticationAllowableReuseDuration = 2
        #expect(context.touchIDAuthenticationAllowableReuseDuration == 2)
        let clock = ContinuousClock()
        let asked = clock.now
        try await context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "once")
        let answered = clock.now  // the authentication was recorded between `asked` and `answered`
        let keychain = client(backend, action: Bus.action("deny"))
        let query = dataQuery("a", extra: [kSecUseAuthenticationContext as String: context])
        let within = status { () throws(SecItemError) in try keychain.copyMatchingItems(query) }
        if clock.now - asked < .seconds(2) {
            #expect(within == errSecSuccess, "within the duration: covered")
        } else {
            print("reuseWithinDuration: the machine took over 2 s to read; the covered read is not judged")
        }
        try await Task.sleep(until: answered + .milliseconds(2100), clock: clock)
        #expect(status { () throws(SecItemError) in try keychain.copyMatchingItems(query) } == errSecAuthFailed, "after it: asked, refused")
        context.touchIDAuthenticationAllowableReuseDuration = 10_000
        #expect(context.touchIDAuthenticationAllowableReuseDuration == LATouchIDAuthenticationMaximumAllowableReuseDuration)
    }

    @Test("interactionNotAllowed: evaluation fails with notInteractive and reads with errSecInteractionNotAllowed, polkit never asked")
    func interactionNotAllowed() async throws {
        try Bus.require()
        let backend = Store.memory.makeBackendOrFail()
        try client(backend).addItem(password("a", flags: .userPresence))
        let (context, contextAction) = context("allow")
        context.interactionNotAllowed = true
        let got = await code { try await context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "x") }
        #expect(got == .notInteractive)
        let keychainAction = Bus.action("allow")
        let keychain = client(backend, action: keychainAction)
        #expect(status { () throws(SecItemError) in
            try keychain.copyMatchingItems(dataQuery("a", extra: [kSecUseAuthenticationContext as String: context]))
        } == errSecInteractionNotAllowed)
        #expect(try Bus.checks(of: contextAction).isEmpty && Bus.checks(of: keychainAction).isEmpty)
        // Items that need nobody are read as always.
        try client(backend).addItem(password("plain"))
        #expect(try keychain.copyMatchingItems(dataQuery("plain", extra: [kSecUseAuthenticationContext as String: context])) as? Data == Data("secret".utf8))
    }

    @Test("no polkit: canEvaluatePolicy is false with passcodeNotSet; no fprintd: biometryType none, biometryNotAvailable")
    func nothingToAsk() async throws {
        try Bus.require()
        let empty = LAContext(accessAuthority: PolkitAccessAuthority(busAddress: try Bus.emptyBusAddress))
        var error: NSError?
        #expect(!empty.canEvaluatePolicy(.deviceOwnerAuthentication, error: &error))
        #expect(error?.domain == LAErrorDomain && error?.code == LAError.Code.passcodeNotSet.rawValue)
        let got = await code { try await empty.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "x") }
        #expect(got == .passcodeNotSet)

        let (context, _) = context("allow")
        #expect(context.biometryType == .none, "the mock bus runs no fprintd")
        error = nil
        #expect(!context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        #expect(error?.code == LAError.Code.biometryNotAvailable.rawValue)
        #expect(!context.canEvaluatePolicy(.deviceOwnerAuthenticationWithWatch, error: nil))
        #expect(LAError.touchIDNotAvailable == .biometryNotAvailable && LAError.Code.biometryNotAvailable.rawValue == -6)
        #expect(LAError.notInteractive.rawValue == -1004 && LAError.userCancel.rawValue == -2)
    }

    @Test("kSecUseAuthenticationContext takes only an LAContext")
    func contextValueIsChecked() throws {
        let keychain = client(Store.memory.makeBackendOrFail())
        #expect(status { () throws(SecItemError) in
            try keychain.copyMatchingItems(dataQuery("a", extra: [kSecUseAuthenticationContext as String: "not a context"]))
        } == errSecParam)
    }
}

extension Store {
    func makeBackendOrFail() -> any SecItemBackend {
        // The memory store cannot fail to open.
        (try? makeBackend())!
    }
}
