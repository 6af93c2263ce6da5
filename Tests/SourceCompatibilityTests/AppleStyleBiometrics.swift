// Biometric unlock written as iOS apps write it (issue 26): an LAContext asked whether it
// can evaluate, evaluated with the reply block and with async/await, then passed to the
// keychain with kSecUseAuthenticationContext. On an Apple platform this file compiles with
// `import Security` in place of `import SecItem`. `AppleStyleBiometricsTests` runs it.
import Foundation
import LocalAuthentication
import SecItem

final class BiometricVault {
    enum VaultError: Error {
        case unavailable(LAError.Code?)
        case keychain(OSStatus)
    }

    let service: String
    let context: LAContext

    init(service: String, context: LAContext = LAContext()) {
        self.service = service
        self.context = context
        context.localizedCancelTitle = "Not now"
        context.localizedFallbackTitle = ""
        context.touchIDAuthenticationAllowableReuseDuration = 10
    }

    /// What the settings screen shows.
    func biometryName() -> String {
        switch context.biometryType {
        case .faceID: return "Face ID"
        case .touchID: return "Touch ID"
        case .opticID: return "Optic ID"
        case .none: return "Passcode"
        }
    }

    func canUseDeviceOwnerAuthentication() -> (Bool, LAError.Code?) {
        var error: NSError?
        let can = context.canEvaluatePolicy(.deviceOwnerAuthentication, error: &error)
        return (can, error.flatMap { LAError.Code(rawValue: $0.code) })
    }

    /// The reply-block form, as most code still has it.
    func unlock(reason: String, completion: @escaping @Sendable (Bool, String?) -> Void) {
        context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: reason) { success, error in
            if let error = error as? LAError {
                switch error.code {
                case .userCancel, .appCancel, .systemCancel: completion(false, "cancelled")
                case .biometryNotAvailable, .biometryNotEnrolled, .passcodeNotSet: completion(false, "unavailable")
                default: completion(false, error.localizedDescription)
                }
                return
            }
            completion(success, nil)
        }
    }

    /// The async form.
    func unlock(reason: String) async throws {
        do {
            try await context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: reason)
        } catch LAError.userCancel {
            throw VaultError.unavailable(.userCancel)
        }
    }

    func store(_ token: Data, account: String) throws {
        var error: Unmanaged<CFError>?
        guard let access = SecAccessControlCreateWithFlags(kCFAllocatorDefault, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, .userPresence, &error) else {
            throw error!.takeRetainedValue() as Error
        }
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecAttrAccount as String: account, kSecValueData as String: token, kSecAttrAccessControl as String: access,
        ]
        let status = SecItemAdd(query as CFDictionary, nil)
        guard status == errSecSuccess else { throw VaultError.keychain(status) }
    }

    /// Reads with the evaluated context: no second prompt.
    func token(account: String) throws -> Data {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecAttrAccount as String: account, kSecReturnData as String: true,
            kSecUseAuthenticationContext as String: context,
        ]
        var result: AnyObject?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        guard status == errSecSuccess, let data = result as? Data else { throw VaultError.keychain(status) }
        return data
    }
}
