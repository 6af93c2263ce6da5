// A payment token protected by biometry, written the way iOS apps do it: the item is
// saved with an access control that asks for the current biometric set, and reading it
// makes the system ask the user. On Apple platforms this file starts with
// `import Security`; that line is the only change (on Linux the user is asked by
// polkit's authentication agent; see docs/secitem-semantics.md §9).
import Foundation
import SecItem  // on Apple platforms: import Security

/// Saves `data` so that reading it needs the user's current biometry (and a passcode set).
func saveWithBiometricProtection(data: Data, service: String, account: String) -> Bool {
    guard let access = SecAccessControlCreateWithFlags(
        nil, kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, .biometryCurrentSet, nil)
    else { return false }
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecAttrAccount as String: account,
        kSecValueData as String: data,
        kSecAttrAccessControl as String: access,
    ]
    SecItemDelete(query as CFDictionary)  // replace any older copy
    return SecItemAdd(query as CFDictionary, nil) == errSecSuccess
}

/// Reads the protected item; the system shows `prompt` while it asks the user.
func readWithBiometricProtection(service: String, account: String, prompt: String) -> (OSStatus, Data?) {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecAttrAccount as String: account,
        kSecReturnData as String: true,
        kSecMatchLimit as String: kSecMatchLimitOne,
        kSecUseOperationPrompt as String: prompt,
    ]
    var result: AnyObject?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    return (status, result as? Data)
}

/// Whether the item exists, without asking the user (attributes only).
func hasProtectedItem(service: String, account: String) -> Bool {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecAttrAccount as String: account,
        kSecReturnAttributes as String: true,
        kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail,
    ]
    return SecItemCopyMatching(query as CFDictionary, nil) == errSecSuccess
}

let service = "com.example.wallet"
let account = "card-4242"
let token = Data("tok_visa_4242_exp_2030".utf8)

guard saveWithBiometricProtection(data: token, service: service, account: account) else {
    print("FAIL: the protected item was not saved")
    exit(1)
}
print("saved the payment token with .biometryCurrentSet")
print("item present without asking: \(hasProtectedItem(service: service, account: account))")

let (status, data) = readWithBiometricProtection(
    service: service, account: account, prompt: "Confirm it is you to pay with card 4242")
switch status {
case errSecSuccess where data == token:
    print("read the payment token after authentication")
case errSecUserCanceled:
    print("the user cancelled authentication (errSecUserCanceled)")
case errSecAuthFailed:
    print("authentication failed (errSecAuthFailed)")
case errSecInteractionNotAllowed:
    print("nobody could be asked, or the session is locked (errSecInteractionNotAllowed)")
default:
    print("FAIL: unexpected status \(status)")
}
exit(status == errSecSuccess ? 0 : 2)
