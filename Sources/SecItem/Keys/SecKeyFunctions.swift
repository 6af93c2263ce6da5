// Apple's SecKey functions (Security/SecKey.h) over libcrypto. Key formats: docs/keys.md.
internal import CSecItemKeys
public import Foundation
public import SecItemCore

// MARK: Errors

/// Sets `error` to a retained `CFError` in `NSOSStatusErrorDomain` with `status`, as
/// Apple's SecKey functions do, and returns `nil`.
func secKeyFail<T>(
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?, _ status: OSStatus, _ message: String
) -> T? {
    error?.pointee = Unmanaged.passRetained(
        NSError(domain: NSOSStatusErrorDomain, code: Int(status), userInfo: [NSLocalizedDescriptionKey: message]))
    return nil
}

func secKeyFail<T>(_ error: UnsafeMutablePointer<Unmanaged<CFError>?>?, _ thrown: any Error) -> T? {
    guard let thrown = thrown as? SecItemError else {
        return secKeyFail(error, errSecInternalComponent, "\(type(of: thrown))")
    }
    return secKeyFail(error, thrown.status, thrown.detail ?? thrown.message)
}

// MARK: Creating keys

/// Creates a new key pair and returns its private key; with `kSecAttrIsPermanent`
/// it is also stored in the keychain, as `SecItemAdd` of `kSecValueRef` would.
///
/// ```swift
/// let attributes: [String: Any] = [
///     kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
///     kSecAttrKeySizeInBits as String: 256,
///     kSecPrivateKeyAttrs as String: [
///         kSecAttrIsPermanent as String: true,
///         kSecAttrApplicationTag as String: Data("com.example.device".utf8),
///     ],
/// ]
/// var error: Unmanaged<CFError>?
/// guard let key = SecKeyCreateRandomKey(attributes as CFDictionary, &error) else {
///     throw error!.takeRetainedValue() as Error
/// }
/// ```
///
/// - Parameters:
///   - parameters: `kSecAttrKeyType` (`kSecAttrKeyTypeECSECPrimeRandom` with 256, 384 or
///     521 bits; `kSecAttrKeyTypeRSA` with 1024…4096 bits, a multiple of 8),
///     `kSecAttrKeySizeInBits`, and optionally `kSecPrivateKeyAttrs` / `kSecPublicKeyAttrs`
///     (`kSecAttrIsPermanent`, `kSecAttrApplicationTag`, `kSecAttrLabel`,
///     `kSecAttrIsExtractable`, `kSecAttrAccessControl`), `kSecAttrIsPermanent` and
///     `kSecAttrAccessGroup` for both.
///   - errorOut: Receives a `CFError` (`NSOSStatusErrorDomain`, the errSec status) on failure.
/// - Returns: The private key, or `nil`: errSecParam for an unsupported type or size,
///   errSecUnimplemented for a token (`kSecAttrTokenIDSecureEnclave`), the keychain's
///   status when a permanent key cannot be stored (nothing is stored then).
public func SecKeyCreateRandomKey(
    _ parameters: CFDictionary, _ errorOut: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecKey? {
    let params: [String: Any]
    do { params = try parameters._secItemDictionary() } catch { return secKeyFail(errorOut, error) }
    guard let kind = keyKind(params[SecConstant.kSecAttrKeyType]) else {
        return secKeyFail(errorOut, errSecParam, "kSecAttrKeyType must be kSecAttrKeyTypeECSECPrimeRandom or kSecAttrKeyTypeRSA")
    }
    guard let bits = integer(params[SecConstant.kSecAttrKeySizeInBits]) else {
        return secKeyFail(errorOut, errSecParam, "kSecAttrKeySizeInBits is missing or not a number")
    }
    let sizeOK = kind == .ec ? [256, 384, 521].contains(bits) : (1024...4096).contains(bits) && bits % 8 == 0
    guard sizeOK else {
        return secKeyFail(
            errorOut, errSecParam,
            kind == .ec ? "EC keys are 256, 384 or 521 bits, not \(bits)" : "RSA keys are 1024…4096 bits (a multiple of 8), not \(bits)")
    }
    if params[SecConstant.kSecAttrTokenID] != nil {
        return secKeyFail(errorOut, errSecUnimplemented, "kSecAttrTokenID (Secure Enclave, smart cards) is not available on Linux")
    }
    let shared = params.filter { [SecConstant.kSecAttrAccessGroup, SecConstant.kSecAttrIsPermanent, SecConstant.kSecAttrLabel,
        SecConstant.kSecAttrApplicationTag, SecConstant.kSecAttrAccessControl, SecConstant.kSecAttrAccessible,
        SecConstant.kSecAttrSynchronizable, SecConstant.kSecUseDataProtectionKeychain].contains($0.key) }
    guard let privateAttrs = subDictionary(params, kSecPrivateKeyAttrs as String),
        let publicAttrs = subDictionary(params, kSecPublicKeyAttrs as String)
    else { return secKeyFail(errorOut, errSecParam, "kSecPrivateKeyAttrs and kSecPublicKeyAttrs must be dictionaries") }
    let privateRequest = shared.merging(privateAttrs) { _, own in own }
    let publicRequest = shared.filter { $0.key != SecConstant.kSecAttrIsPermanent && $0.key != SecConstant.kSecAttrAccessControl }
        .merging(publicAttrs) { _, own in own }

    guard let generated = LibcryptoKey.generate(kind, bits: bits), let bare = generated.secKey(kind) else {
        return secKeyFail(errorOut, errSecInternalComponent, "libcrypto could not generate the key")
    }
    do {
        let privateKey = try keyWithAttributes(bare, privateRequest)
        guard isTrue(privateRequest[SecConstant.kSecAttrIsPermanent]) || isTrue(publicRequest[SecConstant.kSecAttrIsPermanent]) else {
            return privateKey
        }
        let client = try SecItemSystem.currentClient()
        var stored = privateKey
        if isTrue(privateRequest[SecConstant.kSecAttrIsPermanent]) {
            stored = try store(privateKey, privateRequest, client: client)
        }
        if isTrue(publicRequest[SecConstant.kSecAttrIsPermanent]), let publicKey = publicHalf(of: bare) {
            do {
                _ = try store(try keyWithAttributes(publicKey, publicRequest), publicRequest, client: client)
            } catch let failure as SecItemError {
                // All or nothing: the private key stored above goes again.
                if stored !== privateKey { _ = try? client.deleteItems(referenceQuery(stored)) }
                throw failure
            }
        }
        return stored
    } catch {
        return secKeyFail(errorOut, error)
    }
}

/// Stores `key` with the attributes of `request` (SecItemAdd of kSecValueRef) and returns
/// the key as stored, with the client's authority for its later use.
private func store(_ key: SecKey, _ request: [String: Any], client: SecItemClient) throws -> SecKey {
    var add = request.filter { $0.key != SecConstant.kSecUseDataProtectionKeychain }
    add[SecConstant.kSecClass] = SecConstant.kSecClassKey
    add[SecConstant.kSecValueRef] = key
    add[SecConstant.kSecReturnAttributes] = true
    guard let attributes = try client.addItem(add) as? [String: Any] else {
        throw SecItemError(errSecInternalComponent, "the keychain returned no attributes for the stored key")
    }
    var query = referenceQuery(key)
    query[SecConstant.kSecReturnRef] = true
    if let group = attributes[SecConstant.kSecAttrAccessGroup] { query[SecConstant.kSecAttrAccessGroup] = group }
    if let tag = attributes[SecConstant.kSecAttrApplicationTag] { query[SecConstant.kSecAttrApplicationTag] = tag }
    guard let found = try client.copyMatchingItems(query) as? SecKey else {
        throw SecItemError(errSecInternalComponent, "the stored key was not found again")
    }
    return found
}

private func referenceQuery(_ key: SecKey) -> [String: Any] {
    [SecConstant.kSecClass: SecConstant.kSecClassKey, SecConstant.kSecValueRef: key]
}

/// `key` with the attributes a creation request gives it (coerced as SecItemAdd would).
private func keyWithAttributes(_ key: SecKey, _ request: [String: Any]) throws -> SecKey {
    var dictionary = request.filter { $0.key != SecConstant.kSecUseDataProtectionKeychain }
    dictionary[SecConstant.kSecClass] = SecConstant.kSecClassKey
    let parsed = try ClientRequest.parse(dictionary, role: .add)
    var attributes = parsed.attributes
    if let group = parsed.accessGroup { attributes[SecConstant.kSecAttrAccessGroup] = .string(group) }
    attributes[SecConstant.kSecAttrIsPermanent] = .number(isTrue(request[SecConstant.kSecAttrIsPermanent]) ? 1 : 0)
    return key.with(attributes: attributes, authority: nil)
}

private func keyKind(_ value: Any?) -> SecKey.Kind? {
    switch value {
    case let s as String: return Int64(s).flatMap(SecKey.Kind.init(rawValue:))
    case let n as NSNumber: return SecKey.Kind(rawValue: n.int64Value)
    case let i as Int: return SecKey.Kind(rawValue: Int64(i))
    default: return nil
    }
}

private func integer(_ value: Any?) -> Int? {
    switch value {
    case let i as Int: return i
    case let s as String: return Int(s)
    case let n as NSNumber: return n.intValue
    default: return nil
    }
}

private func isTrue(_ value: Any?) -> Bool {
    switch value {
    case let b as Bool: return b
    case let n as NSNumber: return n.boolValue
    case let i as Int: return i != 0
    default: return false
    }
}

/// `params[key]` as a dictionary: empty when absent, `nil` when it is something else.
private func subDictionary(_ params: [String: Any], _ key: String) -> [String: Any]? {
    guard let value = params[key] else { return [:] }
    if let d = value as? [String: Any] { return d }
    if let d = value as? any SecItemDictionaryConvertible { return try? d._secItemDictionary() }
    return nil
}

/// The public key of `key` (itself when public).
private func publicHalf(of key: SecKey) -> SecKey? {
    guard key.isPrivate else { return key }
    if let data = key.publicKeyData, let loaded = LibcryptoKey.load(key.kind, isPrivate: false, data) {
        return loaded.secKey(key.kind)
    }
    guard let loaded = LibcryptoKey.of(key), let data = loaded.export(isPrivate: false),
        let publicKey = LibcryptoKey.load(key.kind, isPrivate: false, data)
    else { return nil }
    return publicKey.secKey(key.kind)
}

/// Restores a key from its external representation.
///
/// - Parameters:
///   - keyData: Apple's format: for elliptic-curve keys ANSI X9.63 (`04 ‖ X ‖ Y` public,
///     `04 ‖ X ‖ Y ‖ K` private; the curve follows from the length), for RSA the PKCS #1
///     `RSAPublicKey` / `RSAPrivateKey` DER.
///   - attributes: `kSecAttrKeyType`, `kSecAttrKeyClass` (`kSecAttrKeyClassPublic` or
///     `…Private`), optionally `kSecAttrKeySizeInBits` (checked when given).
///   - errorOut: Receives a `CFError` on failure.
/// - Returns: The key, or `nil` with errSecParam for data that is not such a key (a point
///   off the curve, a private key that does not match its public part, trailing bytes).
public func SecKeyCreateWithData(
    _ keyData: CFData, _ attributes: CFDictionary, _ errorOut: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecKey? {
    let params: [String: Any]
    do { params = try attributes._secItemDictionary() } catch { return secKeyFail(errorOut, error) }
    guard let kind = keyKind(params[SecConstant.kSecAttrKeyType]) else {
        return secKeyFail(errorOut, errSecParam, "kSecAttrKeyType must be kSecAttrKeyTypeECSECPrimeRandom or kSecAttrKeyTypeRSA")
    }
    let keyClass = params[SecConstant.kSecAttrKeyClass].flatMap { integer($0) }
    guard let keyClass, keyClass == 0 || keyClass == 1 else {
        return secKeyFail(errorOut, errSecParam, "kSecAttrKeyClass must be kSecAttrKeyClassPublic or kSecAttrKeyClassPrivate")
    }
    let data = keyData as Data
    guard let loaded = LibcryptoKey.load(kind, isPrivate: keyClass == 1, data), let key = loaded.secKey(kind) else {
        return secKeyFail(
            errorOut, errSecParam,
            kind == .ec ? "the data is not an ANSI X9.63 \(keyClass == 1 ? "private" : "public") key on P-256, P-384 or P-521"
                : "the data is not a PKCS #1 \(keyClass == 1 ? "RSAPrivateKey" : "RSAPublicKey")")
    }
    if let bits = params[SecConstant.kSecAttrKeySizeInBits].flatMap({ integer($0) }), bits != key.sizeInBits {
        return secKeyFail(errorOut, errSecParam, "kSecAttrKeySizeInBits is \(bits), but the key has \(key.sizeInBits) bits")
    }
    let own = params.filter {
        [SecConstant.kSecAttrApplicationTag, SecConstant.kSecAttrLabel, SecConstant.kSecAttrIsExtractable].contains($0.key)
    }
    return (try? keyWithAttributes(key, own)) ?? key
}

/// The public key of a key pair (the key itself for a public key); `nil` when it cannot be derived.
public func SecKeyCopyPublicKey(_ key: SecKey) -> SecKey? {
    publicHalf(of: key)
}

/// The key's attributes, as `SecItemCopyMatching` returns a key item's:
/// `kSecAttrKeyClass`, `kSecAttrKeyType`, `kSecAttrKeySizeInBits`,
/// `kSecAttrApplicationLabel`, `kSecAttrApplicationTag`, `kSecAttrLabel`, capability flags,
/// and `kSecValueData` (the external representation) for an extractable key.
public func SecKeyCopyAttributes(_ key: SecKey) -> CFDictionary? {
    key.attributeDictionary as NSDictionary
}

/// The key in Apple's external representation (see ``SecKeyCreateWithData(_:_:_:)``).
/// - Returns: `nil` with errSecParam for a key made or stored with `kSecAttrIsExtractable` false
///   (public keys are always extractable).
public func SecKeyCopyExternalRepresentation(
    _ key: SecKey, _ errorOut: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    guard !key.isPrivate || key.isExtractable else {
        return secKeyFail(errorOut, errSecParam, "the key is not extractable (kSecAttrIsExtractable false)")
    }
    return key.keyData as NSData
}

/// The key's block size in bytes: the modulus length for RSA, the field length for
/// elliptic-curve keys (32 for P-256, 66 for P-521), as Apple's.
public func SecKeyGetBlockSize(_ key: SecKey) -> Int {
    (key.sizeInBits + 7) / 8
}

/// Whether `key` can perform `operation` with `algorithm`.
public func SecKeyIsAlgorithmSupported(_ key: SecKey, _ operation: SecKeyOperationType, _ algorithm: SecKeyAlgorithm) -> Bool {
    KeyAlgorithmPlan(algorithm)?.supports(key, operation) ?? false
}

// MARK: Operations

/// The plan of `algorithm` when `key` supports `operation` with it, else the error Apple gives.
private func plan(
    _ key: SecKey, _ operation: SecKeyOperationType, _ algorithm: SecKeyAlgorithm
) throws(SecItemError) -> KeyAlgorithmPlan {
    guard let plan = KeyAlgorithmPlan(algorithm), plan.supports(key, operation) else {
        throw SecItemError(errSecParam, "\(algorithm.name): algorithm not supported by the key \(key)")
    }
    return plan
}

private func libcryptoKey(_ key: SecKey) throws(SecItemError) -> LibcryptoKey {
    guard let loaded = LibcryptoKey.of(key) else { throw SecItemError(errSecDecode, "the key's data is not a valid key") }
    return loaded
}

/// The input a signature algorithm signs: the message's digest, or the digest given (its length checked).
private func signatureInput(_ data: Data, digest: Int32, message: Bool, algorithm: SecKeyAlgorithm) throws(SecItemError) -> Data {
    if message {
        guard let hashed = Libcrypto.digest(digest, data) else { throw SecItemError(errSecInternalComponent, "digest failed") }
        return hashed
    }
    if digest != 0, data.count != KeyAlgorithmPlan.digestLength(digest) {
        throw SecItemError(errSecParam, "bad digest size for signing with algorithm \(algorithm.name)")
    }
    return data
}

/// Signs `dataToSign` with a private key.
///
/// A key from the keychain whose access control asks for user presence asks first
/// (polkit), as Apple's does before each signature.
/// - Parameters:
///   - key: A private key.
///   - algorithm: An ECDSA (`.ecdsaSignatureMessageX962SHA256`, …) or RSA
///     (`.rsaSignatureMessagePKCS1v15SHA256`, `.rsaSignatureMessagePSSSHA256`, …) algorithm.
///   - dataToSign: The message, or for `…Digest…` algorithms its digest.
///   - errorOut: Receives a `CFError` on failure (errSecParam: algorithm not supported by the
///     key, or a digest of the wrong size).
/// - Returns: The signature (DER for ECDSA), or `nil`.
public func SecKeyCreateSignature(
    _ key: SecKey, _ algorithm: SecKeyAlgorithm, _ dataToSign: CFData, _ errorOut: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    do {
        guard case .signature(_, let padding, let digest, let message) = try plan(key, .sign, algorithm) else {
            throw SecItemError(errSecParam, "\(algorithm.name) is not a signature algorithm")
        }
        let input = try signatureInput(dataToSign as Data, digest: digest, message: message, algorithm: algorithm)
        try key.authorizeUse()
        let rfc4754 = padding == KeyAlgorithmPlan.rfc4754
        guard let signature = Libcrypto.sign(try libcryptoKey(key), padding: rfc4754 ? Int32(CSK_PAD_ECDSA) : padding, digest: digest, input)
        else {
            throw SecItemError(errSecParam, "\(algorithm.name): the input cannot be signed with this key (its length?)")
        }
        if rfc4754 {
            let field = SecKeyGetBlockSize(key)
            let raw = signature.withUnsafeBytes { der in
                Libcrypto.take { csk_ecdsa_der_to_raw(der.baseAddress?.assumingMemoryBound(to: UInt8.self), der.count, field, $0, $1) }
            }
            guard let raw else { throw SecItemError(errSecInternalComponent, "Wrong ECDSA X962 signature") }
            return raw as NSData
        }
        return signature as NSData
    } catch {
        return secKeyFail(errorOut, error)
    }
}

/// Checks a signature with a public key.
/// - Returns: `true` when `signature` is `signedData`'s under `algorithm`; otherwise `false`,
///   with errSecVerifyFailed for a wrong signature or errSecParam for an unsupported algorithm.
public func SecKeyVerifySignature(
    _ key: SecKey, _ algorithm: SecKeyAlgorithm, _ signedData: CFData, _ signature: CFData,
    _ errorOut: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> Bool {
    do {
        guard case .signature(_, let padding, let digest, let message) = try plan(key, .verify, algorithm) else {
            throw SecItemError(errSecParam, "\(algorithm.name) is not a signature algorithm")
        }
        let input = try signatureInput(signedData as Data, digest: digest, message: message, algorithm: algorithm)
        var signatureBytes = signature as Data
        var libcryptoPadding = padding
        if padding == KeyAlgorithmPlan.rfc4754 {
            // r ‖ s, each as long as the field, back to DER for libcrypto.
            guard signatureBytes.count == 2 * SecKeyGetBlockSize(key),
                let der = signatureBytes.withUnsafeBytes({ raw in
                    Libcrypto.take { csk_ecdsa_raw_to_der(raw.baseAddress?.assumingMemoryBound(to: UInt8.self), raw.count, $0, $1) }
                })
            else { throw SecItemError(errSecVerifyFailed, "Wrong ECDSA RFC4754 signature") }
            signatureBytes = der
            libcryptoPadding = Int32(CSK_PAD_ECDSA)
        }
        guard Libcrypto.verify(try libcryptoKey(key), padding: libcryptoPadding, digest: digest, input, signature: signatureBytes) == true
        else {
            throw SecItemError(errSecVerifyFailed, "\(key.kind == .ec ? "EC" : "RSA") signature verification failed")
        }
        return true
    } catch {
        let _: Bool? = secKeyFail(errorOut, error)
        return false
    }
}

/// Encrypts with a public key: RSA (`.rsaEncryptionOAEPSHA256`, `.rsaEncryptionPKCS1`, …) or
/// Apple's ECIES (`.eciesEncryptionStandardVariableIVX963SHA256AESGCM`, …: an ephemeral key,
/// ECDH, the ANSI X9.63 KDF over the ephemeral public key, AES-GCM; the result is the
/// ephemeral public key ‖ ciphertext ‖ 16-byte tag). docs/keys.md has the construction.
/// - Returns: The ciphertext, or `nil` with errSecParam (unsupported algorithm, too long for RSA).
public func SecKeyCreateEncryptedData(
    _ key: SecKey, _ algorithm: SecKeyAlgorithm, _ plaintext: CFData, _ errorOut: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    do {
        switch try plan(key, .encrypt, algorithm) {
        case .rsaEncryption(let padding, let digest):
            guard let out = Libcrypto.encrypt(try libcryptoKey(key), padding: padding, digest: digest, plaintext as Data) else {
                throw SecItemError(errSecParam, "\(algorithm.name): the plaintext is too long for the key")
            }
            return out as NSData
        case .ecies(let cofactor, let digest, let variableIV):
            let recipient = try libcryptoKey(key)
            guard let ephemeral = LibcryptoKey.generate(.ec, bits: key.sizeInBits),
                let ephemeralPublic = ephemeral.export(isPrivate: false),
                let z = Libcrypto.ecdh(ephemeral, recipient, cofactor: cofactor)
            else { throw SecItemError(errSecInternalComponent, "ECIES: the key agreement failed") }
            let (aesKey, iv) = try eciesKeys(z: z, ephemeralPublic: ephemeralPublic, digest: digest, variableIV: variableIV, bits: key.sizeInBits)
            guard let sealed = Libcrypto.gcmSeal(key: aesKey, iv: iv, plaintext as Data) else {
                throw SecItemError(errSecInternalComponent, "ECIES: AES-GCM failed")
            }
            return (ephemeralPublic + sealed) as NSData
        default:
            throw SecItemError(errSecParam, "\(algorithm.name) is not an encryption algorithm")
        }
    } catch {
        return secKeyFail(errorOut, error)
    }
}

/// Apple's ECIES key and IV: the X9.63 KDF of the shared secret with the ephemeral public
/// key as shared info, an AES-128 key for curves up to 256 bits and AES-256 above, then
/// 16 bytes of IV (variable-IV algorithms) or a zero IV.
private func eciesKeys(z: Data, ephemeralPublic: Data, digest: Int32, variableIV: Bool, bits: Int) throws(SecItemError) -> (Data, Data) {
    let keyLength = bits > 256 ? 32 : 16
    guard let derived = Libcrypto.x963KDF(digest: digest, z, sharedInfo: ephemeralPublic, count: keyLength + 16) else {
        throw SecItemError(errSecInternalComponent, "ECIES: the KDF failed")
    }
    let iv = variableIV ? Data(derived.suffix(16)) : Data(count: 16)
    return (Data(derived.prefix(keyLength)), iv)
}

/// Decrypts with a private key what ``SecKeyCreateEncryptedData(_:_:_:_:)`` (here or on an
/// Apple platform) encrypted for its public key.
/// - Returns: The plaintext, or `nil` with errSecParam (unsupported algorithm, data that
///   does not decrypt), or the access gate's status for a key that asks for user presence.
public func SecKeyCreateDecryptedData(
    _ key: SecKey, _ algorithm: SecKeyAlgorithm, _ ciphertext: CFData, _ errorOut: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    do {
        let plan = try plan(key, .decrypt, algorithm)
        let input = ciphertext as Data
        switch plan {
        case .rsaEncryption(let padding, let digest):
            try key.authorizeUse()
            guard let out = Libcrypto.decrypt(try libcryptoKey(key), padding: padding, digest: digest, input) else {
                throw SecItemError(errSecParam, "\(algorithm.name): decryption failed")
            }
            return out as NSData
        case .ecies(let cofactor, let digest, let variableIV):
            let pointLength = 1 + 2 * SecKeyGetBlockSize(key)
            guard input.count >= pointLength + 16,
                let ephemeral = LibcryptoKey.load(.ec, isPrivate: false, Data(input.prefix(pointLength)))
            else { throw SecItemError(errSecParam, "ECIES: the ciphertext is too short or its ephemeral key is not on the curve") }
            try key.authorizeUse()
            guard let z = Libcrypto.ecdh(try libcryptoKey(key), ephemeral, cofactor: cofactor) else {
                throw SecItemError(errSecParam, "ECIES: the key agreement failed")
            }
            let ephemeralPublic = Data(input.prefix(pointLength))
            let (aesKey, iv) = try eciesKeys(z: z, ephemeralPublic: ephemeralPublic, digest: digest, variableIV: variableIV, bits: key.sizeInBits)
            guard let out = Libcrypto.gcmOpen(key: aesKey, iv: iv, Data(input.dropFirst(pointLength))) else {
                throw SecItemError(errSecParam, "ECIES: Failed to aes-gcm decrypt data")
            }
            return out as NSData
        default:
            throw SecItemError(errSecParam, "\(algorithm.name) is not an encryption algorithm")
        }
    } catch {
        return secKeyFail(errorOut, error)
    }
}

/// ECDH between a private key and another party's public key.
/// - Parameters:
///   - privateKey: This party's private key (EC).
///   - algorithm: `.ecdhKeyExchangeStandard`, `.ecdhKeyExchangeCofactor`, or their `…X963SHA…` forms.
///   - publicKey: The other party's public key, on the same curve.
///   - parameters: For the `…X963SHA…` algorithms, `kSecKeyKeyExchangeParameterRequestedSize`
///     (required) and `kSecKeyKeyExchangeParameterSharedInfo`; ignored otherwise.
///   - errorOut: Receives a `CFError` on failure.
/// - Returns: The shared secret (the x coordinate) or the KDF's output; `nil` with errSecParam
///   for keys on different curves or a missing requested size.
public func SecKeyCopyKeyExchangeResult(
    _ privateKey: SecKey, _ algorithm: SecKeyAlgorithm, _ publicKey: SecKey, _ parameters: CFDictionary,
    _ errorOut: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    do {
        guard case .keyExchange(let cofactor, let kdfDigest) = try plan(privateKey, .keyExchange, algorithm) else {
            throw SecItemError(errSecParam, "\(algorithm.name) is not a key exchange algorithm")
        }
        let params = try parameters._secItemDictionary()
        guard publicKey.kind == .ec, publicKey.sizeInBits == privateKey.sizeInBits,
            let peer = LibcryptoKey.load(.ec, isPrivate: false, publicKey.isPrivate ? (publicKey.publicKeyData ?? Data()) : publicKey.keyData)
        else { throw SecItemError(errSecParam, "the public key is not an EC key on the private key's curve") }
        var size = 0
        if kdfDigest != nil {
            guard let requested = integer(params[kSecKeyKeyExchangeParameterRequestedSize as String]), requested > 0, requested <= 0x10000 else {
                throw SecItemError(errSecParam, "kSecKeyKeyExchangeParameterRequestedSize is required for \(algorithm.name)")
            }
            size = requested
        }
        try privateKey.authorizeUse()
        guard let z = Libcrypto.ecdh(try libcryptoKey(privateKey), peer, cofactor: cofactor) else {
            throw SecItemError(errSecParam, "ECDH failed")
        }
        guard let kdfDigest else { return z as NSData }
        let sharedInfo = params[kSecKeyKeyExchangeParameterSharedInfo as String] as? Data ?? Data()
        guard let derived = Libcrypto.x963KDF(digest: kdfDigest, z, sharedInfo: sharedInfo, count: size) else {
            throw SecItemError(errSecInternalComponent, "the X9.63 KDF failed")
        }
        return derived as NSData
    } catch {
        return secKeyFail(errorOut, error)
    }
}
