public import SecItemSecurity
package import SecItemModel
public import Foundation

/// Apple's `SecKey`: an asymmetric key (elliptic curve P-256/P-384/P-521, or RSA), its
/// public or private half, with the attributes it was made or stored with.
///
/// On Linux a `SecKey` holds the key in Apple's external representation (ANSI X9.63 for
/// elliptic-curve keys, PKCS #1 DER for RSA; docs/keys.md) and hands it to libcrypto for
/// each operation. The key bytes never appear in its description. A key found in the
/// keychain (`kSecReturnRef`) carries what its item needs before each private-key
/// operation: a key stored with a `SecAccessControl` that asks for user presence asks the
/// access authority (polkit) before every signature, decryption and key exchange, as
/// Apple's keychain asks before each use.
///
/// Made by `SecKeyCreateRandomKey`, `SecKeyCreateWithData`, `SecKeyCopyPublicKey`,
/// `SecCertificateCopyKey`, or a keychain search with `kSecReturnRef`.
public final class SecKey: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The key's algorithm family.
    package enum Kind: Int64, Sendable {
        /// `kSecAttrKeyTypeRSA` (42).
        case rsa = 42
        /// `kSecAttrKeyTypeECSECPrimeRandom` (73).
        case ec = 73
    }

    package let kind: Kind
    /// A private key (`kSecAttrKeyClassPrivate`), else a public key.
    package let isPrivate: Bool
    /// The curve's size (256, 384, 521) or the modulus' (2048, …).
    package let sizeInBits: Int
    /// Apple's external representation of this key (of the private key, for a private key).
    package let keyData: Data
    /// Apple's external representation of the public half, when known without libcrypto
    /// (an RSA private key read from the keychain has it only inside its DER).
    package let publicKeyData: Data?
    /// `kSecAttrApplicationLabel`: SHA-1 of the public key's external representation, as Apple derives it.
    package let applicationLabel: Data
    /// The attributes the key was made or stored with (`atag`, `labl`, `perm`, `extr`,
    /// `agrp`, `pdmn`, `accc`, …), as the keychain stores them.
    package let attributes: [String: AttributeValue]
    /// Who is asked before a private-key operation (set for keys from the keychain).
    package let authority: (any AccessAuthority)?

    package init(
        kind: Kind, isPrivate: Bool, sizeInBits: Int, keyData: Data, publicKeyData: Data?, applicationLabel: Data,
        attributes: [String: AttributeValue] = [:], authority: (any AccessAuthority)? = nil
    ) {
        self.kind = kind
        self.isPrivate = isPrivate
        self.sizeInBits = sizeInBits
        self.keyData = keyData
        self.publicKeyData = publicKeyData
        self.applicationLabel = applicationLabel
        self.attributes = attributes
        self.authority = authority
    }

    /// The same key with other attributes (and, from the keychain, an authority).
    package func with(attributes: [String: AttributeValue], authority: (any AccessAuthority)?) -> SecKey {
        SecKey(
            kind: kind, isPrivate: isPrivate, sizeInBits: sizeInBits, keyData: keyData, publicKeyData: publicKeyData,
            applicationLabel: applicationLabel, attributes: attributes, authority: authority)
    }

    /// `kSecAttrIsExtractable`: absent counts as extractable, as on Apple platforms.
    package var isExtractable: Bool { (attributes[SecConstant.kSecAttrIsExtractable]?.numberValue ?? 1) != 0 }

    /// The attributes Apple derives from a key and stores with it: class, type, sizes,
    /// application label, and what the key may do.
    package var derivedAttributes: [String: AttributeValue] {
        let yes = AttributeValue.number(1)
        let no = AttributeValue.number(0)
        let ec = kind == .ec
        var out: [String: AttributeValue] = [
            SecConstant.kSecAttrKeyClass: .number(isPrivate ? 1 : 0),
            SecConstant.kSecAttrKeyType: .number(kind.rawValue),
            SecConstant.kSecAttrKeySizeInBits: .number(Int64(sizeInBits)),
            SecConstant.kSecAttrEffectiveKeySize: .number(Int64(sizeInBits)),
            SecConstant.kSecAttrApplicationLabel: .data(applicationLabel),
            SecConstant.kSecAttrCanSign: isPrivate ? yes : no,
            SecConstant.kSecAttrCanVerify: isPrivate ? no : yes,
            SecConstant.kSecAttrCanDecrypt: isPrivate ? yes : no,
            SecConstant.kSecAttrCanEncrypt: isPrivate ? no : yes,
            SecConstant.kSecAttrCanDerive: isPrivate && ec ? yes : no,
            SecConstant.kSecAttrCanWrap: isPrivate ? no : yes,
            SecConstant.kSecAttrCanUnwrap: isPrivate ? yes : no,
            SecConstant.kSecAttrIsPrivate: isPrivate ? yes : no,
            SecConstant.kSecAttrIsModifiable: yes,
            SecConstant.kSecAttrIsSensitive: no,
            SecConstant.kSecAttrWasAlwaysSensitive: no,
            SecConstant.kSecAttrWasNeverExtractable: no,
            SecConstant.kSecAttrCanSignRecover: no,
            SecConstant.kSecAttrCanVerifyRecover: no,
        ]
        if attributes[SecConstant.kSecAttrIsExtractable] == nil { out[SecConstant.kSecAttrIsExtractable] = yes }
        return out
    }

    /// The key as a keychain item's attributes and data: ``attributes`` over ``derivedAttributes``.
    package var itemAttributes: [String: AttributeValue] {
        derivedAttributes.merging(attributes) { derived, _ in derived }
    }

    /// Keys are equal when they are the same half of the same key.
    public static func == (lhs: SecKey, rhs: SecKey) -> Bool {
        lhs.isPrivate == rhs.isPrivate && lhs.kind == rhs.kind && lhs.keyData == rhs.keyData
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(isPrivate)
        hasher.combine(applicationLabel)
    }

    /// Type, class and size, as Apple describes a key; never the key bytes.
    public var description: String {
        let type = kind == .ec ? "ECSECPrimeRandom" : "RSA"
        return "<SecKeyRef \(type) \(isPrivate ? "private" : "public") key, block size: \(sizeInBits) bits>"
    }

    public var debugDescription: String { description }
}

extension SecKey: CustomReflectable {
    /// No children: `dump(key)` and debuggers' reflection show the description, never the key bytes.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .class) }
}

/// The key of a private-key operation, checked with its item's access control: a key
/// from the keychain whose `SecAccessControl` asks for user presence asks ``SecKey/authority``
/// (once per operation); a `WhenUnlocked` key needs an unlocked session. A key made in
/// code (no authority) is used as it is.
extension SecKey {
    package func authorizeUse(prompt: String? = nil) throws(SecItemError) {
        guard isPrivate, let authority else { return }
        let item = StoredItem(itemClass: .key, id: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), attributes: attributes, data: nil)
        _ = try AccessGate.release([item], authenticationUI: .allow, prompt: prompt, authority: authority)
    }
}

/// `kSecPrivateKeyAttrs`: in `SecKeyCreateRandomKey`'s parameters, the private key's own attributes.
nonisolated(unsafe) public let kSecPrivateKeyAttrs: CFString = "private"
/// `kSecPublicKeyAttrs`: in `SecKeyCreateRandomKey`'s parameters, the public key's own attributes.
nonisolated(unsafe) public let kSecPublicKeyAttrs: CFString = "public"
/// `kSecKeyKeyExchangeParameterRequestedSize`: the bytes an X9.63 key exchange derives.
nonisolated(unsafe) public let kSecKeyKeyExchangeParameterRequestedSize: CFString = "requestedSize"
/// `kSecKeyKeyExchangeParameterSharedInfo`: the X9.63 KDF's shared info.
nonisolated(unsafe) public let kSecKeyKeyExchangeParameterSharedInfo: CFString = "sharedInfo"
