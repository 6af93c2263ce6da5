import Foundation
import SecItemCore

/// Certificates and identities as keychain items (issue 25). The kit depends on the core
/// only, so its certificates carry the attributes the `SecItem` module derives from DER
/// (issuer, serial, type, public key hash) as fixed values; the DER is opaque to the store.
enum CertificateCases {
    static func certificate(serial: UInt8, issuer: String = "CA", publicKeyHash: Data, label: String) -> SecCertificate {
        SecCertificate(
            der: Data([0x30, 0x03, 0x02, 0x01, serial]) + Data(label.utf8),
            derivedAttributes: [
                SecConstant.kSecAttrCertificateType: .number(3), SecConstant.kSecAttrCertificateEncoding: .number(3),
                SecConstant.kSecAttrIssuer: .data(Data(issuer.utf8)), SecConstant.kSecAttrSubject: .data(Data(label.utf8)),
                SecConstant.kSecAttrSerialNumber: .data(Data([serial])), SecConstant.kSecAttrPublicKeyHash: .data(publicKeyHash),
                SecConstant.kSecAttrLabel: .string(label),
            ])
    }

    static let client = certificate(serial: 1, publicKeyHash: KeyCases.first.applicationLabel, label: "client")
    static let other = certificate(serial: 2, publicKeyHash: KeyCases.second.applicationLabel, label: "other")

    static let all: [ConformanceCase] = [
        ConformanceCase("certificates: kSecValueRef add, derived attributes, primary key issuer + serial + type") { c in
            try c.expectStatus(c.add([kSecClass as String: kSecClassCertificate, kSecValueRef as String: client]), errSecSuccess, "add")
            try c.expectRejected(errSecDuplicateItem, "the same certificate, another label") {
                c.add([kSecValueRef as String: client, kSecAttrLabel as String: "renamed"])
            }
            // Same issuer and serial, other DER: still the same primary key.
            let twin = certificate(serial: 1, publicKeyHash: Data([9]), label: "twin")
            try c.expectRejected(errSecDuplicateItem, "same issuer and serial") {
                c.add([kSecClass as String: kSecClassCertificate, kSecValueRef as String: twin])
            }
            try c.expectStatus(c.add([kSecClass as String: kSecClassCertificate, kSecValueRef as String: other]), errSecSuccess, "other serial")
            let attributes = try c.attributes([kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: "client"])
            try c.expect(attributes[kSecAttrSerialNumber as String] as? Data == Data([1]), "serial number")
            try c.expect(attributes[kSecAttrIssuer as String] as? Data == Data("CA".utf8), "issuer")
            try c.expect(attributes[kSecAttrCertificateType as String] as? Int == 3, "certificate type")
            let (status, found) = c.copy([
                kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: "client", kSecReturnRef as String: true,
            ])
            try c.expectStatus(status, errSecSuccess, "find by label")
            try c.expect(found as? SecCertificate == client, "kSecReturnRef gives the SecCertificate")
            let (s2, data) = c.copy([kSecValueRef as String: other, kSecReturnData as String: true])
            try c.expectStatus(s2, errSecSuccess, "find by kSecValueRef")
            try c.expect(data as? Data == other.der, "kSecReturnData is the DER")
        },
        ConformanceCase("identities: a certificate pairs with the private key of its public key hash") { c in
            try c.expectStatus(c.add([kSecValueRef as String: client]), errSecSuccess, "certificate")
            try c.expectStatus(c.copy([kSecClass as String: kSecClassIdentity]).0, errSecItemNotFound, "no key yet: no identity")
            try c.expectStatus(KeyCases.addKey(c, KeyCases.first), errSecSuccess, "its key")
            try c.expectStatus(KeyCases.addKey(c, KeyCases.second), errSecSuccess, "a key without certificate")
            let (status, found) = c.copy([
                kSecClass as String: kSecClassIdentity, kSecReturnRef as String: true, kSecMatchLimit as String: kSecMatchLimitAll,
            ])
            try c.expectStatus(status, errSecSuccess, "identities")
            let identities = found as? [SecIdentity] ?? []
            try c.expect(identities.count == 1, "one identity, not \(identities.count)")
            try c.expect(identities.first == SecIdentity(certificate: client, privateKey: KeyCases.first), "the pair")
            let attributes = try c.attributes([kSecClass as String: kSecClassIdentity, kSecAttrLabel as String: "client"])
            try c.expect(attributes[kSecAttrSerialNumber as String] as? Data == Data([1]), "the certificate's attributes")
            try c.expect(attributes[kSecAttrApplicationTag as String] as? Data == KeyCases.tag, "and the key's")
            try c.expectStatus(c.copy([kSecClass as String: kSecClassIdentity, kSecAttrLabel as String: "other"]).0, errSecItemNotFound, "by label")
            try c.expectStatus(c.delete([kSecClass as String: kSecClassIdentity]), errSecSuccess, "delete the identity")
            try c.expect(try c.count([kSecClass as String: kSecClassKey]) == 1, "its key went with it, the other stays")
            try c.expectStatus(c.copy([kSecClass as String: kSecClassCertificate]).0, errSecItemNotFound, "its certificate went")
        },
        ConformanceCase("identities: SecItemAdd of a SecIdentity stores its certificate and key; found again as one") { c in
            let identity = SecIdentity(certificate: other, privateKey: KeyCases.second)
            var result: AnyObject?
            try c.expectStatus(
                c.add([kSecValueRef as String: identity, kSecReturnRef as String: true], result: &result), errSecSuccess, "add identity")
            try c.expect(result as? SecIdentity == identity, "returned")
            try c.expect(try c.count([kSecClass as String: kSecClassKey]) == 1, "one key")
            try c.expect(try c.count([kSecClass as String: kSecClassCertificate]) == 1, "one certificate")
            try c.expectRejected(errSecDuplicateItem, "again") { c.add([kSecValueRef as String: identity]) }
            let (status, found) = c.copy([kSecClass as String: kSecClassIdentity, kSecReturnRef as String: true])
            try c.expectStatus(status, errSecSuccess, "find")
            try c.expect(found as? SecIdentity == identity, "the same identity")
        },
    ]
}
