import Foundation
import SecItem

// The README's first example, against the encrypted file (SECITEM_FILE and
// SECITEM_KEY_FILE are set by the test): add, read back, print "ok" and the backends
// this build knows.
let query: [String: Any] = [
    kSecClass as String: kSecClassGenericPassword,
    kSecAttrService as String: "minimal",
    kSecAttrAccount as String: "app",
    kSecValueData as String: Data("s3cret".utf8),
]
var status = SecItemAdd(query as CFDictionary, nil)
guard status == errSecSuccess || status == errSecDuplicateItem else {
    print("add failed: \(status)")
    exit(1)
}
var result: CFTypeRef?
status = SecItemCopyMatching(
    [
        kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "minimal",
        kSecReturnData as String: true,
    ] as CFDictionary, &result)
guard status == errSecSuccess, let data = result as? Data, data == Data("s3cret".utf8) else {
    print("read failed: \(status)")
    exit(1)
}
print("ok")
print("backends: \(SecItemBackendChoice.names.sorted().joined(separator: " "))")
