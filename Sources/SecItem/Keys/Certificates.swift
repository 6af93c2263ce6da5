// SecCertificate and SecIdentity (Security/SecCertificate.h, SecIdentity.h, SecImportExport.h)
// over libcrypto.
internal import CSecItemKeys
public import Foundation
public import SecItemCore

/// A parsed certificate for the length of one call; freed in `deinit`.
final class LibcryptoCertificate {
    let handle: OpaquePointer
    private let owned: Bool
    /// The bytes it was parsed from, when it was (a `SecCertificate` keeps them as they
    /// came: libcrypto writes some fields back otherwise, such as the padding bits of
    /// the signature's BIT STRING, which the fuzz target certificate found).
    private let original: Data?

    init?(der: Data) {
        let handle = der.withUnsafeBytes { bytes -> OpaquePointer? in
            guard let base = bytes.baseAddress, bytes.count > 0 else { return nil }
            return csk_cert_parse(base.assumingMemoryBound(to: UInt8.self), bytes.count)
        }
        guard let handle else { return nil }
        self.handle = handle
        owned = true
        original = Data(der)
    }

    /// A certificate another object owns (a PKCS #12's), valid while that object lives.
    init(borrowing handle: OpaquePointer) {
        self.handle = handle
        owned = false
        original = nil
    }

    deinit { if owned { csk_cert_free(handle) } }

    var der: Data? { Libcrypto.take { csk_cert_der(handle, $0, $1) } }
    var serial: Data? { Libcrypto.take { csk_cert_serial(handle, $0, $1) } }
    func name(issuer: Bool, normalized: Bool) -> Data? {
        Libcrypto.take { csk_cert_name(handle, issuer ? 1 : 0, normalized ? 1 : 0, $0, $1) }
    }
    var subjectKeyID: Data? { Libcrypto.take { csk_cert_subject_key_id(handle, $0, $1) } }
    var publicKeyBits: Data? { Libcrypto.take { csk_cert_public_key_bits(handle, $0, $1) } }
    var alias: String? { Libcrypto.take { csk_cert_alias(handle, $0, $1) }.flatMap { String(bytes: $0, encoding: .utf8) } }
    var localKeyID: Data? { Libcrypto.take { csk_cert_local_key_id(handle, $0, $1) } }

    /// The subject's values of attribute `nid` (13 CN, 48 emailAddress, 17 OU, 10 O), with
    /// the rfc822Name alternative names after them when `sanEmails`.
    func subjectValues(_ nid: Int32, sanEmails: Bool = false) -> [String] {
        guard let bytes = Libcrypto.take({ csk_cert_subject_values(handle, nid, sanEmails ? 1 : 0, $0, $1) }) else { return [] }
        return bytes.split(separator: 0, omittingEmptySubsequences: false).dropLast().map { String(decoding: $0, as: UTF8.self) }
    }

    /// Apple's subject summary: the common name, else an email address, else the
    /// organization or unit, else the whole subject.
    var subjectSummary: String? {
        if let cn = subjectValues(13).last { return cn }
        if let email = subjectValues(48, sanEmails: true).first { return email }
        if let o = subjectValues(17).first ?? subjectValues(10).first { return o }
        return Libcrypto.take { csk_cert_subject_line(handle, $0, $1) }.map { String(decoding: $0, as: UTF8.self) }
    }

    /// The certificate's public key as a `SecKey` (EC P-256/384/521 or RSA), else `nil`.
    var publicKey: SecKey? {
        let type = csk_cert_public_key_type(handle)
        guard let kind = SecKey.Kind(rawValue: Int64(type)), let bits = publicKeyBits,
            let key = LibcryptoKey.load(kind, isPrivate: false, bits)
        else { return nil }
        return key.secKey(kind)
    }

    /// The `SecCertificate` with Apple's derived attributes.
    var secCertificate: SecCertificate? {
        guard let der = original ?? der, let serial, let subject = name(issuer: false, normalized: true),
            let issuer = name(issuer: true, normalized: true)
        else { return nil }
        var attributes: [String: AttributeValue] = [
            SecConstant.kSecAttrCertificateType: .number(Int64(csk_cert_version(handle))),
            SecConstant.kSecAttrCertificateEncoding: .number(3),  // CSSM_CERT_ENCODING_DER
            SecConstant.kSecAttrSubject: .data(subject),
            SecConstant.kSecAttrIssuer: .data(issuer),
            SecConstant.kSecAttrSerialNumber: .data(serial),
        ]
        if let skid = subjectKeyID { attributes[SecConstant.kSecAttrSubjectKeyID] = .data(skid) }
        if let bits = publicKeyBits, let hash = Libcrypto.digest(1, bits) {
            attributes[SecConstant.kSecAttrPublicKeyHash] = .data(hash)
        }
        if let summary = subjectSummary { attributes[SecConstant.kSecAttrLabel] = .string(summary) }
        return SecCertificate(der: der, derivedAttributes: attributes)
    }
}

/// Apple's `SecCertificateGetTypeID`-free API: the certificate of DER `data`.
///
/// - Returns: The certificate, or `nil` when `data` is not exactly one DER X.509
///   certificate (PEM, garbage, trailing bytes), as Apple's.
public func SecCertificateCreateWithData(_ allocator: CFAllocator?, _ data: CFData) -> SecCertificate? {
    LibcryptoCertificate(der: data as Data)?.secCertificate
}

/// The certificate's DER.
public func SecCertificateCopyData(_ certificate: SecCertificate) -> CFData {
    certificate.der as NSData
}

/// A human-readable summary of the subject: its common name, else an email address, else
/// its organization, else the whole subject name.
public func SecCertificateCopySubjectSummary(_ certificate: SecCertificate) -> CFString? {
    LibcryptoCertificate(der: certificate.der)?.subjectSummary.map { $0 as NSString }
}

/// The subject's common name (the last, when it has several).
/// - Returns: `errSecSuccess` (with `nil` when there is none), or `errSecParam`.
@discardableResult
public func SecCertificateCopyCommonName(
    _ certificate: SecCertificate, _ commonName: UnsafeMutablePointer<CFString?>
) -> OSStatus {
    guard let parsed = LibcryptoCertificate(der: certificate.der) else { return errSecParam }
    commonName.pointee = parsed.subjectValues(13).last.map { $0 as NSString }
    return errSecSuccess
}

/// The subject's email addresses (emailAddress attributes, then rfc822Name alternative names).
@discardableResult
public func SecCertificateCopyEmailAddresses(
    _ certificate: SecCertificate, _ emailAddresses: UnsafeMutablePointer<CFArray?>
) -> OSStatus {
    guard let parsed = LibcryptoCertificate(der: certificate.der) else { return errSecParam }
    emailAddresses.pointee = parsed.subjectValues(48, sanEmails: true) as NSArray
    return errSecSuccess
}

/// The certificate's public key; `nil` for a key type other than EC P-256/384/521 and RSA.
public func SecCertificateCopyKey(_ certificate: SecCertificate) -> SecKey? {
    LibcryptoCertificate(der: certificate.der)?.publicKey
}

/// The serial number's bytes (the DER INTEGER's content, a leading zero included).
public func SecCertificateCopySerialNumberData(
    _ certificate: SecCertificate, _ errorOut: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    guard let serial = LibcryptoCertificate(der: certificate.der)?.serial else {
        return secKeyFail(errorOut, errSecDecode, "the certificate's serial number cannot be read")
    }
    return serial as NSData
}

/// The DER SEQUENCE of the normalized issuer name (what `kSecAttrIssuer` holds the content of).
public func SecCertificateCopyNormalizedIssuerSequence(_ certificate: SecCertificate) -> CFData? {
    LibcryptoCertificate(der: certificate.der)?.name(issuer: true, normalized: true).map { derSequence($0) as NSData }
}

/// The DER SEQUENCE of the normalized subject name (what `kSecAttrSubject` holds the content of).
public func SecCertificateCopyNormalizedSubjectSequence(_ certificate: SecCertificate) -> CFData? {
    LibcryptoCertificate(der: certificate.der)?.name(issuer: false, normalized: true).map { derSequence($0) as NSData }
}

/// `content` wrapped in a DER SEQUENCE header.
func derSequence(_ content: Data) -> Data {
    var out = Data([0x30])
    let n = content.count
    if n < 0x80 {
        out.append(UInt8(n))
    } else {
        var bytes: [UInt8] = []
        var rest = n
        while rest > 0 {
            bytes.insert(UInt8(rest & 0xFF), at: 0)
            rest >>= 8
        }
        out.append(0x80 | UInt8(bytes.count))
        out.append(contentsOf: bytes)
    }
    return out + content
}

// MARK: SecIdentity

/// The identity's certificate.
/// - Parameters:
///   - identityRef: The identity.
///   - certificateRef: Receives its certificate.
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecIdentityCopyCertificate(
    _ identityRef: SecIdentity, _ certificateRef: UnsafeMutablePointer<SecCertificate?>
) -> OSStatus {
    certificateRef.pointee = identityRef.certificate
    return errSecSuccess
}

/// The identity's private key (a key from the keychain asks its access control before use).
@discardableResult
public func SecIdentityCopyPrivateKey(_ identityRef: SecIdentity, _ privateKeyRef: UnsafeMutablePointer<SecKey?>) -> OSStatus {
    privateKeyRef.pointee = identityRef.privateKey
    return errSecSuccess
}

/// The identity of `certificateRef` and the private key in the keychain whose application
/// label is the certificate's public key hash.
/// - Parameters:
///   - keychainOrArray: Ignored (macOS keychain lists); the current keychain is searched.
///   - certificateRef: The certificate.
///   - identityRef: Receives the identity.
/// - Returns: `errSecSuccess`, or `errSecItemNotFound` when the keychain has no such key.
@discardableResult
public func SecIdentityCreateWithCertificate(
    _ keychainOrArray: CFTypeRef?, _ certificateRef: SecCertificate, _ identityRef: UnsafeMutablePointer<SecIdentity?>
) -> OSStatus {
    guard let hash = certificateRef.publicKeyHash else { return errSecParam }
    do {
        let client = try SecItemSystem.currentClient()
        let found = try client.copyMatchingItems([
            SecConstant.kSecClass: SecConstant.kSecClassKey, SecConstant.kSecAttrKeyClass: SecConstant.kSecAttrKeyClassPrivate,
            SecConstant.kSecAttrApplicationLabel: hash, SecConstant.kSecReturnRef: true,
        ])
        guard let key = found as? SecKey else { return errSecItemNotFound }
        identityRef.pointee = SecIdentity(certificate: certificateRef, privateKey: key)
        return errSecSuccess
    } catch {
        return error.status
    }
}

// MARK: PKCS #12

/// `kSecImportExportPassphrase`: the PKCS #12 file's passphrase (a String).
nonisolated(unsafe) public let kSecImportExportPassphrase: CFString = "passphrase"
/// `kSecImportItemIdentity`: in each `SecPKCS12Import` result, the `SecIdentity`.
nonisolated(unsafe) public let kSecImportItemIdentity: CFString = "identity"
/// `kSecImportItemCertChain`: the certificates, the identity's own first.
nonisolated(unsafe) public let kSecImportItemCertChain: CFString = "chain"
/// `kSecImportItemLabel`: the certificate's friendlyName, when the file has one.
nonisolated(unsafe) public let kSecImportItemLabel: CFString = "label"
/// `kSecImportItemKeyID`: the certificate's localKeyID, when the file has one.
nonisolated(unsafe) public let kSecImportItemKeyID: CFString = "keyid"
/// `kSecImportItemTrust`: not returned on Linux (no SecTrust).
nonisolated(unsafe) public let kSecImportItemTrust: CFString = "trust"

/// Reads a PKCS #12 file (`openssl pkcs12 -export`, modern or `-legacy` ciphers) and returns
/// its identity, as Apple's: one dictionary with `kSecImportItemIdentity`,
/// `kSecImportItemCertChain`, and when present `kSecImportItemLabel` and `kSecImportItemKeyID`.
/// Nothing is stored in the keychain (add the identity with `SecItemAdd` of `kSecValueRef`).
///
/// - Parameters:
///   - pkcs12_data: The PKCS #12 file's bytes (DER).
///   - options: `kSecImportExportPassphrase`.
///   - items: Receives an array of one dictionary.
/// - Returns: `errSecSuccess`; `errSecAuthFailed` for a wrong passphrase; `errSecDecode` for
///   data that is not PKCS #12; `errSecUnsupportedFormat` for a key this keychain cannot hold.
public func SecPKCS12Import(_ pkcs12_data: CFData, _ options: CFDictionary, _ items: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    let passphrase: String?
    do {
        passphrase = try options._secItemDictionary()[kSecImportExportPassphrase as String] as? String
    } catch {
        return error.status
    }
    let data = pkcs12_data as Data
    var status: Int32 = -1
    let parsed = data.withUnsafeBytes { bytes -> OpaquePointer? in
        guard let base = bytes.baseAddress, bytes.count > 0 else { return nil }
        return csk_pkcs12_parse(base.assumingMemoryBound(to: UInt8.self), bytes.count, passphrase, &status)
    }
    guard let parsed else { return status == 1 ? errSecAuthFailed : errSecDecode }
    defer { csk_pkcs12_free(parsed) }
    guard let certificateHandle = csk_pkcs12_cert(parsed) else { return errSecDecode }
    let leaf = LibcryptoCertificate(borrowing: certificateHandle)
    guard let certificate = leaf.secCertificate else { return errSecDecode }
    var chain = [certificate]
    for index in 0..<csk_pkcs12_chain_count(parsed) {
        guard let handle = csk_pkcs12_chain_cert(parsed, index),
            let next = LibcryptoCertificate(borrowing: handle).secCertificate
        else { return errSecDecode }
        chain.append(next)
    }
    var item: [String: Any] = [kSecImportItemCertChain as String: chain as NSArray]
    if let label = leaf.alias { item[kSecImportItemLabel as String] = label }
    if let keyID = leaf.localKeyID { item[kSecImportItemKeyID as String] = keyID }
    if let keyHandle = csk_pkcs12_key(parsed) {
        let kindCode = csk_key_type(keyHandle)
        guard let kind = SecKey.Kind(rawValue: Int64(kindCode)), let exported = exportPrivate(keyHandle),
            let key = LibcryptoKey.load(kind, isPrivate: true, exported)?.secKey(kind)
        else { return errSecUnsupportedFormat }
        item[kSecImportItemIdentity as String] = SecIdentity(certificate: certificate, privateKey: key)
    }
    items.pointee = [item] as NSArray
    return errSecSuccess
}

/// Apple's external representation of a borrowed libcrypto private key.
private func exportPrivate(_ handle: OpaquePointer) -> Data? {
    Libcrypto.take { csk_export(handle, 1, $0, $1) }
}
