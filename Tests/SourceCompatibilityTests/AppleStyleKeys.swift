// Key, certificate and identity code as iOS developers write it (issue 25): a device key
// made once and found again by tag, signing; certificate pinning storage; PKCS #12 identity
// import. On an Apple platform this file compiles with `import Security` in place of
// `import SecItem`; the target builds with warnings as errors. `AppleStyleTests` runs it.
import Foundation
import SecItem

enum AppleStyleKeyError: Error {
    case status(OSStatus)
    case unsupported
}

/// The usual device-key helper: a P-256 key in the keychain, tagged.
final class DeviceKeyStore {
    let tag: Data

    init(tag: String) {
        self.tag = tag.data(using: .utf8)!
    }

    func loadKey() -> SecKey? {
        let query: [String: Any] = [
            kSecClass as String: kSecClassKey,
            kSecAttrApplicationTag as String: tag,
            kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
            kSecReturnRef as String: true,
        ]
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        guard status == errSecSuccess else { return nil }
        return (item as! SecKey)
    }

    func makeKey() throws -> SecKey {
        let attributes: [String: Any] = [
            kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
            kSecAttrKeySizeInBits as String: 256,
            kSecPrivateKeyAttrs as String: [
                kSecAttrIsPermanent as String: true,
                kSecAttrApplicationTag as String: tag,
            ],
        ]
        var error: Unmanaged<CFError>?
        guard let privateKey = SecKeyCreateRandomKey(attributes as CFDictionary, &error) else {
            throw error!.takeRetainedValue() as Error
        }
        return privateKey
    }

    func sign(_ message: Data) throws -> Data {
        let key = try loadKey() ?? makeKey()
        let algorithm: SecKeyAlgorithm = .ecdsaSignatureMessageX962SHA256
        guard SecKeyIsAlgorithmSupported(key, .sign, algorithm) else { throw AppleStyleKeyError.unsupported }
        var error: Unmanaged<CFError>?
        guard let signature = SecKeyCreateSignature(key, algorithm, message as CFData, &error) as Data? else {
            throw error!.takeRetainedValue() as Error
        }
        return signature
    }

    func verify(_ message: Data, signature: Data) -> Bool {
        guard let key = loadKey(), let publicKey = SecKeyCopyPublicKey(key) else { return false }
        var error: Unmanaged<CFError>?
        return SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message as CFData, signature as CFData, &error)
    }

    func publicKeyData() throws -> Data {
        guard let key = loadKey(), let publicKey = SecKeyCopyPublicKey(key) else { throw AppleStyleKeyError.status(errSecItemNotFound) }
        var error: Unmanaged<CFError>?
        guard let data = SecKeyCopyExternalRepresentation(publicKey, &error) as Data? else {
            throw error!.takeRetainedValue() as Error
        }
        return data
    }

    func deleteKey() -> OSStatus {
        let query: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag]
        return SecItemDelete(query as CFDictionary)
    }
}

/// Certificate pinning storage: certificates kept by label.
enum PinnedCertificateStore {
    static func store(_ der: Data, label: String) -> OSStatus {
        guard let certificate = SecCertificateCreateWithData(nil, der as CFData) else { return errSecParam }
        let query: [String: Any] = [
            kSecClass as String: kSecClassCertificate,
            kSecValueRef as String: certificate,
            kSecAttrLabel as String: label,
        ]
        return SecItemAdd(query as CFDictionary, nil)
    }

    static func load(label: String) -> SecCertificate? {
        let query: [String: Any] = [
            kSecClass as String: kSecClassCertificate,
            kSecAttrLabel as String: label,
            kSecReturnRef as String: true,
        ]
        var item: CFTypeRef?
        guard SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess else { return nil }
        return (item as! SecCertificate)
    }

    static func matches(_ certificate: SecCertificate, pinned der: Data) -> Bool {
        (SecCertificateCopyData(certificate) as Data) == der
    }
}

/// PKCS #12 client identity import, as apps load a client certificate.
enum ClientIdentityLoader {
    static func load(_ p12: Data, password: String) throws -> SecIdentity {
        let options = [kSecImportExportPassphrase as String: password]
        var rawItems: CFArray?
        let status = SecPKCS12Import(p12 as CFData, options as CFDictionary, &rawItems)
        guard status == errSecSuccess else { throw AppleStyleKeyError.status(status) }
        let items = rawItems! as! [[String: Any]]
        let identity = items[0][kSecImportItemIdentity as String] as! SecIdentity
        return identity
    }

    static func commonName(of identity: SecIdentity) -> String? {
        var certificate: SecCertificate?
        guard SecIdentityCopyCertificate(identity, &certificate) == errSecSuccess, let certificate else { return nil }
        var name: CFString?
        SecCertificateCopyCommonName(certificate, &name)
        return name as String?
    }

    static func store(_ identity: SecIdentity) -> OSStatus {
        SecItemAdd([kSecValueRef as String: identity] as CFDictionary, nil)
    }
}
