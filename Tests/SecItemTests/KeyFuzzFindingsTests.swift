// What the fuzz targets of the Apple surface's key parsers found (docs/fuzzing.md,
// "Findings"), each with the input that showed it (kept in the target's corpus).
import Foundation
import SecItem
import Testing

@Suite("Fuzz findings: keys and certificates")
struct KeyFuzzFindingsTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus")

    /// A corpus input of the pkcs12 target: a passphrase length byte, the passphrase, the file.
    static func pkcs12Input(_ name: String) throws -> (passphrase: String, file: Data) {
        let bytes = try Data(contentsOf: corpus.appendingPathComponent("pkcs12/\(name)"))
        let length = Int(bytes[0])
        return (String(decoding: bytes[1..<1 + length], as: UTF8.self), bytes.subdata(in: 1 + length..<bytes.count))
    }

    /// pkcs12: a file's key derivations run as many iterations as the file says. A MAC
    /// with 2,000,000,000 iterations (the rest of a real file unchanged), or a shrouded
    /// key bag whose PBKDF2 asks for as many (no MAC, empty passphrase, so libcrypto goes
    /// straight to the key), kept SecPKCS12Import busy for minutes (the fuzzer's 25 s
    /// timeout; about 300 s of CPU for the MAC alone). Now refused at once: errSecDecode.
    @Test("a PKCS #12 file asking for 2^31 iterations is refused at once, not derived", arguments: ["mac-iterations-2e9", "key-bag-iterations-2e9"])
    func pkcs12IterationBound(_ name: String) throws {
        let input = try Self.pkcs12Input(name)
        var items: CFArray?
        let start = ContinuousClock.now
        let status = SecPKCS12Import(input.file as CFData, [kSecImportExportPassphrase: input.passphrase] as CFDictionary, &items)
        let elapsed = ContinuousClock.now - start
        #expect(status == errSecDecode, "\(name): \(status)")
        #expect(items == nil)
        #expect(elapsed < .seconds(3), "\(name): SecPKCS12Import took \(elapsed)")
    }

    @Test("the same files with their counts as openssl writes them still import")
    func pkcs12WithinTheBound() throws {
        for name in ["ec-leaf-chain", "rsa-legacy", "plain-bags"] {
            let input = try Self.pkcs12Input(name)
            var items: CFArray?
            let status = SecPKCS12Import(input.file as CFData, [kSecImportExportPassphrase: input.passphrase] as CFDictionary, &items)
            #expect(status == errSecSuccess, "\(name): \(status)")
            #expect((items as? [[String: Any]])?.first?[kSecImportItemIdentity as String] != nil, "\(name)")
        }
    }

    /// key: an RSA private key (PKCS #1) whose d does not belong to its n and e (one
    /// byte changed) loaded: libcrypto's private check looks at d's range only. It signed
    /// (libcrypto's CRT result failed its own check, and it fell back to d), and its own
    /// public key did not verify the signature. Now refused: errSecParam.
    @Test("an RSA private key whose d does not belong to n and e is refused; the key it came from loads")
    func inconsistentRSAPrivateKey() throws {
        let bytes = try Data(contentsOf: Self.corpus.appendingPathComponent("key/rsa-private-inconsistent-d"))
        let attributes = [kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeyClass: kSecAttrKeyClassPrivate] as CFDictionary
        var error: Unmanaged<CFError>?
        let key = SecKeyCreateWithData(bytes.dropFirst() as CFData, attributes, &error)
        #expect(key == nil, "the inconsistent key loaded")
        if let key, let publicKey = SecKeyCopyPublicKey(key) {
            let message = Data("m".utf8) as CFData
            let signature = SecKeyCreateSignature(key, .rsaSignatureMessagePKCS1v15SHA256, message, nil)
            #expect(signature.map { SecKeyVerifySignature(publicKey, .rsaSignatureMessagePKCS1v15SHA256, message, $0, nil) } == true,
                    "its signature does not verify with its own public key")
        }
        #expect((error?.takeRetainedValue()).map { CFErrorGetCode($0) } == Int(errSecParam))
        let original = try Data(contentsOf: Self.corpus.appendingPathComponent("key/rsa-1024-private"))
        #expect(SecKeyCreateWithData(original.dropFirst() as CFData, attributes, nil) != nil)
    }

    /// certificate: a certificate whose signature BIT STRING says 2 unused bits (the
    /// fuzzer's change to a real one) parsed, and SecCertificateCopyData gave libcrypto's
    /// re-encoding, not the bytes it was made from (Apple's gives those). Now the
    /// certificate keeps its bytes.
    @Test("SecCertificateCopyData gives exactly the bytes a certificate was made from")
    func certificateKeepsItsBytes() throws {
        for name in ["signature-unused-bits", "rsa-1024.der", "ec-p384-leaf-san.der"] {
            let bytes = try Data(contentsOf: Self.corpus.appendingPathComponent("certificate/\(name)"))
            let certificate = try #require(SecCertificateCreateWithData(nil, bytes as CFData), "\(name)")
            #expect(SecCertificateCopyData(certificate) as Data == bytes, "\(name)")
            #expect(SecCertificateCreateWithData(nil, SecCertificateCopyData(certificate)) != nil, "\(name)")
        }
    }
}
