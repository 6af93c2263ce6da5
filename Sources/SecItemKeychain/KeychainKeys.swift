public import Foundation
import SecItem
public import SecItemCore

/// The typed layer for keys, certificates and identities (issue 25): device keys found by
/// tag, pinned certificates, client identities, in one access group of one client.
///
/// Every call is one SecItem query through `SecItemClient`, so Apple's rules (derived
/// attributes, primary keys, access control) hold on every backend.
///
/// ```swift
/// let keys = KeychainKeys(client: client)
/// let deviceKey = try keys.privateKey(tag: "com.example.device", orMake: .p256)
/// let signature = try keys.sign(Data("request".utf8), with: deviceKey)
/// let identity = try keys.importPKCS12(p12Data, passphrase: passphrase, label: "mTLS")
/// ```
public struct KeychainKeys: Sendable {
    /// Key types and sizes ``privateKey(tag:orMake:accessControl:)`` makes.
    public enum KeySpec: Sendable, Hashable {
        /// Elliptic curve P-256 (`kSecAttrKeyTypeECSECPrimeRandom`, 256 bits), as the Secure Enclave.
        case p256
        /// Elliptic curve P-384.
        case p384
        /// RSA with this many bits (2048…4096).
        case rsa(Int)

        var parameters: [String: Any] {
            switch self {
            case .p256: return [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256]
            case .p384: return [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 384]
            case .rsa(let bits): return [kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits as String: bits]
            }
        }
    }

    /// The client (store and entitlements).
    public let client: SecItemClient
    /// The access group items go to and are found in; `nil`: the client's default group, every entitled group.
    public let accessGroup: String?

    /// Keys and certificates of `client`, in `accessGroup`.
    public init(client: SecItemClient, accessGroup: String? = nil) {
        self.client = client
        self.accessGroup = accessGroup
    }

    private func scoped(_ query: [String: Any]) -> [String: Any] {
        var q = query
        if let accessGroup { q[kSecAttrAccessGroup as String] = accessGroup }
        return q
    }

    /// The private key stored under `tag`, or `nil`.
    public func privateKey(tag: String) throws -> SecKey? {
        do {
            return try client.copyMatchingItems(scoped([
                kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data(tag.utf8),
                kSecAttrKeyClass as String: kSecAttrKeyClassPrivate, kSecReturnRef as String: true,
            ])) as? SecKey
        } catch SecItemError.itemNotFound {
            return nil
        }
    }

    /// The private key stored under `tag`; when there is none, a new permanent one of `spec`.
    /// - Parameters:
    ///   - tag: The key's `kSecAttrApplicationTag`.
    ///   - spec: The type and size of a new key.
    ///   - accessControl: For a new key, e.g. `.userPresence` to ask before each use.
    public func privateKey(tag: String, orMake spec: KeySpec, accessControl: SecAccessControl? = nil) throws -> SecKey {
        if let key = try privateKey(tag: tag) { return key }
        var privateAttributes: [String: Any] = [
            kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: Data(tag.utf8),
        ]
        if let accessControl { privateAttributes[kSecAttrAccessControl as String] = accessControl }
        var parameters = spec.parameters
        parameters[kSecPrivateKeyAttrs as String] = privateAttributes
        if let accessGroup { parameters[kSecAttrAccessGroup as String] = accessGroup }
        let made = SecItemClient.withClient(client) { () -> (SecKey?, NSError?) in
            var error: Unmanaged<CFError>?
            let key = SecKeyCreateRandomKey(parameters as CFDictionary, &error)
            return (key, error?.takeRetainedValue())
        }
        guard let key = made.0 else { throw made.1 ?? SecItemError(errSecInternalComponent) }
        return key
    }

    /// Removes the keys stored under `tag`. - Returns: Whether there were any.
    @discardableResult
    public func removeKeys(tag: String) throws -> Bool {
        do {
            return try client.deleteItems(scoped([kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data(tag.utf8)])) > 0
        } catch SecItemError.itemNotFound {
            return false
        }
    }

    /// Signs `data` with `key`: ECDSA (X9.62, SHA-256) for elliptic-curve keys, RSA PSS SHA-256 for RSA.
    public func sign(_ data: Data, with key: SecKey) throws -> Data {
        let algorithm: SecKeyAlgorithm = SecKeyIsAlgorithmSupported(key, .sign, .ecdsaSignatureMessageX962SHA256)
            ? .ecdsaSignatureMessageX962SHA256 : .rsaSignatureMessagePSSSHA256
        var error: Unmanaged<CFError>?
        let signature = SecKeyCreateSignature(key, algorithm, data as CFData, &error)
        guard let signature else { throw error?.takeRetainedValue() ?? SecItemError(errSecInternalComponent) }
        return signature as Data
    }

    /// Every object of type `T` that `query` returns (`kSecReturnRef`, `kSecMatchLimitAll`).
    private func all<T>(_ query: [String: Any], of type: T.Type) throws -> [T] {
        switch Result(catching: { () throws(SecItemError) -> [Any] in try client.copyMatchingItems(query) as? [Any] ?? [] }) {
        case .success(let found): return found.compactMap { $0 as? T }
        case .failure(let error) where error.status == errSecItemNotFound: return []
        case .failure(let error): throw error
        }
    }

    /// Stores a certificate (pinning it), with `label` or its subject summary.
    /// - Throws: `errSecDuplicateItem` when the same issuer and serial number is stored.
    public func add(_ certificate: SecCertificate, label: String? = nil) throws {
        var add = scoped([kSecValueRef as String: certificate])
        if let label { add[kSecAttrLabel as String] = label }
        try client.addItem(add)
    }

    /// The certificates stored (with `label`, when given).
    public func certificates(label: String? = nil) throws -> [SecCertificate] {
        var q = scoped([
            kSecClass as String: kSecClassCertificate, kSecReturnRef as String: true, kSecMatchLimit as String: kSecMatchLimitAll,
        ])
        if let label { q[kSecAttrLabel as String] = label }
        return try all(q, of: SecCertificate.self)
    }

    /// The identities (certificates with their private keys; with `label`, when given).
    public func identities(label: String? = nil) throws -> [SecIdentity] {
        var q = scoped([
            kSecClass as String: kSecClassIdentity, kSecReturnRef as String: true, kSecMatchLimit as String: kSecMatchLimitAll,
        ])
        if let label { q[kSecAttrLabel as String] = label }
        return try all(q, of: SecIdentity.self)
    }

    /// Reads a PKCS #12 file and stores its identity under `label`.
    /// - Throws: `errSecAuthFailed` for a wrong passphrase, `errSecDecode` for a file that is
    ///   not PKCS #12, `errSecDuplicateItem` when the certificate is already stored.
    @discardableResult
    public func importPKCS12(_ data: Data, passphrase: String, label: String? = nil) throws -> SecIdentity {
        var items: CFArray?
        let status = SecPKCS12Import(data as CFData, [kSecImportExportPassphrase as String: passphrase] as CFDictionary, &items)
        guard status == errSecSuccess else { throw SecItemError(status) }
        guard let identity = (items as? [[String: Any]])?.first?[kSecImportItemIdentity as String] as? SecIdentity else {
            throw SecItemError(errSecItemNotFound, "the PKCS #12 file holds no private key")
        }
        var add = scoped([kSecValueRef as String: identity])
        if let label { add[kSecAttrLabel as String] = label }
        try client.addItem(add)
        return identity
    }
}
