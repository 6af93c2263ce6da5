// Reading and writing key and certificate files (PEM, DER, PKCS #12) for the command line
// (`secitem import`, `export -t`, `find-certificate -p`). Package API: the Apple surface is
// SecCertificateCreateWithData, SecKeyCreateWithData and SecPKCS12Import.
internal import CSecItemKeys
package import Foundation
import SecItemCore

/// One object a key or certificate file holds.
package enum KeyFileObject {
    case certificate(SecCertificate)
    case key(SecKey)
    case identity(SecIdentity)

    /// The object for `kSecValueRef`.
    package var reference: AnyObject {
        switch self {
        case .certificate(let c): return c
        case .key(let k): return k
        case .identity(let i): return i
        }
    }
}

package enum KeyFiles {
    /// The objects of a PEM file (certificates, an unencrypted private key; a key with its
    /// certificate becomes an identity), a DER certificate or key, or a PKCS #12 file.
    /// - Parameter passphrase: Asked only for a PKCS #12 file.
    /// - Throws: errSecUnknownFormat for anything else; SecPKCS12Import's statuses.
    package static func read(_ data: Data, passphrase: () throws(SecItemError) -> String) throws(SecItemError) -> [KeyFileObject] {
        if data.range(of: Data("-----BEGIN ".utf8)) != nil { return try readPEM(data) }
        if let certificate = SecCertificateCreateWithData(nil, data as NSData) { return [.certificate(certificate)] }
        if let key = derKey(data) { return [.key(key)] }
        var items: CFArray?
        let status = SecPKCS12Import(data as NSData, [kSecImportExportPassphrase as String: try passphrase()], &items)
        guard status == errSecSuccess, let first = (items as? [[String: Any]])?.first else {
            if status == errSecDecode {
                throw SecItemError(errSecUnknownFormat, "not a PEM, DER certificate, DER key or PKCS #12 file")
            }
            throw SecItemError(status, status == errSecAuthFailed ? "the PKCS #12 passphrase is wrong" : nil)
        }
        var out: [KeyFileObject] = []
        if let identity = first[kSecImportItemIdentity as String] as? SecIdentity { out.append(.identity(identity)) }
        let chain = first[kSecImportItemCertChain as String] as? [SecCertificate] ?? []
        for certificate in chain.dropFirst(out.isEmpty ? 0 : 1) { out.append(.certificate(certificate)) }
        return out
    }

    private static func readPEM(_ data: Data) throws(SecItemError) -> [KeyFileObject] {
        var certificates: [SecCertificate] = []
        let packed = data.withUnsafeBytes { bytes in
            Libcrypto.take { csk_pem_certificates(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, $0, $1) >= 0 ? 0 : -1 }
        }
        var rest = packed ?? Data()
        while rest.count >= 4 {
            let n = rest.prefix(4).reduce(0) { $0 << 8 | Int($1) }
            guard rest.count >= 4 + n, let certificate = SecCertificateCreateWithData(nil, Data(rest.dropFirst(4).prefix(n)) as NSData) else { break }
            certificates.append(certificate)
            rest = Data(rest.dropFirst(4 + n))
        }
        let handle = data.withUnsafeBytes { bytes in
            csk_pem_private_key(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        }
        var key: SecKey?
        if let handle {
            defer { csk_key_free(handle) }
            key = secKey(handle, isPrivate: true)
        }
        guard !certificates.isEmpty || key != nil else {
            throw SecItemError(errSecUnknownFormat, "the PEM file has no certificate and no unencrypted private key this keychain can hold")
        }
        var out: [KeyFileObject] = []
        var rest2 = certificates
        if let key {
            if let index = certificates.firstIndex(where: { $0.publicKeyHash == key.applicationLabel }) {
                out.append(.identity(SecIdentity(certificate: certificates[index], privateKey: key)))
                rest2.remove(at: index)
            } else {
                out.append(.key(key))
            }
        }
        return out + rest2.map { .certificate($0) }
    }

    private static func derKey(_ data: Data) -> SecKey? {
        var isPrivate: Int32 = 0
        let handle = data.withUnsafeBytes { bytes in
            csk_der_key(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &isPrivate)
        }
        guard let handle else { return nil }
        defer { csk_key_free(handle) }
        return secKey(handle, isPrivate: isPrivate == 1)
    }

    private static func secKey(_ handle: OpaquePointer, isPrivate: Bool) -> SecKey? {
        guard let kind = SecKey.Kind(rawValue: Int64(csk_key_type(handle))),
            let data = Libcrypto.take({ csk_export(handle, isPrivate ? 1 : 0, $0, $1) })
        else { return nil }
        return LibcryptoKey.load(kind, isPrivate: isPrivate, data)?.secKey(kind)
    }

    /// The SubjectPublicKeyInfo DER of a key's public half.
    package static func subjectPublicKeyInfo(_ key: SecKey) -> Data? {
        guard let publicKey = SecKeyCopyPublicKey(key), let loaded = LibcryptoKey.of(publicKey) else { return nil }
        return Libcrypto.take { csk_export_spki(loaded.handle, $0, $1) }
    }

    /// `der` as a PEM block with `label` ("CERTIFICATE", "PUBLIC KEY").
    package static func pem(_ label: String, _ der: Data) -> String {
        let base64 = der.base64EncodedString()
        var lines: [Substring] = []
        var index = base64.startIndex
        while index < base64.endIndex {
            let end = base64.index(index, offsetBy: 64, limitedBy: base64.endIndex) ?? base64.endIndex
            lines.append(base64[index..<end])
            index = end
        }
        return "-----BEGIN \(label)-----\n" + lines.joined(separator: "\n") + "\n-----END \(label)-----\n"
    }

    /// SHA-1 of `data` (certificate fingerprints, as `security find-certificate -Z` prints them).
    package static func sha1(_ data: Data) -> Data? { Libcrypto.digest(1, data) }

    /// The subject summary of a certificate.
    package static func summary(_ certificate: SecCertificate) -> String {
        (SecCertificateCopySubjectSummary(certificate) as String?) ?? ""
    }

    /// The email addresses of a certificate.
    package static func emails(_ certificate: SecCertificate) -> [String] {
        var emails: CFArray?
        SecCertificateCopyEmailAddresses(certificate, &emails)
        return emails as? [String] ?? []
    }
}
