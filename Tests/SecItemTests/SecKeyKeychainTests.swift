// Issue 25: keys as keychain items through the Apple surface — SecKeyCreateRandomKey with
// kSecAttrIsPermanent, found again with kSecReturnRef, and the access gate before each
// private-key operation of a key stored with a SecAccessControl asking for user presence.
import Foundation
import SecItem
import SecItemCore
import SecItemMemory
import Synchronization
import Testing

/// An authority that answers presence with `outcome` and counts the questions.
final class CountingAuthority: AccessAuthority {
    let outcome: PresenceOutcome
    let asked = Mutex(0)
    init(_ outcome: PresenceOutcome) { self.outcome = outcome }
    func sessionLockState() -> SessionLockState { .unlocked }
    func authorizeUserPresence(prompt: String?) -> PresenceOutcome {
        asked.withLock { $0 += 1 }
        return outcome
    }
    var count: Int { asked.withLock { $0 } }
}

@Suite("SecKey in the keychain")
struct SecKeyKeychainTests {
    func client(_ authority: any AccessAuthority = HeadlessAccessAuthority()) -> SecItemClient {
        SecItemClient(backend: MemoryBackend(), accessGroups: AccessGroups(["app"]), accessAuthority: authority)
    }

    let tag = Data("com.example.device".utf8)

    @Test("the usual iOS device-key code: permanent key, found by tag, signs; the signature verifies")
    func deviceKey() throws {
        try SecItemClient.withClient(client()) {
            let attributes: [String: Any] = [
                kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                kSecAttrKeySizeInBits as String: 256,
                kSecPrivateKeyAttrs as String: [kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: tag],
            ]
            var error: Unmanaged<CFError>?
            let created = try #require(SecKeyCreateRandomKey(attributes as CFDictionary, &error))
            let query: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag,
                kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecReturnRef as String: true,
            ]
            var item: CFTypeRef?
            #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess)
            let key = item as! SecKey
            #expect(key == created)
            let message = Data("request".utf8)
            guard let signature = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message as CFData, &error) as Data? else {
                throw error!.takeRetainedValue() as any Error
            }
            let publicKey = try #require(SecKeyCopyPublicKey(key))
            #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message as CFData, signature as CFData, &error))
            // Attributes as stored: the tag, permanent, the application label.
            var attrs: CFTypeRef?
            #expect(SecItemCopyMatching([kSecClass: kSecClassKey, kSecAttrApplicationTag: tag, kSecReturnAttributes: true] as CFDictionary, &attrs) == errSecSuccess)
            let dict = try #require(attrs as? [String: Any])
            #expect(dict[kSecAttrIsPermanent as String] as? Int == 1)
            #expect(dict[kSecAttrApplicationLabel as String] as? Data == (SecKeyCopyAttributes(publicKey) as? [String: Any])?[kSecAttrApplicationLabel as String] as? Data)
            // Only the private key was stored.
            var all: CFTypeRef?
            #expect(SecItemCopyMatching([kSecClass: kSecClassKey, kSecMatchLimit: kSecMatchLimitAll, kSecReturnRef: true] as CFDictionary, &all) == errSecSuccess)
            #expect((all as? [SecKey])?.count == 1)
            #expect(SecItemDelete([kSecValueRef: key] as CFDictionary) == errSecSuccess)
        }
    }

    @Test("a key that is not permanent is not stored; a public key can be made permanent too")
    func permanence() throws {
        let c = client()
        try SecItemClient.withClient(c) {
            _ = try #require(SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits: 2048] as CFDictionary, nil))
            #expect(SecItemCopyMatching([kSecClass: kSecClassKey] as CFDictionary, nil) == errSecItemNotFound)
            let both: [String: Any] = [
                kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 384,
                kSecAttrIsPermanent as String: true, kSecAttrLabel as String: "pair",
                kSecPublicKeyAttrs as String: [kSecAttrIsPermanent as String: true],
            ]
            let key = try #require(SecKeyCreateRandomKey(both as CFDictionary, nil))
            var found: CFTypeRef?
            #expect(SecItemCopyMatching([kSecClass: kSecClassKey, kSecAttrKeyClass: kSecAttrKeyClassPublic, kSecReturnRef: true] as CFDictionary, &found) == errSecSuccess)
            #expect(found as? SecKey == SecKeyCopyPublicKey(key))
            #expect(SecItemCopyMatching([kSecClass: kSecClassKey, kSecAttrLabel: "pair", kSecMatchLimit: kSecMatchLimitAll] as CFDictionary, nil) == errSecSuccess)
        }
    }

    @Test("a key stored with .userPresence asks the authority before each signature; denied is errSecAuthFailed")
    func accessGate() throws {
        for (outcome, status) in [(PresenceOutcome.authorized, errSecSuccess), (.denied, errSecAuthFailed), (.dismissed, errSecUserCanceled)] {
            let authority = CountingAuthority(outcome)
            try SecItemClient.withClient(client(authority)) {
                let access = try #require(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, [.privateKeyUsage, .userPresence], nil))
                let attributes: [String: Any] = [
                    kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256,
                    kSecPrivateKeyAttrs as String: [kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: tag,
                                                    kSecAttrAccessControl as String: access],
                ]
                var error: Unmanaged<CFError>?
                let key = try #require(SecKeyCreateRandomKey(attributes as CFDictionary, &error))
                #expect(authority.count == 0, "creating and storing asks nothing")
                let copied = try #require(SecKeyCopyAttributes(key) as? [String: Any])
                let stored = try #require(copied[kSecAttrAccessControl as String] as? SecAccessControl)
                #expect(stored.flags == [.privateKeyUsage, .userPresence])
                let message = Data("m".utf8) as CFData
                let signature = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message, &error)
                #expect(authority.count == 1)
                if status == errSecSuccess {
                    #expect(signature != nil)
                } else {
                    #expect(signature == nil)
                    let e = try #require(error?.takeRetainedValue())
                    #expect(e.domain == NSOSStatusErrorDomain && e.code == Int(status))
                }
                // Found again by ref: the same gate, once per operation.
                var item: CFTypeRef?
                #expect(SecItemCopyMatching([kSecClass: kSecClassKey, kSecAttrApplicationTag: tag, kSecReturnRef: true] as CFDictionary, &item) == errSecSuccess)
                #expect(authority.count == 1, "finding the ref asks nothing")
                _ = SecKeyCreateSignature(item as! SecKey, .ecdsaSignatureMessageX962SHA256, message, nil)
                _ = SecKeyCreateSignature(item as! SecKey, .ecdsaSignatureMessageX962SHA256, message, nil)
                #expect(authority.count == 3)
                // The public half never asks.
                let publicKey = try #require(SecKeyCopyPublicKey(item as! SecKey))
                _ = SecKeyCreateEncryptedData(publicKey, .eciesEncryptionStandardVariableIVX963SHA256AESGCM, message, nil)
                #expect(authority.count == 3)
            }
        }
    }

    @Test("a failed permanent creation stores nothing (duplicate tag and key are impossible; a foreign group is refused)")
    func failedCreation() throws {
        try SecItemClient.withClient(client()) {
            var error: Unmanaged<CFError>?
            let attributes: [String: Any] = [
                kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256,
                kSecAttrAccessGroup as String: "not-mine",
                kSecPrivateKeyAttrs as String: [kSecAttrIsPermanent as String: true],
            ]
            #expect(SecKeyCreateRandomKey(attributes as CFDictionary, &error) == nil)
            let e = try #require(error?.takeRetainedValue())
            #expect(e.domain == NSOSStatusErrorDomain && e.code == Int(errSecMissingEntitlement))
            #expect(SecItemCopyMatching([kSecClass: kSecClassKey] as CFDictionary, nil) == errSecItemNotFound)
        }
    }
}
