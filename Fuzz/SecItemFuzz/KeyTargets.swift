import Foundation
import SecItem

// The Apple surface's parsers of key and certificate bytes an app gets from outside
// (a server, a file, another platform): DER certificates, Apple's external
// representation of EC and RSA keys, PKCS #12 files. libcrypto parses; the targets
// check what this library does with what it returns.

/// Writes `args` to openssl and returns what it wrote to `output` (seed generation only).
private func openssl(_ arguments: [String], in directory: String, output: String, stdin: Data? = nil) throws -> [UInt8] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = arguments
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    let input = Pipe()
    process.standardInput = input
    try process.run()
    if let stdin { input.fileHandleForWriting.write(stdin) }
    try input.fileHandleForWriting.close()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw FuzzSeedError("openssl \(arguments.prefix(2).joined(separator: " ")) exited \(process.terminationStatus)")
    }
    return [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/" + output)))
}

struct FuzzSeedError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Small certificates made by the openssl command (EC P-256 and P-384, RSA 1024, a chain,
/// names with several values, alternative names): the seeds of `certificate` and `pkcs12`.
private enum OpenSSLFixtures {
    /// Makes keys and certificates in `directory`: ec.key/ec.pem (self-signed CA),
    /// leaf.key/leaf.pem (EC P-384, signed by the CA, SAN emails), rsa.key/rsa.pem.
    static func make(in directory: String) throws {
        _ = try openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ec.key"], in: directory, output: "ec.key")
        _ = try openssl(
            ["req", "-x509", "-new", "-key", "ec.key", "-days", "30", "-out", "ec.pem",
             "-subj", "/CN=Fuzz CA/O=SecItem/OU=Fuzz+OU=Seeds/emailAddress=ca@example.org",
             "-addext", "subjectKeyIdentifier=hash"], in: directory, output: "ec.pem")
        _ = try openssl(["ecparam", "-name", "secp384r1", "-genkey", "-noout", "-out", "leaf.key"], in: directory, output: "leaf.key")
        _ = try openssl(["req", "-new", "-key", "leaf.key", "-subj", "/CN=  leaf  host /O=secitem", "-out", "leaf.csr"], in: directory, output: "leaf.csr")
        try Data("subjectAltName=email:leaf@example.org,DNS:leaf.example.org\n".utf8)
            .write(to: URL(fileURLWithPath: directory + "/ext.cnf"))
        _ = try openssl(
            ["x509", "-req", "-in", "leaf.csr", "-CA", "ec.pem", "-CAkey", "ec.key", "-set_serial", "0x00FF01", "-days", "30",
             "-extfile", "ext.cnf", "-out", "leaf.pem"], in: directory, output: "leaf.pem")
        _ = try openssl(
            ["req", "-x509", "-newkey", "rsa:1024", "-nodes", "-keyout", "rsa.key", "-days", "30", "-out", "rsa.pem",
             "-subj", "/O=RSA only"], in: directory, output: "rsa.pem")
    }

    static func der(_ pem: String, in directory: String) throws -> [UInt8] {
        try openssl(["x509", "-in", pem, "-outform", "DER", "-out", pem + ".der"], in: directory, output: pem + ".der")
    }
}

// MARK: certificate

/// `SecCertificateCreateWithData`: any bytes as a DER certificate, then every accessor.
///
/// Invariants: no crash; a certificate that parses gives back exactly the bytes it was
/// made from (`SecCertificateCopyData`: the function accepts exactly one DER
/// certificate), parses again from them, and every accessor answers.
enum CertificateTarget {
    static let target = FuzzTarget(
        name: "certificate", summary: "DER through SecCertificateCreateWithData and every SecCertificateCopy… accessor", run: run,
        seeds: seeds)

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        let data = Data(buffer: bytes)
        guard let certificate = SecCertificateCreateWithData(nil, data as CFData) else { return }
        let copied = SecCertificateCopyData(certificate) as Data
        FuzzCheck.expect(copied == data, "SecCertificateCopyData gave \(copied.count) bytes for a certificate made from \(data.count) other bytes")
        FuzzCheck.expect(SecCertificateCreateWithData(nil, copied as CFData) != nil, "a certificate's own data does not parse")
        _ = SecCertificateCopySubjectSummary(certificate)
        var name: CFString?
        FuzzCheck.expect(SecCertificateCopyCommonName(certificate, &name) == errSecSuccess, "SecCertificateCopyCommonName failed")
        var emails: CFArray?
        FuzzCheck.expect(SecCertificateCopyEmailAddresses(certificate, &emails) == errSecSuccess, "SecCertificateCopyEmailAddresses failed")
        if let key = SecCertificateCopyKey(certificate) {
            FuzzCheck.expect(SecKeyCopyExternalRepresentation(key, nil) != nil, "a certificate's public key has no external representation")
        }
        FuzzCheck.expect(SecCertificateCopySerialNumberData(certificate, nil) != nil, "a parsed certificate has no serial number")
        _ = SecCertificateCopyNormalizedIssuerSequence(certificate)
        _ = SecCertificateCopyNormalizedSubjectSequence(certificate)
    }

    static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        try withTemporaryDirectory { directory in
            try OpenSSLFixtures.make(in: directory)
            return [
                ("ec-p256-ca.der", try OpenSSLFixtures.der("ec.pem", in: directory)),
                ("ec-p384-leaf-san.der", try OpenSSLFixtures.der("leaf.pem", in: directory)),
                ("rsa-1024.der", try OpenSSLFixtures.der("rsa.pem", in: directory)),
            ]
        }
    }
}

// MARK: key

/// `SecKeyCreateWithData` for each key type and class it accepts (EC public 04‖X‖Y, EC
/// private 04‖X‖Y‖K on P-256/384/521; RSA PKCS #1 RSAPublicKey and RSAPrivateKey).
/// The first byte chooses the type, the class and whether `kSecAttrKeySizeInBits` is
/// given; the rest is the key data.
///
/// Invariants: no crash; a key that loads has the size it was asked for, exports a
/// representation that loads again to the same key, its public key exports, and a
/// private key's signature verifies with its public key.
enum KeyDataTarget {
    static let target = FuzzTarget(
        name: "key", summary: "key bytes through SecKeyCreateWithData (EC and RSA, public and private)", run: run, seeds: seeds)

    static let sizes = [256, 384, 521, 1024, 2048, 0]

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        var input = FuzzInput(bytes)
        let selector = input.byte()
        let isRSA = selector & 1 == 1
        let isPrivate = selector & 2 == 2
        let size = selector & 4 == 4 ? sizes[Int(selector >> 3) % sizes.count] : nil
        let data = Data(input.rest())
        var attributes: [CFString: Any] = [
            kSecAttrKeyType: isRSA ? kSecAttrKeyTypeRSA : kSecAttrKeyTypeECSECPrimeRandom,
            kSecAttrKeyClass: isPrivate ? kSecAttrKeyClassPrivate : kSecAttrKeyClassPublic,
        ]
        if let size { attributes[kSecAttrKeySizeInBits] = size }
        var error: Unmanaged<CFError>?
        guard let key = SecKeyCreateWithData(data as CFData, attributes as CFDictionary, &error) else {
            FuzzCheck.expect(error != nil, "SecKeyCreateWithData failed without an error")
            error?.release()
            return
        }
        guard let exported = SecKeyCopyExternalRepresentation(key, nil) as Data? else {
            FuzzCheck.fail("a loaded key has no external representation")
        }
        guard let again = SecKeyCreateWithData(exported as CFData, attributes as CFDictionary, nil),
            SecKeyCopyExternalRepresentation(again, nil) as Data? == exported
        else {
            FuzzCheck.fail("a key's external representation does not load to the same key")
        }
        let keyAttributes = SecKeyCopyAttributes(key) as? [String: Any] ?? [:]
        let bits = (keyAttributes[kSecAttrKeySizeInBits as String] as? NSNumber)?.intValue
        if let size { FuzzCheck.expect(bits == size, "asked for \(size) bits, the key has \(bits ?? -1)") }
        guard let publicKey = SecKeyCopyPublicKey(key), let publicBits = SecKeyCopyExternalRepresentation(publicKey, nil) as Data? else {
            FuzzCheck.fail("a loaded key has no public key")
        }
        if !isPrivate { FuzzCheck.expect(publicBits == exported, "a public key's public key differs from it") }
        if isPrivate {
            let algorithm: SecKeyAlgorithm = isRSA ? .rsaSignatureMessagePKCS1v15SHA256 : .ecdsaSignatureMessageX962SHA256
            let message = Data("fuzz".utf8) as CFData
            // A key too small for the padding cannot sign; one that signs must verify.
            if let signature = SecKeyCreateSignature(key, algorithm, message, nil) {
                FuzzCheck.expect(
                    SecKeyVerifySignature(publicKey, algorithm, message, signature, nil), "a loaded private key's signature does not verify")
            }
        }
    }

    static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        var out: [(name: String, bytes: [UInt8])] = []
        for (name, type, bits) in [("ec-p256", kSecAttrKeyTypeECSECPrimeRandom, 256), ("ec-p384", kSecAttrKeyTypeECSECPrimeRandom, 384),
            ("ec-p521", kSecAttrKeyTypeECSECPrimeRandom, 521), ("rsa-1024", kSecAttrKeyTypeRSA, 1024)]
        {
            var error: Unmanaged<CFError>?
            guard let key = SecKeyCreateRandomKey([kSecAttrKeyType: type, kSecAttrKeySizeInBits: bits] as CFDictionary, &error),
                let publicKey = SecKeyCopyPublicKey(key),
                let privateData = SecKeyCopyExternalRepresentation(key, nil) as Data?,
                let publicData = SecKeyCopyExternalRepresentation(publicKey, nil) as Data?
            else { throw FuzzSeedError("SecKeyCreateRandomKey failed for \(name)") }
            let rsa: UInt8 = type == kSecAttrKeyTypeRSA ? 1 : 0
            let sizeIndex = UInt8(sizes.firstIndex(of: bits)!)
            out.append(("\(name)-public", [rsa] + publicData))
            out.append(("\(name)-private", [rsa | 2] + privateData))
            out.append(("\(name)-private-sized", [rsa | 2 | 4 | sizeIndex << 3] + privateData))
        }
        return out
    }
}

// MARK: pkcs12

/// `SecPKCS12Import`: the first byte is the passphrase's length, then the passphrase,
/// then the file (DER).
///
/// Invariants: no crash; a successful import gives one dictionary whose chain starts
/// with a certificate that parses, and an identity (when there is one) whose private
/// key signs what its certificate's public key verifies.
enum PKCS12Target {
    static let target = FuzzTarget(
        name: "pkcs12", summary: "a passphrase and PKCS #12 bytes through SecPKCS12Import", run: run, seeds: seeds)

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        var input = FuzzInput(bytes)
        let passphrase = input.string(max: 32)
        let data = Data(input.rest())
        var items: CFArray?
        let status = SecPKCS12Import(data as CFData, [kSecImportExportPassphrase: passphrase] as CFDictionary, &items)
        guard status == errSecSuccess else {
            FuzzCheck.expect(
                [errSecAuthFailed, errSecDecode, errSecUnsupportedFormat].contains(status), "SecPKCS12Import returned \(status)")
            FuzzCheck.expect(items == nil, "a failed SecPKCS12Import returned items")
            return
        }
        guard let array = items as? [[String: Any]], array.count == 1, let item = array.first,
            let chain = item[kSecImportItemCertChain as String] as? [SecCertificate], let leaf = chain.first
        else {
            FuzzCheck.fail("SecPKCS12Import succeeded without one item and a certificate chain")
        }
        for certificate in chain {
            FuzzCheck.expect(
                SecCertificateCreateWithData(nil, SecCertificateCopyData(certificate)) != nil, "an imported certificate does not parse again")
        }
        guard let identityValue = item[kSecImportItemIdentity as String] else { return }
        let identity = identityValue as! SecIdentity
        var certificate: SecCertificate?
        var privateKey: SecKey?
        FuzzCheck.expect(SecIdentityCopyCertificate(identity, &certificate) == errSecSuccess, "SecIdentityCopyCertificate failed")
        FuzzCheck.expect(SecIdentityCopyPrivateKey(identity, &privateKey) == errSecSuccess, "SecIdentityCopyPrivateKey failed")
        FuzzCheck.expect(
            certificate.map { SecCertificateCopyData($0) as Data } == SecCertificateCopyData(leaf) as Data,
            "the identity's certificate is not the chain's first")
        guard let privateKey else { FuzzCheck.fail("an imported identity has no private key") }
        FuzzCheck.expect(SecKeyCopyExternalRepresentation(privateKey, nil) != nil, "an imported private key does not export")
    }

    static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        try withTemporaryDirectory { directory in
            try OpenSSLFixtures.make(in: directory)
            func export(_ name: String, _ passphrase: String, _ extra: [String]) throws -> (name: String, bytes: [UInt8]) {
                let file = try openssl(["pkcs12", "-export", "-out", name + ".p12", "-passout", "pass:" + passphrase] + extra, in: directory, output: name + ".p12")
                return (name, [UInt8(passphrase.utf8.count)] + Array(passphrase.utf8) + file)
            }
            return [
                // The default (PBES2, AES-256-CBC, PBKDF2; a SHA-256 MAC), a small iteration count to stay fast.
                try export("ec-leaf-chain", "pw", ["-inkey", "leaf.key", "-in", "leaf.pem", "-certfile", "ec.pem", "-name", "leaf", "-iter", "1", "-nomaciter"]),
                // RC2-40 and 3DES (the legacy provider).
                try export("rsa-legacy", "legacy", ["-legacy", "-inkey", "rsa.key", "-in", "rsa.pem", "-iter", "1", "-nomaciter"]),
                // No MAC and no encryption: the fuzzer reaches the bags themselves.
                try export("plain-bags", "", ["-inkey", "ec.key", "-in", "ec.pem", "-nomac", "-keypbe", "NONE", "-certpbe", "NONE", "-name", "ca"]),
                // A certificate alone.
                try export("certificate-only", "x", ["-nokeys", "-in", "rsa.pem", "-noiter", "-nomaciter"]),
            ]
        }
    }
}
