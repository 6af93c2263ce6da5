// Runs AppleStyleBiometrics.swift on a client with no authority that can ask (the default
// of a client built in code, as on a headless server): it compiles, and reports what
// Apple code expects when nothing can authenticate the user.
import Foundation
import LocalAuthentication
import SecItem
import SecItemCore
import Testing

@Suite("LocalAuthentication in Apple-style code")
struct AppleStyleBiometricsTests {
    @Test("nothing to ask: canEvaluatePolicy false (passcodeNotSet), evaluation fails, the protected read is refused")
    func headless() async throws {
        let client = SecItemClient(backend: isolatedStore(), accessGroups: ["app"])
        let vault = BiometricVault(service: "com.example.vault", context: LAContext(accessAuthority: HeadlessAccessAuthority()))
        #expect(vault.biometryName() == "Passcode")
        let (can, code) = vault.canUseDeviceOwnerAuthentication()
        #expect(!can && code == .passcodeNotSet)
        let answer = await withCheckedContinuation { (done: CheckedContinuation<(Bool, String?), Never>) in
            vault.unlock(reason: "Unlock") { done.resume(returning: ($0, $1)) }
        }
        #expect(answer.0 == false && answer.1 == "unavailable")
        await #expect(throws: LAError.self) { try await vault.unlock(reason: "Unlock") }
        try SecItemClient.withClient(client) {
            try vault.store(Data("tok".utf8), account: "card")
            #expect(throws: BiometricVault.VaultError.self) { try vault.token(account: "card") }
            #expect(SecItemCopyLastError(errSecInteractionNotAllowed) != nil)
        }
    }
}
