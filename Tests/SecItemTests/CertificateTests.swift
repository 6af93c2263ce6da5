// Issue 25: SecCertificate, SecIdentity and SecPKCS12Import over libcrypto, with
// certificates and PKCS #12 files made by the `openssl` command line, and a mutual-TLS
// client identity from the keychain that connects to `openssl s_server -Verify`.
import CSecItemTLSProbe
import Foundation
import SecItem
import SecItemCore
import SecItemMemory
import SecItemTestSupport
import Testing

/// A small PKI made with the openssl command: a CA, a client certificate (EC or RSA) it
/// signed, a server certificate for localhost, and PKCS #12 files of the client.
final class TestPKI {
    let dir: Scratch
    let passphrase = "correct horse"

    init(clientKey: String = "ec") throws {
        dir = try Scratch()
        let ext = try dir.write("client.ext", Data("subjectAltName=email:alice@example.com,email:a2@example.com\nsubjectKeyIdentifier=hash\n".utf8))
        let serverExt = try dir.write("server.ext", Data("subjectAltName=DNS:localhost\n".utf8))
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", dir.path("ca.key"),
                     "-out", dir.path("ca.pem"), "-subj", "/O=Test Org/CN=Test  CA", "-days", "2"])
        let keyArgs = clientKey == "ec" ? ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384"] : ["-newkey", "rsa:2048"]
        try openssl(["req", "-new"] + keyArgs + ["-nodes", "-keyout", dir.path("client.key"), "-out", dir.path("client.csr"),
                     "-subj", "/O=Example/OU=Devices/CN=alice device/emailAddress=alice@example.com"])
        try openssl(["x509", "-req", "-in", dir.path("client.csr"), "-CA", dir.path("ca.pem"), "-CAkey", dir.path("ca.key"),
                     "-set_serial", "0x00C0FFEE", "-days", "2", "-extfile", ext, "-out", dir.path("client.pem")])
        try openssl(["x509", "-in", dir.path("client.pem"), "-outform", "DER", "-out", dir.path("client.der")])
        try openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", dir.path("server.key"),
                     "-out", dir.path("server.csr"), "-subj", "/CN=localhost"])
        try openssl(["x509", "-req", "-in", dir.path("server.csr"), "-CA", dir.path("ca.pem"), "-CAkey", dir.path("ca.key"),
                     "-set_serial", "7", "-days", "2", "-extfile", serverExt, "-out", dir.path("server.pem")])
        try openssl(["pkcs12", "-export", "-inkey", dir.path("client.key"), "-in", dir.path("client.pem"), "-certfile", dir.path("ca.pem"),
                     "-name", "alice's device", "-passout", "pass:\(passphrase)", "-out", dir.path("modern.p12")])
        try openssl(["pkcs12", "-export", "-legacy", "-inkey", dir.path("client.key"), "-in", dir.path("client.pem"),
                     "-passout", "pass:\(passphrase)", "-out", dir.path("legacy.p12")])
    }

    var clientDER: Data { get throws { try dir.read("client.der") } }
}

/// A NUL-terminated C buffer as text.
func text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

@Suite("SecCertificate, SecIdentity, PKCS #12")
struct CertificateTests {
    @Test("a certificate made by openssl: data, summary, common name, emails, serial, key, normalized names")
    func certificateFields() throws {
        let pki = try TestPKI()
        let der = try pki.clientDER
        let certificate = try #require(SecCertificateCreateWithData(nil, der as CFData))
        #expect(SecCertificateCopyData(certificate) as Data == der)
        #expect(SecCertificateCopySubjectSummary(certificate) as String? == "alice device")
        var name: CFString?
        #expect(SecCertificateCopyCommonName(certificate, &name) == errSecSuccess)
        #expect(name as String? == "alice device")
        var emails: CFArray?
        #expect(SecCertificateCopyEmailAddresses(certificate, &emails) == errSecSuccess)
        #expect(emails as? [String] == ["alice@example.com", "alice@example.com", "a2@example.com"])
        #expect(try check { SecCertificateCopySerialNumberData(certificate, $0) } as Data == Data([0x00, 0xC0, 0xFF, 0xEE]))
        // The public key is the client key's.
        let key = try #require(SecCertificateCopyKey(certificate))
        try openssl(["ec", "-in", pki.dir.path("client.key"), "-pubout", "-outform", "DER", "-out", pki.dir.path("pub.der")])
        #expect(try check { SecKeyCopyExternalRepresentation(key, $0) } as Data == Data(try pki.dir.read("pub.der").suffix(97)))
        // Normalized issuer: a SEQUENCE whose strings are upper-cased UTF8Strings, spaces collapsed.
        let issuer = try #require(SecCertificateCopyNormalizedIssuerSequence(certificate) as Data?)
        #expect(issuer.first == 0x30)
        #expect(issuer.range(of: Data("TEST CA".utf8)) != nil && issuer.range(of: Data("Test  CA".utf8)) == nil)
        #expect(issuer.range(of: Data([0x0C, 7]) + Data("TEST CA".utf8)) != nil, "a UTF8String")
        let subject = try #require(SecCertificateCopyNormalizedSubjectSequence(certificate) as Data?)
        #expect(subject.range(of: Data("ALICE DEVICE".utf8)) != nil)
        // The item attributes Apple derives: pkhh = SHA-1 of the public key = the key's application label.
        let keyAttributes = try #require(SecKeyCopyAttributes(key) as? [String: Any])
        let client = SecItemClient(backend: MemoryBackend(), accessGroups: AccessGroups(["app"]))
        let attributes = try #require(try client.addItem([kSecValueRef as String: certificate, kSecReturnAttributes as String: true]) as? [String: Any])
        #expect(attributes[kSecAttrPublicKeyHash as String] as? Data == keyAttributes[kSecAttrApplicationLabel as String] as? Data)
        #expect(attributes[kSecAttrSerialNumber as String] as? Data == Data([0x00, 0xC0, 0xFF, 0xEE]))
        #expect(attributes[kSecAttrLabel as String] as? String == "alice device")
        #expect(attributes[kSecAttrCertificateType as String] as? Int == 3)
        #expect((attributes[kSecAttrSubjectKeyID as String] as? Data)?.count == 20)
        #expect(attributes[kSecAttrIssuer as String] as? Data == issuer.dropFirst(2))
    }

    @Test("garbage, PEM, trailing bytes and an empty buffer are no certificate")
    func garbage() throws {
        let pki = try TestPKI()
        let der = try pki.clientDER
        #expect(SecCertificateCreateWithData(nil, Data("garbage".utf8) as CFData) == nil)
        #expect(SecCertificateCreateWithData(nil, Data() as CFData) == nil)
        #expect(SecCertificateCreateWithData(nil, try pki.dir.read("client.pem") as CFData) == nil)
        #expect(SecCertificateCreateWithData(nil, der + Data([0]) as CFData) == nil)
        #expect(SecCertificateCreateWithData(nil, der.dropLast() as CFData) == nil)
    }

    @Test("SecPKCS12Import of modern and legacy openssl files; wrong passphrase is errSecAuthFailed", arguments: ["modern.p12", "legacy.p12"])
    func pkcs12(file: String) throws {
        let pki = try TestPKI(clientKey: file == "modern.p12" ? "ec" : "rsa")
        let data = try pki.dir.read(file)
        var items: CFArray?
        #expect(SecPKCS12Import(data as CFData, [kSecImportExportPassphrase as String: "wrong"] as CFDictionary, &items) == errSecAuthFailed)
        #expect(items == nil)
        #expect(SecPKCS12Import(Data("not pkcs12".utf8) as CFData, [kSecImportExportPassphrase as String: pki.passphrase] as CFDictionary, &items) == errSecDecode)
        #expect(SecPKCS12Import(data as CFData, [kSecImportExportPassphrase as String: pki.passphrase] as CFDictionary, &items) == errSecSuccess)
        let first = try #require((items as? [[String: Any]])?.first)
        let identity = first[kSecImportItemIdentity as String] as! SecIdentity
        var certificate: SecCertificate?
        var key: SecKey?
        #expect(SecIdentityCopyCertificate(identity, &certificate) == errSecSuccess)
        #expect(SecIdentityCopyPrivateKey(identity, &key) == errSecSuccess)
        #expect(SecCertificateCopyData(certificate!) as Data == (try pki.clientDER))
        // The key is the certificate's: sign with one, verify with the other.
        let algorithm: SecKeyAlgorithm = file == "modern.p12" ? .ecdsaSignatureMessageX962SHA256 : .rsaSignatureMessagePSSSHA256
        let signature = try check { SecKeyCreateSignature(key!, algorithm, Data("m".utf8) as CFData, $0) }
        #expect(SecKeyVerifySignature(SecCertificateCopyKey(certificate!)!, algorithm, Data("m".utf8) as CFData, signature, nil))
        let chain = first[kSecImportItemCertChain as String] as? [SecCertificate] ?? []
        if file == "modern.p12" {
            #expect(chain.count == 2)
            #expect(first[kSecImportItemLabel as String] as? String == "alice's device")
            #expect((first[kSecImportItemKeyID as String] as? Data)?.isEmpty == false)
            #expect(chain.last.map { SecCertificateCopySubjectSummary($0) as String? } == "Test  CA")
        } else {
            #expect(chain.count == 1)
        }
    }

    @Test("an identity imported from PKCS #12, stored, found as kSecClassIdentity, rebuilt from its certificate")
    func identityInKeychain() throws {
        let pki = try TestPKI()
        var items: CFArray?
        #expect(SecPKCS12Import(try pki.dir.read("modern.p12") as CFData, [kSecImportExportPassphrase: pki.passphrase] as CFDictionary, &items) == errSecSuccess)
        let identity = (items as! [[String: Any]])[0][kSecImportItemIdentity as String] as! SecIdentity
        let client = SecItemClient(backend: MemoryBackend(), accessGroups: AccessGroups(["app"]))
        try SecItemClient.withClient(client) {
            #expect(SecItemAdd([kSecValueRef: identity, kSecAttrLabel: "mTLS"] as CFDictionary, nil) == errSecSuccess)
            var found: CFTypeRef?
            #expect(SecItemCopyMatching([kSecClass: kSecClassIdentity, kSecAttrLabel: "mTLS", kSecReturnRef: true] as CFDictionary, &found) == errSecSuccess)
            #expect(found as? SecIdentity == identity)
            var certificate: SecCertificate?
            SecIdentityCopyCertificate(identity, &certificate)
            var rebuilt: SecIdentity?
            #expect(SecIdentityCreateWithCertificate(nil, certificate!, &rebuilt) == errSecSuccess)
            #expect(rebuilt == identity)
            // A certificate whose key is not stored: errSecItemNotFound.
            let caDER = try openssl(["x509", "-in", pki.dir.path("ca.pem"), "-outform", "DER"]).stdoutData
            let ca = try #require(SecCertificateCreateWithData(nil, caDER as CFData))
            #expect(SecIdentityCreateWithCertificate(nil, ca, &rebuilt) == errSecItemNotFound)
        }
    }

    @Test("a mutual-TLS client identity from the keychain connects to openssl s_server -Verify on loopback")
    func mutualTLS() async throws {
        let pki = try TestPKI()
        // Import, store, and take the identity back out of the keychain by label.
        var items: CFArray?
        #expect(SecPKCS12Import(try pki.dir.read("modern.p12") as CFData, [kSecImportExportPassphrase: pki.passphrase] as CFDictionary, &items) == errSecSuccess)
        let imported = (items as! [[String: Any]])[0][kSecImportItemIdentity as String] as! SecIdentity
        let client = SecItemClient(backend: MemoryBackend(), accessGroups: AccessGroups(["app"]))
        let identity: SecIdentity = try SecItemClient.withClient(client) {
            #expect(SecItemAdd([kSecValueRef: imported, kSecAttrLabel: "client"] as CFDictionary, nil) == errSecSuccess)
            var found: CFTypeRef?
            #expect(SecItemCopyMatching([kSecClass: kSecClassIdentity, kSecAttrLabel: "client", kSecReturnRef: true] as CFDictionary, &found) == errSecSuccess)
            return try #require(found as? SecIdentity)
        }
        var certificate: SecCertificate?
        var key: SecKey?
        SecIdentityCopyCertificate(identity, &certificate)
        SecIdentityCopyPrivateKey(identity, &key)
        let certDER = SecCertificateCopyData(certificate!) as Data
        let keyData = try check { SecKeyCopyExternalRepresentation(key!, $0) } as Data

        let server = try ChildProcess(
            try Executables.which("openssl"),
            ["s_server", "-accept", "127.0.0.1:0", "-cert", pki.dir.path("server.pem"), "-key", pki.dir.path("server.key"),
             "-CAfile", pki.dir.path("ca.pem"), "-Verify", "1", "-verify_return_error", "-naccept", "1", "-rev"])
        defer { server.signal(SIGTERM) }
        var port = 0
        for index in 0..<5 {
            let line = try server.line(index, timeout: .seconds(30))
            if line.hasPrefix("ACCEPT"), let p = line.split(separator: ":").last.flatMap({ Int($0) }) {
                port = p
                break
            }
        }
        #expect(port > 0)
        var reply = [CChar](repeating: 0, count: 256)
        var message = [CChar](repeating: 0, count: 512)
        let status = certDER.withUnsafeBytes { cert in
            keyData.withUnsafeBytes { k in
                secitem_tls_probe(
                    Int32(port), cert.baseAddress?.assumingMemoryBound(to: UInt8.self), cert.count, 73,
                    k.baseAddress?.assumingMemoryBound(to: UInt8.self), k.count, pki.dir.path("ca.pem"), "hello keychain\n",
                    &reply, reply.count, &message, message.count)
            }
        }
        #expect(status == 0, "\(text(message))")
        #expect(text(reply).hasPrefix("niahcyek olleh"))

        // Without a client certificate the same server refuses: the probe fails with another key.
        let server2 = try ChildProcess(
            try Executables.which("openssl"),
            ["s_server", "-accept", "127.0.0.1:0", "-cert", pki.dir.path("server.pem"), "-key", pki.dir.path("server.key"),
             "-CAfile", pki.dir.path("ca.pem"), "-Verify", "1", "-verify_return_error", "-naccept", "1", "-rev"])
        defer { server2.signal(SIGTERM) }
        var port2 = 0
        for index in 0..<5 {
            let line = try server2.line(index, timeout: .seconds(30))
            if line.hasPrefix("ACCEPT"), let p = line.split(separator: ":").last.flatMap({ Int($0) }) {
                port2 = p
                break
            }
        }
        // A self-made certificate the CA never signed, with its own key.
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384", "-nodes", "-keyout", pki.dir.path("rogue.key"),
                     "-out", pki.dir.path("rogue.pem"), "-subj", "/CN=rogue", "-days", "1"])
        let rogueDER = try openssl(["x509", "-in", pki.dir.path("rogue.pem"), "-outform", "DER"]).stdoutData
        try openssl(["ec", "-in", pki.dir.path("rogue.key"), "-outform", "DER", "-out", pki.dir.path("rogue.der")])
        try openssl(["ec", "-in", pki.dir.path("rogue.key"), "-pubout", "-outform", "DER", "-out", pki.dir.path("rogue.pub")])
        let rogueKey = Data(try pki.dir.read("rogue.pub").suffix(97)) + Data(try pki.dir.read("rogue.der").dropFirst(8).prefix(48))
        let refused = rogueDER.withUnsafeBytes { cert in
            rogueKey.withUnsafeBytes { k in
                secitem_tls_probe(
                    Int32(port2), cert.baseAddress?.assumingMemoryBound(to: UInt8.self), cert.count, 73,
                    k.baseAddress?.assumingMemoryBound(to: UInt8.self), k.count, pki.dir.path("ca.pem"), "hello\n",
                    &reply, reply.count, &message, message.count)
            }
        }
        #expect(refused != 0, "a client certificate the CA did not sign is refused")
    }
}
