public import Foundation

/// Apple's `SecKeyAlgorithm`: what a key operation does, named by Apple's raw strings
/// (`"algid:sign:ECDSA:message-X962:SHA256"`), so an algorithm stored or sent by a
/// program on an Apple platform means the same here.
///
/// ```swift
/// let algorithm: SecKeyAlgorithm = .ecdsaSignatureMessageX962SHA256
/// guard SecKeyIsAlgorithmSupported(privateKey, .sign, algorithm) else { … }
/// ```
public struct SecKeyAlgorithm: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's raw name.
    package let name: String

    /// The algorithm of Apple's raw name (`rawValue as String`).
    public var rawValue: CFString { name as NSString }

    /// The algorithm named `rawValue`; any name is accepted, an unknown one is simply
    /// supported by no key.
    public init(rawValue: CFString) { name = rawValue as String }

    /// The algorithm named `rawValue`.
    public init(_ rawValue: CFString) { name = rawValue as String }

    package init(_ name: String) { self.name = name }

    /// The raw name.
    public var description: String { name }

    /// RSA without padding: the input is the whole block.
    public static let rsaSignatureRaw = SecKeyAlgorithm("algid:sign:RSA:raw")
    /// RSA PKCS #1 v1.5 over the input as given, without a DigestInfo.
    public static let rsaSignatureDigestPKCS1v15Raw = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15")
    /// RSA PKCS #1 v1.5 over a SHA1 digest the caller computed.
    public static let rsaSignatureDigestPKCS1v15SHA1 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA1")
    /// RSA PKCS #1 v1.5 over a SHA224 digest the caller computed.
    public static let rsaSignatureDigestPKCS1v15SHA224 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA224")
    /// RSA PKCS #1 v1.5 over a SHA256 digest the caller computed.
    public static let rsaSignatureDigestPKCS1v15SHA256 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA256")
    /// RSA PKCS #1 v1.5 over a SHA384 digest the caller computed.
    public static let rsaSignatureDigestPKCS1v15SHA384 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA384")
    /// RSA PKCS #1 v1.5 over a SHA512 digest the caller computed.
    public static let rsaSignatureDigestPKCS1v15SHA512 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA512")
    /// RSA PKCS #1 v1.5 over the SHA1 digest of the message.
    public static let rsaSignatureMessagePKCS1v15SHA1 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA1")
    /// RSA PKCS #1 v1.5 over the SHA224 digest of the message.
    public static let rsaSignatureMessagePKCS1v15SHA224 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA224")
    /// RSA PKCS #1 v1.5 over the SHA256 digest of the message.
    public static let rsaSignatureMessagePKCS1v15SHA256 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA256")
    /// RSA PKCS #1 v1.5 over the SHA384 digest of the message.
    public static let rsaSignatureMessagePKCS1v15SHA384 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA384")
    /// RSA PKCS #1 v1.5 over the SHA512 digest of the message.
    public static let rsaSignatureMessagePKCS1v15SHA512 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA512")
    /// RSA PSS (MGF1-SHA1, salt as long as the digest) over a SHA1 digest.
    public static let rsaSignatureDigestPSSSHA1 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA1:SHA1:20")
    /// RSA PSS (MGF1-SHA224, salt as long as the digest) over a SHA224 digest.
    public static let rsaSignatureDigestPSSSHA224 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA224:SHA224:24")
    /// RSA PSS (MGF1-SHA256, salt as long as the digest) over a SHA256 digest.
    public static let rsaSignatureDigestPSSSHA256 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA256:SHA256:32")
    /// RSA PSS (MGF1-SHA384, salt as long as the digest) over a SHA384 digest.
    public static let rsaSignatureDigestPSSSHA384 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA384:SHA384:48")
    /// RSA PSS (MGF1-SHA512, salt as long as the digest) over a SHA512 digest.
    public static let rsaSignatureDigestPSSSHA512 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA512:SHA512:64")
    /// RSA PSS (MGF1-SHA1, salt as long as the digest) over the SHA1 digest of the message.
    public static let rsaSignatureMessagePSSSHA1 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA1:SHA1:20")
    /// RSA PSS (MGF1-SHA224, salt as long as the digest) over the SHA224 digest of the message.
    public static let rsaSignatureMessagePSSSHA224 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA224:SHA224:24")
    /// RSA PSS (MGF1-SHA256, salt as long as the digest) over the SHA256 digest of the message.
    public static let rsaSignatureMessagePSSSHA256 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA256:SHA256:32")
    /// RSA PSS (MGF1-SHA384, salt as long as the digest) over the SHA384 digest of the message.
    public static let rsaSignatureMessagePSSSHA384 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA384:SHA384:48")
    /// RSA PSS (MGF1-SHA512, salt as long as the digest) over the SHA512 digest of the message.
    public static let rsaSignatureMessagePSSSHA512 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA512:SHA512:64")
    /// ECDSA over a digest; the signature is r ‖ s, each as long as the field (RFC 4754).
    public static let ecdsaSignatureRFC4754 = SecKeyAlgorithm("algid:sign:ECDSA:RFC4754")
    /// ECDSA over a digest of any length; DER signature (ANSI X9.62).
    public static let ecdsaSignatureDigestX962 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962")
    /// ECDSA over a SHA1 digest; DER signature (ANSI X9.62).
    public static let ecdsaSignatureDigestX962SHA1 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA1")
    /// ECDSA over a SHA224 digest; DER signature (ANSI X9.62).
    public static let ecdsaSignatureDigestX962SHA224 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA224")
    /// ECDSA over a SHA256 digest; DER signature (ANSI X9.62).
    public static let ecdsaSignatureDigestX962SHA256 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA256")
    /// ECDSA over a SHA384 digest; DER signature (ANSI X9.62).
    public static let ecdsaSignatureDigestX962SHA384 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA384")
    /// ECDSA over a SHA512 digest; DER signature (ANSI X9.62).
    public static let ecdsaSignatureDigestX962SHA512 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA512")
    /// ECDSA over the SHA1 digest of the message; DER signature (ANSI X9.62).
    public static let ecdsaSignatureMessageX962SHA1 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA1")
    /// ECDSA over the SHA224 digest of the message; DER signature (ANSI X9.62).
    public static let ecdsaSignatureMessageX962SHA224 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA224")
    /// ECDSA over the SHA256 digest of the message; DER signature (ANSI X9.62).
    public static let ecdsaSignatureMessageX962SHA256 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA256")
    /// ECDSA over the SHA384 digest of the message; DER signature (ANSI X9.62).
    public static let ecdsaSignatureMessageX962SHA384 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA384")
    /// ECDSA over the SHA512 digest of the message; DER signature (ANSI X9.62).
    public static let ecdsaSignatureMessageX962SHA512 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA512")
    /// RSA without padding.
    public static let rsaEncryptionRaw = SecKeyAlgorithm("algid:encrypt:RSA:raw")
    /// RSA PKCS #1 v1.5 encryption.
    public static let rsaEncryptionPKCS1 = SecKeyAlgorithm("algid:encrypt:RSA:PKCS1")
    /// RSA OAEP with SHA1 and MGF1-SHA1, no label.
    public static let rsaEncryptionOAEPSHA1 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA1")
    /// RSA OAEP with SHA224 and MGF1-SHA224, no label.
    public static let rsaEncryptionOAEPSHA224 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA224")
    /// RSA OAEP with SHA256 and MGF1-SHA256, no label.
    public static let rsaEncryptionOAEPSHA256 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA256")
    /// RSA OAEP with SHA384 and MGF1-SHA384, no label.
    public static let rsaEncryptionOAEPSHA384 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA384")
    /// RSA OAEP with SHA512 and MGF1-SHA512, no label.
    public static let rsaEncryptionOAEPSHA512 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA512")
    /// RSA OAEP SHA1 wrapping an AES-GCM key (not implemented on Linux: unsupported).
    public static let rsaEncryptionOAEPSHA1AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA1:AESGCM")
    /// RSA OAEP SHA224 wrapping an AES-GCM key (not implemented on Linux: unsupported).
    public static let rsaEncryptionOAEPSHA224AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA224:AESGCM")
    /// RSA OAEP SHA256 wrapping an AES-GCM key (not implemented on Linux: unsupported).
    public static let rsaEncryptionOAEPSHA256AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA256:AESGCM")
    /// RSA OAEP SHA384 wrapping an AES-GCM key (not implemented on Linux: unsupported).
    public static let rsaEncryptionOAEPSHA384AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA384:AESGCM")
    /// RSA OAEP SHA512 wrapping an AES-GCM key (not implemented on Linux: unsupported).
    public static let rsaEncryptionOAEPSHA512AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA512:AESGCM")
    /// ECIES: ECDH, ANSI X9.63 KDF with SHA1, AES-GCM with a zero IV.
    public static let eciesEncryptionStandardX963SHA1AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA1:AESGCM")
    /// ECIES: ECDH, ANSI X9.63 KDF with SHA224, AES-GCM with a zero IV.
    public static let eciesEncryptionStandardX963SHA224AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM")
    /// ECIES: ECDH, ANSI X9.63 KDF with SHA256, AES-GCM with a zero IV.
    public static let eciesEncryptionStandardX963SHA256AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM")
    /// ECIES: ECDH, ANSI X9.63 KDF with SHA384, AES-GCM with a zero IV.
    public static let eciesEncryptionStandardX963SHA384AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM")
    /// ECIES: ECDH, ANSI X9.63 KDF with SHA512, AES-GCM with a zero IV.
    public static let eciesEncryptionStandardX963SHA512AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM")
    /// ECIES: cofactor ECDH, ANSI X9.63 KDF with SHA1, AES-GCM with a zero IV.
    public static let eciesEncryptionCofactorX963SHA1AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA1:AESGCM")
    /// ECIES: cofactor ECDH, ANSI X9.63 KDF with SHA224, AES-GCM with a zero IV.
    public static let eciesEncryptionCofactorX963SHA224AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM")
    /// ECIES: cofactor ECDH, ANSI X9.63 KDF with SHA256, AES-GCM with a zero IV.
    public static let eciesEncryptionCofactorX963SHA256AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM")
    /// ECIES: cofactor ECDH, ANSI X9.63 KDF with SHA384, AES-GCM with a zero IV.
    public static let eciesEncryptionCofactorX963SHA384AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM")
    /// ECIES: cofactor ECDH, ANSI X9.63 KDF with SHA512, AES-GCM with a zero IV.
    public static let eciesEncryptionCofactorX963SHA512AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM")
    /// ECIES: ECDH, ANSI X9.63 KDF with SHA224, AES-GCM with the IV from the KDF.
    public static let eciesEncryptionStandardVariableIVX963SHA224AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM-KDFIV")
    /// ECIES: ECDH, ANSI X9.63 KDF with SHA256, AES-GCM with the IV from the KDF.
    public static let eciesEncryptionStandardVariableIVX963SHA256AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM-KDFIV")
    /// ECIES: ECDH, ANSI X9.63 KDF with SHA384, AES-GCM with the IV from the KDF.
    public static let eciesEncryptionStandardVariableIVX963SHA384AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM-KDFIV")
    /// ECIES: ECDH, ANSI X9.63 KDF with SHA512, AES-GCM with the IV from the KDF.
    public static let eciesEncryptionStandardVariableIVX963SHA512AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM-KDFIV")
    /// ECIES: cofactor ECDH, ANSI X9.63 KDF with SHA224, AES-GCM with the IV from the KDF.
    public static let eciesEncryptionCofactorVariableIVX963SHA224AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM-KDFIV")
    /// ECIES: cofactor ECDH, ANSI X9.63 KDF with SHA256, AES-GCM with the IV from the KDF.
    public static let eciesEncryptionCofactorVariableIVX963SHA256AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV")
    /// ECIES: cofactor ECDH, ANSI X9.63 KDF with SHA384, AES-GCM with the IV from the KDF.
    public static let eciesEncryptionCofactorVariableIVX963SHA384AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM-KDFIV")
    /// ECIES: cofactor ECDH, ANSI X9.63 KDF with SHA512, AES-GCM with the IV from the KDF.
    public static let eciesEncryptionCofactorVariableIVX963SHA512AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM-KDFIV")
    /// ECDH: the shared secret itself.
    public static let ecdhKeyExchangeStandard = SecKeyAlgorithm("algid:keyexchange:ECDH")
    /// ECDH, then the ANSI X9.63 KDF with SHA1.
    public static let ecdhKeyExchangeStandardX963SHA1 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA1")
    /// ECDH, then the ANSI X9.63 KDF with SHA224.
    public static let ecdhKeyExchangeStandardX963SHA224 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA224")
    /// ECDH, then the ANSI X9.63 KDF with SHA256.
    public static let ecdhKeyExchangeStandardX963SHA256 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA256")
    /// ECDH, then the ANSI X9.63 KDF with SHA384.
    public static let ecdhKeyExchangeStandardX963SHA384 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA384")
    /// ECDH, then the ANSI X9.63 KDF with SHA512.
    public static let ecdhKeyExchangeStandardX963SHA512 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA512")
    /// Cofactor ECDH: the shared secret itself.
    public static let ecdhKeyExchangeCofactor = SecKeyAlgorithm("algid:keyexchange:ECDHC")
    /// Cofactor ECDH, then the ANSI X9.63 KDF with SHA1.
    public static let ecdhKeyExchangeCofactorX963SHA1 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA1")
    /// Cofactor ECDH, then the ANSI X9.63 KDF with SHA224.
    public static let ecdhKeyExchangeCofactorX963SHA224 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA224")
    /// Cofactor ECDH, then the ANSI X9.63 KDF with SHA256.
    public static let ecdhKeyExchangeCofactorX963SHA256 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA256")
    /// Cofactor ECDH, then the ANSI X9.63 KDF with SHA384.
    public static let ecdhKeyExchangeCofactorX963SHA384 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA384")
    /// Cofactor ECDH, then the ANSI X9.63 KDF with SHA512.
    public static let ecdhKeyExchangeCofactorX963SHA512 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA512")
}

/// Apple's `SecKeyOperationType`: what `SecKeyIsAlgorithmSupported` asks about.
public enum SecKeyOperationType: Int, Sendable, Hashable {
    /// `SecKeyCreateSignature` (private keys).
    case sign = 0
    /// `SecKeyVerifySignature` (public keys).
    case verify = 1
    /// `SecKeyCreateEncryptedData` (public keys).
    case encrypt = 2
    /// `SecKeyCreateDecryptedData` (private keys).
    case decrypt = 3
    /// `SecKeyCopyKeyExchangeResult` (private keys).
    case keyExchange = 4
}
