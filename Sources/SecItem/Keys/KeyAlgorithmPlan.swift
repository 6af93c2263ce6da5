// What each SecKeyAlgorithm means in libcrypto terms, parsed from Apple's raw names.
internal import CSecItemKeys
import SecItemCore

/// One algorithm, as the operations carry it out.
enum KeyAlgorithmPlan: Equatable {
    /// A signature. `digest`: the hash (0: none named); `message`: the input is hashed
    /// first; `digestInput`: the input must be exactly one digest long.
    case signature(kind: SecKey.Kind, padding: Int32, digest: Int32, message: Bool)
    /// RSA encryption.
    case rsaEncryption(padding: Int32, digest: Int32)
    /// Apple's ECIES: ECDH (or cofactor ECDH), the X9.63 KDF with `digest` over the
    /// ephemeral public key, AES-GCM with the KDF's IV (`variableIV`) or a zero IV.
    case ecies(cofactor: Bool, digest: Int32, variableIV: Bool)
    /// ECDH, with the X9.63 KDF when `kdfDigest` is set.
    case keyExchange(cofactor: Bool, kdfDigest: Int32?)

    /// The padding code of `ecdsaSignatureRFC4754`: ECDSA over a digest, the signature r ‖ s
    /// (each as long as the field) instead of DER; not a libcrypto padding (converted in Swift).
    static let rfc4754: Int32 = 100

    /// The digest code of an Apple digest name.
    static func digest(_ name: Substring) -> Int32? {
        switch name {
        case "SHA1": return Int32(CSK_SHA1)
        case "SHA224": return Int32(CSK_SHA224)
        case "SHA256": return Int32(CSK_SHA256)
        case "SHA384": return Int32(CSK_SHA384)
        case "SHA512": return Int32(CSK_SHA512)
        default: return nil
        }
    }

    /// The digest's length in bytes.
    static func digestLength(_ digest: Int32) -> Int { digest == Int32(CSK_SHA1) ? 20 : Int(digest) / 8 }

    /// The plan of `algorithm`, or `nil` when this keychain does not implement it.
    init?(_ algorithm: SecKeyAlgorithm) {
        let parts = algorithm.name.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count >= 3, parts[0] == "algid" else { return nil }
        switch (parts[1], parts[2]) {
        case ("sign", "RSA"):
            guard parts.count >= 4 else { return nil }
            let digest = parts.count >= 5 ? Self.digest(parts[4]) : 0
            guard let digest else { return nil }
            switch parts[3] {
            case "raw" where parts.count == 4:
                self = .signature(kind: .rsa, padding: Int32(CSK_PAD_RAW), digest: 0, message: false)
            case "digest-PKCS1v15" where parts.count <= 5:
                self = .signature(kind: .rsa, padding: Int32(CSK_PAD_PKCS1), digest: digest, message: false)
            case "message-PKCS1v15" where parts.count == 5:
                self = .signature(kind: .rsa, padding: Int32(CSK_PAD_PKCS1), digest: digest, message: true)
            case "digest-PSS" where parts.count == 7, "message-PSS" where parts.count == 7:
                guard parts[5] == parts[4], Int(parts[6]) == Self.digestLength(digest) else { return nil }
                self = .signature(kind: .rsa, padding: Int32(CSK_PAD_PSS), digest: digest, message: parts[3] == "message-PSS")
            default:
                return nil
            }
        case ("sign", "ECDSA"):
            guard parts.count >= 4 else { return nil }
            let digest = parts.count == 5 ? Self.digest(parts[4]) : 0
            guard let digest, parts.count <= 5 else { return nil }
            switch parts[3] {
            case "RFC4754" where parts.count == 4:
                self = .signature(kind: .ec, padding: Self.rfc4754, digest: 0, message: false)
            case "digest-X962": self = .signature(kind: .ec, padding: Int32(CSK_PAD_ECDSA), digest: digest, message: false)
            case "message-X962" where digest != 0:
                self = .signature(kind: .ec, padding: Int32(CSK_PAD_ECDSA), digest: digest, message: true)
            default: return nil
            }
        case ("encrypt", "RSA"):
            guard parts.count >= 4 else { return nil }
            switch (parts[3], parts.count) {
            case ("raw", 4): self = .rsaEncryption(padding: Int32(CSK_PAD_RAW), digest: 0)
            case ("PKCS1", 4): self = .rsaEncryption(padding: Int32(CSK_PAD_PKCS1), digest: 0)
            case ("OAEP", 5):
                guard let digest = Self.digest(parts[4]) else { return nil }
                self = .rsaEncryption(padding: Int32(CSK_PAD_OAEP), digest: digest)
            default: return nil
            }
        case ("encrypt", "ECIES"):
            // algid:encrypt:ECIES:ECDH[C]:KDFX963:SHAn:AESGCM[-KDFIV]
            guard parts.count == 7, parts[3] == "ECDH" || parts[3] == "ECDHC", parts[4] == "KDFX963",
                let digest = Self.digest(parts[5]), parts[6] == "AESGCM" || parts[6] == "AESGCM-KDFIV"
            else { return nil }
            self = .ecies(cofactor: parts[3] == "ECDHC", digest: digest, variableIV: parts[6] == "AESGCM-KDFIV")
        case ("keyexchange", "ECDH"), ("keyexchange", "ECDHC"):
            let cofactor = parts[2] == "ECDHC"
            if parts.count == 3 {
                self = .keyExchange(cofactor: cofactor, kdfDigest: nil)
            } else if parts.count == 5, parts[3] == "KDFX963", let digest = Self.digest(parts[4]) {
                self = .keyExchange(cofactor: cofactor, kdfDigest: digest)
            } else {
                return nil
            }
        default:
            return nil
        }
    }

    /// Whether `key` can do `operation` with this plan.
    func supports(_ key: SecKey, _ operation: SecKeyOperationType) -> Bool {
        switch self {
        case .signature(let kind, _, _, _):
            return kind == key.kind && (operation == .sign ? key.isPrivate : operation == .verify && !key.isPrivate)
        case .rsaEncryption:
            return key.kind == .rsa && (operation == .encrypt ? !key.isPrivate : operation == .decrypt && key.isPrivate)
        case .ecies:
            return key.kind == .ec && (operation == .encrypt ? !key.isPrivate : operation == .decrypt && key.isPrivate)
        case .keyExchange:
            return key.kind == .ec && operation == .keyExchange && key.isPrivate
        }
    }
}
