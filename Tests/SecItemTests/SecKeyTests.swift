// Issue 25: SecKey over libcrypto, checked against the `openssl` command line both ways.
import Foundation
import SecItem
import SecItemCore
import SecItemMemory
import SecItemTestSupport
import Testing

/// A scratch directory for key and signature files, removed at the end.
final class Scratch {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("seckey-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }
    deinit { try? FileManager.default.removeItem(at: url) }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    func write(_ name: String, _ data: Data) throws -> String {
        try data.write(to: url.appendingPathComponent(name))
        return path(name)
    }
    func read(_ name: String) throws -> Data { try Data(contentsOf: url.appendingPathComponent(name)) }
}

/// Runs `openssl` with `arguments`; fails the test with its stderr when it fails.
@discardableResult
func openssl(_ arguments: [String], stdin: Data? = nil) throws -> ProcessOutput {
    let out = try ChildProcess.run(try Executables.which("openssl"), arguments, stdin: stdin)
    guard out.status == 0 else { throw TestSetupError("openssl \(arguments.first ?? "") failed: \(out.stderr)") }
    return out
}

/// `SecKeyCreate…` with its error turned into a thrown `NSError`.
func check<T>(_ body: (UnsafeMutablePointer<Unmanaged<CFError>?>) throws -> T?) throws -> T {
    var error: Unmanaged<CFError>?
    guard let value = try body(&error) else { throw error!.takeRetainedValue() as any Error }
    return value
}

/// The error a SecKey call set, as `(domain, code)`.
func failure<T>(_ body: (UnsafeMutablePointer<Unmanaged<CFError>?>) throws -> T?) rethrows -> (String, Int)? {
    var error: Unmanaged<CFError>?
    guard try body(&error) == nil, let e = error?.takeRetainedValue() else { return nil }
    return (e.domain, e.code)
}

func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

func fromHex(_ text: String) -> Data {
    var out = Data()
    var chars = Array(text.filter(\.isHexDigit))
    if chars.count % 2 == 1 { chars.insert("0", at: 0) }
    for i in stride(from: 0, to: chars.count, by: 2) { out.append(UInt8(String(chars[i...i + 1]), radix: 16)!) }
    return out
}

/// SubjectPublicKeyInfo DER of an X9.63 EC public key (P-256, P-384), so `openssl` reads it.
func spki(ecPoint: Data) -> Data {
    let prefix = ecPoint.count == 65
        ? "3059301306072a8648ce3d020106082a8648ce3d030107034200" : "3076301006072a8648ce3d020106052b81040022036200"
    return fromHex(prefix) + ecPoint
}

func ecKey(_ bits: Int, _ extra: [String: Any] = [:]) throws -> SecKey {
    var params: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: bits]
    params.merge(extra) { _, new in new }
    return try check { SecKeyCreateRandomKey(params as CFDictionary, $0) }
}

func rsaKey(_ bits: Int = 2048) throws -> SecKey {
    try check { SecKeyCreateRandomKey([kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits: bits] as CFDictionary, $0) }
}

@Suite("SecKey over libcrypto")
struct SecKeyTests {
    @Test("EC keys: sizes, X9.63 external representation, public key, attributes, block size", arguments: [256, 384, 521])
    func ecShapes(bits: Int) throws {
        let key = try ecKey(bits)
        let field = (bits + 7) / 8
        let data = try check { SecKeyCopyExternalRepresentation(key, $0) } as Data
        #expect(data.count == 1 + 3 * field && data.first == 4)
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        let publicData = try check { SecKeyCopyExternalRepresentation(publicKey, $0) } as Data
        #expect(publicData == data.prefix(1 + 2 * field))
        #expect(SecKeyGetBlockSize(key) == field)
        let attributes = try #require(SecKeyCopyAttributes(key) as? [String: Any])
        #expect(attributes[kSecAttrKeySizeInBits as String] as? Int == bits)
        #expect(attributes[kSecAttrKeyType as String] as? Int == 73)
        #expect(attributes[kSecAttrKeyClass as String] as? Int == 1)
        // Apple's application label: SHA-1 of the public key's X9.63 bytes.
        let sha1 = try openssl(["dgst", "-sha1", "-binary"], stdin: publicData).stdoutData
        #expect(attributes[kSecAttrApplicationLabel as String] as? Data == sha1)
        // Round trip through SecKeyCreateWithData.
        let again = try check {
            SecKeyCreateWithData(data as CFData, [kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom,
                                                  kSecAttrKeyClass: kSecAttrKeyClassPrivate] as CFDictionary, $0)
        }
        #expect(again == key)
    }

    @Test("ECDSA: signed here, verified by openssl; signed by openssl, verified here")
    func ecdsaBothWays() throws {
        let dir = try Scratch()
        let message = Data("the message".utf8)
        let msgPath = try dir.write("msg", message)
        // Here → openssl, for each digest.
        let key = try ecKey(256)
        let publicData = try check { SecKeyCopyExternalRepresentation(SecKeyCopyPublicKey(key)!, $0) } as Data
        let pubPath = try dir.write("pub.der", spki(ecPoint: publicData))
        for (algorithm, digest) in [(SecKeyAlgorithm.ecdsaSignatureMessageX962SHA1, "sha1"), (.ecdsaSignatureMessageX962SHA256, "sha256"),
                                    (.ecdsaSignatureMessageX962SHA384, "sha384"), (.ecdsaSignatureMessageX962SHA512, "sha512")] {
            let signature = try check { SecKeyCreateSignature(key, algorithm, message as CFData, $0) } as Data
            let sigPath = try dir.write("sig", signature)
            let out = try openssl(["dgst", "-\(digest)", "-keyform", "DER", "-verify", pubPath, "-signature", sigPath, msgPath])
            #expect(out.stdout.contains("Verified OK"), "\(algorithm)")
        }
        // Digest variant: the caller hashes.
        let digest = try openssl(["dgst", "-sha256", "-binary"], stdin: message).stdoutData
        let signature = try check { SecKeyCreateSignature(key, .ecdsaSignatureDigestX962SHA256, digest as CFData, $0) } as Data
        #expect(SecKeyVerifySignature(SecKeyCopyPublicKey(key)!, .ecdsaSignatureMessageX962SHA256, message as CFData, signature as CFData, nil))
        // RFC 4754 (r ‖ s, as JWT ES256 wants): 64 bytes for P-256, the same r and s as the DER one verifies.
        let raw = try check { SecKeyCreateSignature(key, .ecdsaSignatureRFC4754, digest as CFData, $0) } as Data
        #expect(raw.count == 64)
        #expect(SecKeyVerifySignature(SecKeyCopyPublicKey(key)!, .ecdsaSignatureRFC4754, digest as CFData, raw as CFData, nil))
        var flipped = raw
        flipped[10] ^= 1
        #expect(!SecKeyVerifySignature(SecKeyCopyPublicKey(key)!, .ecdsaSignatureRFC4754, digest as CFData, flipped as CFData, nil))
        // openssl checks it, made DER here independently of the library (X9.62 SEQUENCE of two INTEGERs).
        func integer(_ bytes: Data) -> Data {
            var value = Data(bytes.drop { $0 == 0 })
            if value.isEmpty || value.first! >= 0x80 { value.insert(0, at: 0) }
            return Data([0x02, UInt8(value.count)]) + value
        }
        let body = integer(raw.prefix(32)) + integer(raw.suffix(32))
        let der = Data([0x30, UInt8(body.count)]) + body
        let verified = try openssl(["pkeyutl", "-verify", "-pubin", "-keyform", "DER", "-inkey", pubPath, "-in", try dir.write("digest", digest),
                                    "-sigfile", try dir.write("rawsig.der", der)]).stdout
        #expect(verified.contains("Signature Verified Successfully"))
        // openssl → here.
        try openssl(["ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out", dir.path("k.pem")])
        try openssl(["dgst", "-sha256", "-sign", dir.path("k.pem"), "-out", dir.path("osig"), msgPath])
        try openssl(["ec", "-in", dir.path("k.pem"), "-pubout", "-outform", "DER", "-out", dir.path("opub.der")])
        let point = try dir.read("opub.der").suffix(65)
        let theirs = try check {
            SecKeyCreateWithData(Data(point) as CFData, [kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom,
                                                         kSecAttrKeyClass: kSecAttrKeyClassPublic] as CFDictionary, $0)
        }
        var error: Unmanaged<CFError>?
        #expect(SecKeyVerifySignature(theirs, .ecdsaSignatureMessageX962SHA256, message as CFData, try dir.read("osig") as CFData, &error))
        // A wrong message: false, errSecVerifyFailed in NSOSStatusErrorDomain.
        #expect(!SecKeyVerifySignature(theirs, .ecdsaSignatureMessageX962SHA256, Data("other".utf8) as CFData, try dir.read("osig") as CFData, &error))
        let e = try #require(error?.takeRetainedValue())
        #expect(e.domain == NSOSStatusErrorDomain && e.code == Int(errSecVerifyFailed))
        // Their private key, imported as X9.63 04‖X‖Y‖K: the SEC1 DER's scalar after the point.
        try openssl(["ec", "-in", dir.path("k.pem"), "-outform", "DER", "-out", dir.path("k.der")])
        let sec1 = try dir.read("k.der")
        let scalar = sec1.dropFirst(7).prefix(32)
        let theirPrivate = try check {
            SecKeyCreateWithData(Data(point) + scalar as CFData, [kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom,
                                                                  kSecAttrKeyClass: kSecAttrKeyClassPrivate] as CFDictionary, $0)
        }
        #expect(SecKeyCopyPublicKey(theirPrivate) == theirs)
    }

    @Test("RSA: PKCS #1 v1.5 and PSS signatures, OAEP encryption, against openssl both ways")
    func rsaBothWays() throws {
        let dir = try Scratch()
        let message = Data("rsa message".utf8)
        let msgPath = try dir.write("msg", message)
        try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", dir.path("k.pem")])
        try openssl(["rsa", "-in", dir.path("k.pem"), "-traditional", "-outform", "DER", "-out", dir.path("k.der")])
        try openssl(["rsa", "-in", dir.path("k.pem"), "-pubout", "-out", dir.path("pub.pem")])
        try openssl(["rsa", "-in", dir.path("k.pem"), "-RSAPublicKey_out", "-outform", "DER", "-out", dir.path("pub.der")])
        let key = try check {
            SecKeyCreateWithData(try dir.read("k.der") as CFData, [kSecAttrKeyType: kSecAttrKeyTypeRSA,
                                                                   kSecAttrKeyClass: kSecAttrKeyClassPrivate] as CFDictionary, $0)
        }
        #expect(SecKeyGetBlockSize(key) == 256)
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        #expect(try check { SecKeyCopyExternalRepresentation(publicKey, $0) } as Data == (try dir.read("pub.der")))
        // PKCS #1 v1.5 and PSS, here → openssl.
        let pkcs1 = try check { SecKeyCreateSignature(key, .rsaSignatureMessagePKCS1v15SHA256, message as CFData, $0) } as Data
        #expect(try openssl(["dgst", "-sha256", "-verify", dir.path("pub.pem"), "-signature", try dir.write("s1", pkcs1), msgPath])
            .stdout.contains("Verified OK"))
        let pss = try check { SecKeyCreateSignature(key, .rsaSignatureMessagePSSSHA384, message as CFData, $0) } as Data
        #expect(try openssl(["dgst", "-sha384", "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:digest",
                             "-verify", dir.path("pub.pem"), "-signature", try dir.write("s2", pss), msgPath]).stdout.contains("Verified OK"))
        // openssl → here.
        try openssl(["dgst", "-sha512", "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:digest",
                     "-sign", dir.path("k.pem"), "-out", dir.path("s3"), msgPath])
        #expect(SecKeyVerifySignature(publicKey, .rsaSignatureMessagePSSSHA512, message as CFData, try dir.read("s3") as CFData, nil))
        #expect(!SecKeyVerifySignature(publicKey, .rsaSignatureMessagePKCS1v15SHA512, message as CFData, try dir.read("s3") as CFData, nil))
        // OAEP: openssl encrypts, we decrypt; we encrypt, openssl decrypts.
        for (algorithm, digest) in [(SecKeyAlgorithm.rsaEncryptionOAEPSHA1, "sha1"), (.rsaEncryptionOAEPSHA256, "sha256"), (.rsaEncryptionOAEPSHA512, "sha512")] {
            let secret = Data("secret \(digest)".utf8)
            let sealed = try openssl(["pkeyutl", "-encrypt", "-pubin", "-inkey", dir.path("pub.pem"), "-pkeyopt", "rsa_padding_mode:oaep",
                                      "-pkeyopt", "rsa_oaep_md:\(digest)", "-pkeyopt", "rsa_mgf1_md:\(digest)"], stdin: secret).stdoutData
            #expect(try check { SecKeyCreateDecryptedData(key, algorithm, sealed as CFData, $0) } as Data == secret)
            let ours = try check { SecKeyCreateEncryptedData(publicKey, algorithm, secret as CFData, $0) } as Data
            let opened = try openssl(["pkeyutl", "-decrypt", "-inkey", dir.path("k.pem"), "-pkeyopt", "rsa_padding_mode:oaep",
                                      "-pkeyopt", "rsa_oaep_md:\(digest)", "-pkeyopt", "rsa_mgf1_md:\(digest)"], stdin: ours).stdoutData
            #expect(opened == secret)
        }
    }

    @Test("ECDH standard and cofactor agree with openssl pkeyutl -derive; X9.63 variants with openssl kdf")
    func ecdh() throws {
        let dir = try Scratch()
        let ours = try ecKey(256)
        try openssl(["ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out", dir.path("k.pem")])
        try openssl(["ec", "-in", dir.path("k.pem"), "-pubout", "-outform", "DER", "-out", dir.path("their.der")])
        let theirs = try check {
            SecKeyCreateWithData(Data(try dir.read("their.der").suffix(65)) as CFData,
                                 [kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyClass: kSecAttrKeyClassPublic] as CFDictionary, $0)
        }
        let ourPublic = try check { SecKeyCopyExternalRepresentation(SecKeyCopyPublicKey(ours)!, $0) } as Data
        let peer = try dir.write("our.der", spki(ecPoint: ourPublic))
        let expected = try openssl(["pkeyutl", "-derive", "-inkey", dir.path("k.pem"), "-peerkey", peer, "-peerform", "DER"]).stdoutData
        for algorithm in [SecKeyAlgorithm.ecdhKeyExchangeStandard, .ecdhKeyExchangeCofactor] {
            let shared = try check { SecKeyCopyKeyExchangeResult(ours, algorithm, theirs, [String: Any]() as CFDictionary, $0) } as Data
            #expect(shared == expected)
        }
        let info = Data("info".utf8)
        let derived = try check {
            SecKeyCopyKeyExchangeResult(ours, .ecdhKeyExchangeStandardX963SHA256, theirs,
                                        [kSecKeyKeyExchangeParameterRequestedSize: 40, kSecKeyKeyExchangeParameterSharedInfo: info] as CFDictionary, $0)
        } as Data
        let kdf = try openssl(["kdf", "-keylen", "40", "-kdfopt", "digest:SHA256", "-kdfopt", "hexsecret:\(hex(expected))",
                               "-kdfopt", "hexinfo:\(hex(info))", "-binary", "X963KDF"]).stdoutData
        #expect(derived == kdf)
        // No requested size: errSecParam.
        #expect(failure { SecKeyCopyKeyExchangeResult(ours, .ecdhKeyExchangeStandardX963SHA256, theirs, [String: Any]() as CFDictionary, $0) }?.1
            == Int(errSecParam))
    }

    /// Apple's ECIES, written independently in Python (python3-cryptography): X9.63 KDF with
    /// SHA-256 over Z with the ephemeral public key as shared info, AES-128 (P-256) or
    /// AES-256 (larger curves) then a 16-byte IV from the KDF, AES-GCM, output
    /// ephemeral point ‖ ciphertext ‖ tag (jedda/ECIES, BC-ECIES-for-iOS describe the same).
    static let eciesPython = """
        import sys
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        from cryptography.hazmat.primitives.kdf.x963kdf import X963KDF
        mode, curve_bits, key_hex, data_hex = sys.argv[1:5]
        curve = {"256": ec.SECP256R1(), "384": ec.SECP384R1(), "521": ec.SECP521R1()}[curve_bits]
        field = (int(curve_bits) + 7) // 8
        key, data = bytes.fromhex(key_hex), bytes.fromhex(data_hex)
        aes = 16 if int(curve_bits) <= 256 else 32
        def schedule(z, eph):
            out = X963KDF(algorithm=hashes.SHA256(), length=aes + 16, sharedinfo=eph).derive(z)
            return out[:aes], out[aes:]
        if mode == "encrypt":
            recipient = ec.EllipticCurvePublicKey.from_encoded_point(curve, key)
            eph = ec.generate_private_key(curve)
            eph_pub = eph.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
            k, iv = schedule(eph.exchange(ec.ECDH(), recipient), eph_pub)
            sys.stdout.write((eph_pub + AESGCM(k).encrypt(iv, data, None)).hex())
        else:
            private = ec.derive_private_key(int.from_bytes(key[1 + 2 * field:], "big"), curve)
            eph_pub = data[:1 + 2 * field]
            z = private.exchange(ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(curve, eph_pub))
            k, iv = schedule(z, eph_pub)
            sys.stdout.write(AESGCM(k).decrypt(iv, data[1 + 2 * field:], None).hex())
        """

    func python(_ arguments: [String]) throws -> String {
        let out = try ChildProcess.run(try Executables.which("python3"), ["-c", Self.eciesPython] + arguments)
        guard out.status == 0 else { throw TestSetupError("python3 ECIES failed: \(out.stderr)") }
        return out.stdout
    }

    @Test("ECIES (Apple's variable-IV X9.63 SHA-256 AES-GCM) against an independent implementation, both ways", arguments: [256, 384, 521])
    func ecies(bits: Int) throws {
        let key = try ecKey(bits)
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        let plaintext = Data("attack at dawn, \(bits)".utf8)
        let algorithm = SecKeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA256AESGCM
        #expect(algorithm.rawValue as String == "algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM-KDFIV")
        #expect(SecKeyIsAlgorithmSupported(publicKey, .encrypt, algorithm) && SecKeyIsAlgorithmSupported(key, .decrypt, algorithm))
        // Here → Python.
        let sealed = try check { SecKeyCreateEncryptedData(publicKey, algorithm, plaintext as CFData, $0) } as Data
        let point = 1 + 2 * SecKeyGetBlockSize(key)
        #expect(sealed.count == point + plaintext.count + 16)
        let privateData = try check { SecKeyCopyExternalRepresentation(key, $0) } as Data
        #expect(try python(["decrypt", "\(bits)", hex(privateData), hex(sealed)]) == hex(plaintext))
        // Python → here.
        let publicData = try check { SecKeyCopyExternalRepresentation(publicKey, $0) } as Data
        let theirs = fromHex(try python(["encrypt", "\(bits)", hex(publicData), hex(plaintext)]))
        #expect(try check { SecKeyCreateDecryptedData(key, algorithm, theirs as CFData, $0) } as Data == plaintext)
        // The cofactor variant is the same on these curves (cofactor 1); the zero-IV one is not.
        #expect(try check { SecKeyCreateDecryptedData(key, .eciesEncryptionCofactorVariableIVX963SHA256AESGCM, theirs as CFData, $0) } as Data == plaintext)
        #expect(failure { SecKeyCreateDecryptedData(key, .eciesEncryptionStandardX963SHA256AESGCM, theirs as CFData, $0) }?.1 == Int(errSecParam))
        // A flipped tag bit: errSecParam, nothing returned.
        var tampered = sealed
        tampered[tampered.count - 1] ^= 1
        #expect(failure { SecKeyCreateDecryptedData(key, algorithm, tampered as CFData, $0) }?.1 == Int(errSecParam))
        #expect(failure { SecKeyCreateDecryptedData(key, algorithm, Data(sealed.prefix(point)) as CFData, $0) }?.1 == Int(errSecParam))
    }

    @Test("bad input: unsupported sizes and types, garbage key data, algorithm a key does not support")
    func badInput() throws {
        let bad: [[String: Any]] = [
            [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 224],
            [kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits as String: 512],
            [kSecAttrKeyType as String: "99", kSecAttrKeySizeInBits as String: 256],
            [kSecAttrKeySizeInBits as String: 256],
        ]
        for params in bad {
            let (domain, code) = try #require(failure { SecKeyCreateRandomKey(params as CFDictionary, $0) })
            #expect(domain == NSOSStatusErrorDomain && code == Int(errSecParam))
        }
        let ecPublic: [CFString: Any] = [kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyClass: kSecAttrKeyClassPublic]
        var offCurve = Data([4]) + Data(repeating: 1, count: 64)
        #expect(failure { SecKeyCreateWithData(offCurve as CFData, ecPublic as CFDictionary, $0) }?.1 == Int(errSecParam))
        offCurve.removeLast()
        #expect(failure { SecKeyCreateWithData(offCurve as CFData, ecPublic as CFDictionary, $0) }?.1 == Int(errSecParam))
        #expect(failure { SecKeyCreateWithData(Data("garbage".utf8) as CFData, [kSecAttrKeyType: kSecAttrKeyTypeRSA,
                                                                                kSecAttrKeyClass: kSecAttrKeyClassPrivate] as CFDictionary, $0) }?.1 == Int(errSecParam))
        let key = try ecKey(256)
        // An EC key cannot do RSA; a private key does not verify; a public key does not sign.
        #expect(!SecKeyIsAlgorithmSupported(key, .sign, .rsaSignatureMessagePKCS1v15SHA256))
        #expect(SecKeyIsAlgorithmSupported(key, .sign, .ecdsaSignatureMessageX962SHA256))
        #expect(!SecKeyIsAlgorithmSupported(key, .verify, .ecdsaSignatureMessageX962SHA256))
        #expect(!SecKeyIsAlgorithmSupported(key, .sign, SecKeyAlgorithm(rawValue: "algid:sign:nonsense" as CFString)))
        let (domain, code) = try #require(failure { SecKeyCreateSignature(key, .rsaSignatureMessagePKCS1v15SHA256, Data() as CFData, $0) })
        #expect(domain == NSOSStatusErrorDomain && code == Int(errSecParam))
        #expect(failure { SecKeyCreateSignature(SecKeyCopyPublicKey(key)!, .ecdsaSignatureMessageX962SHA256, Data() as CFData, $0) }?.1 == Int(errSecParam))
        // A digest of the wrong length.
        #expect(failure { SecKeyCreateSignature(key, .ecdsaSignatureDigestX962SHA256, Data(count: 31) as CFData, $0) }?.1 == Int(errSecParam))
        // Non-extractable: no external representation.
        let sealedKey = try ecKey(256, [kSecPrivateKeyAttrs as String: [kSecAttrIsExtractable as String: false]])
        #expect(failure { SecKeyCopyExternalRepresentation(sealedKey, $0) }?.1 == Int(errSecParam))
        #expect(try check { SecKeyCopyExternalRepresentation(SecKeyCopyPublicKey(sealedKey)!, $0) }.length == 65)
    }

    @Test("a key's description names its type and size, never its bytes")
    func description() throws {
        let key = try ecKey(256)
        let data = try check { SecKeyCopyExternalRepresentation(key, $0) } as Data
        let text = "\(key) \(String(reflecting: key))"
        #expect(text.contains("256"))
        #expect(!text.contains(hex(data.suffix(32)).prefix(16)))
        // Reflection (dump, debuggers) shows no stored property, so no key bytes either.
        var dumped = ""
        dump(key, to: &dumped)
        #expect(dumped.split(separator: "\n").count == 1, "\(dumped.split(separator: "\n").count) lines of reflection")
        #expect(!dumped.contains(hex(data.suffix(32)).prefix(16)))
    }

    @Test("RSA 3072 generation, RSA PKCS #1 encryption and raw digest signature round trip")
    func rsaGenerated() throws {
        let key = try rsaKey(3072)
        #expect(SecKeyGetBlockSize(key) == 384)
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        let secret = Data("pkcs1".utf8)
        let sealed = try check { SecKeyCreateEncryptedData(publicKey, .rsaEncryptionPKCS1, secret as CFData, $0) } as Data
        #expect(try check { SecKeyCreateDecryptedData(key, .rsaEncryptionPKCS1, sealed as CFData, $0) } as Data == secret)
        let digest = Data(repeating: 7, count: 32)
        let signature = try check { SecKeyCreateSignature(key, .rsaSignatureDigestPKCS1v15SHA256, digest as CFData, $0) } as Data
        #expect(SecKeyVerifySignature(publicKey, .rsaSignatureDigestPKCS1v15SHA256, digest as CFData, signature as CFData, nil))
        // Too long for OAEP-SHA512 with a 3072-bit key (384 − 2·64 − 2 = 254 bytes max).
        #expect(failure { SecKeyCreateEncryptedData(publicKey, .rsaEncryptionOAEPSHA512, Data(count: 255) as CFData, $0) }?.1 == Int(errSecParam))
    }
}
