import SecItemSecurity
package import SecItemModel
package import Foundation

/// Apple's `SecCertificate`: an X.509 certificate, held as its DER with the attributes
/// Apple derives from it for a keychain item (`kSecAttrCertificateType`, `…Encoding`,
/// `kSecAttrSubject`, `kSecAttrIssuer` — normalized name contents —, `kSecAttrSerialNumber`,
/// `kSecAttrSubjectKeyID`, `kSecAttrPublicKeyHash`, and the subject summary as `kSecAttrLabel`).
///
/// Made by `SecCertificateCreateWithData`, `SecIdentityCopyCertificate`, `SecPKCS12Import`,
/// or a keychain search with `kSecReturnRef`. Never printed with its bytes.
public final class SecCertificate: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The certificate's DER.
    package let der: Data
    /// What Apple derives from the DER for the certificate's keychain item.
    package let derivedAttributes: [String: AttributeValue]

    package init(der: Data, derivedAttributes: [String: AttributeValue]) {
        self.der = der
        self.derivedAttributes = derivedAttributes
    }

    /// `kSecAttrPublicKeyHash`: SHA-1 of the subject public key, equal to its private
    /// key's `kSecAttrApplicationLabel` (how an identity pairs them).
    package var publicKeyHash: Data? {
        if case .data(let d)? = derivedAttributes[SecConstant.kSecAttrPublicKeyHash] { return d }
        return nil
    }

    /// Certificates are equal when their DER is.
    public static func == (lhs: SecCertificate, rhs: SecCertificate) -> Bool { lhs.der == rhs.der }

    public func hash(into hasher: inout Hasher) { hasher.combine(der) }

    /// The subject summary, as Apple's description shows it.
    public var description: String {
        "<cert(\(derivedAttributes[SecConstant.kSecAttrLabel]?.stringValue ?? "?"))>"
    }

    public var debugDescription: String { description }

    /// The certificate a stored certificate item holds, or `nil` without data.
    package static func fromItem(_ item: StoredItem) -> SecCertificate? {
        guard item.itemClass == .certificate, let der = item.data, !der.isEmpty else { return nil }
        let derived = [
            SecConstant.kSecAttrCertificateType, SecConstant.kSecAttrCertificateEncoding, SecConstant.kSecAttrSubject,
            SecConstant.kSecAttrIssuer, SecConstant.kSecAttrSerialNumber, SecConstant.kSecAttrSubjectKeyID,
            SecConstant.kSecAttrPublicKeyHash, SecConstant.kSecAttrLabel,
        ]
        return SecCertificate(der: der, derivedAttributes: item.attributes.filter { derived.contains($0.key) })
    }
}

/// Apple's `SecIdentity`: a certificate with the private key of its public key.
///
/// Made by `SecIdentityCreateWithCertificate`, `SecPKCS12Import`, or a keychain search of
/// `kSecClassIdentity` with `kSecReturnRef`.
public final class SecIdentity: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    package let certificate: SecCertificate
    package let privateKey: SecKey

    package init(certificate: SecCertificate, privateKey: SecKey) {
        self.certificate = certificate
        self.privateKey = privateKey
    }

    public static func == (lhs: SecIdentity, rhs: SecIdentity) -> Bool {
        lhs.certificate == rhs.certificate && lhs.privateKey == rhs.privateKey
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(certificate) }

    public var description: String { "<SecIdentityRef \(certificate) \(privateKey)>" }

    public var debugDescription: String { description }
}
