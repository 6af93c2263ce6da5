import SecItemSecurity
package import SecItemModel
import Foundation

/// A keychain object given as `kSecValueRef` or returned for `kSecReturnRef`.
package enum ItemReference: Sendable {
    case key(SecKey)
    case certificate(SecCertificate)
    case identity(SecIdentity)

    var typeName: String {
        switch self {
        case .key: return "SecKey"
        case .certificate: return "SecCertificate"
        case .identity: return "SecIdentity"
        }
    }

    /// The class of the items this object is stored as.
    var itemClass: ItemClass {
        switch self {
        case .key: return .key
        case .certificate: return .certificate
        case .identity: return .identity
        }
    }
}

/// The attributes Apple derives from a certificate's DER: the caller cannot override them.
private let fixedCertificateAttributes: Set<String> = [
    SecConstant.kSecAttrCertificateType, SecConstant.kSecAttrCertificateEncoding, SecConstant.kSecAttrSubject,
    SecConstant.kSecAttrIssuer, SecConstant.kSecAttrSerialNumber, SecConstant.kSecAttrSubjectKeyID,
    SecConstant.kSecAttrPublicKeyHash,
]

/// The attributes an object's derived values fix: the caller cannot override them.
private let fixedKeyAttributes: Set<String> = [
    SecConstant.kSecAttrKeyClass, SecConstant.kSecAttrKeyType, SecConstant.kSecAttrKeySizeInBits,
    SecConstant.kSecAttrEffectiveKeySize,
]

/// What the core keeps of an object's own attributes (the group, the dates and the
/// synchronizable flag are the request's).
private let requestOwnedAttributes: Set<String> = [
    SecConstant.kSecAttrAccessGroup, SecConstant.kSecAttrSynchronizable, SecConstant.kSecAttrCreationDate,
    SecConstant.kSecAttrModificationDate,
]

extension ClientRequest {
    /// Folds `kSecValueRef` into the request: an add stores the object's data and
    /// derived attributes under the caller's; a search looks for the object's item.
    mutating func apply(_ reference: ItemReference, role: Role, classGiven: Bool) throws(SecItemError) {
        if let itemClass, itemClass != reference.itemClass {
            throw SecItemError(
                errSecParam, "kSecValueRef is a \(reference.typeName), but kSecClass is '\(itemClass.rawValue)'")
        }
        itemClass = reference.itemClass
        switch reference {
        case .key(let key):
            switch role {
            case .add:
                var merged = key.itemAttributes.filter { !requestOwnedAttributes.contains($0.key) }
                for (name, value) in attributes where !fixedKeyAttributes.contains(name) { merged[name] = value }
                attributes = merged
                data = key.keyData
            case .search, .modifyQuery:
                attributes[SecConstant.kSecAttrKeyClass] = .number(key.isPrivate ? 1 : 0)
                attributes[SecConstant.kSecAttrApplicationLabel] = .data(key.applicationLabel)
                attributes[SecConstant.kSecAttrKeyType] = .number(key.kind.rawValue)
            case .changes:
                return
            }
        case .certificate(let certificate):
            certificateRequest(certificate, role: role)
        case .identity(let identity):
            // An identity is stored as its certificate and its private key (SecItemClient
            // adds both); a search looks for its certificate.
            certificateRequest(identity.certificate, role: role)
        }
    }

    private mutating func certificateRequest(_ certificate: SecCertificate, role: Role) {
        switch role {
        case .add:
            var merged = certificate.derivedAttributes
            for (name, value) in attributes where !fixedCertificateAttributes.contains(name) { merged[name] = value }
            attributes = merged
            data = certificate.der
        case .search, .modifyQuery:
            for name in [SecConstant.kSecAttrCertificateType, SecConstant.kSecAttrIssuer, SecConstant.kSecAttrSerialNumber] {
                attributes[name] = certificate.derivedAttributes[name]
            }
        case .changes:
            return
        }
    }
}

extension SecKey {
    /// The key a stored key item holds, or `nil` when the item is not one this
    /// keychain can make a `SecKey` of (no data, an unknown type).
    package static func fromItem(_ item: StoredItem, authority: (any AccessAuthority)?) -> SecKey? {
        guard item.itemClass == .key, let data = item.data, !data.isEmpty,
            let kind = Kind(rawValue: item.attributes[SecConstant.kSecAttrKeyType]?.numberValue ?? 0),
            let keyClass = item.attributes[SecConstant.kSecAttrKeyClass]?.numberValue, keyClass == 0 || keyClass == 1,
            let bits = item.attributes[SecConstant.kSecAttrKeySizeInBits]?.numberValue, bits > 0
        else { return nil }
        let isPrivate = keyClass == 1
        var publicData: Data? = isPrivate ? nil : data
        if isPrivate, kind == .ec {
            let field = (Int(bits) + 7) / 8
            if data.count == 1 + 3 * field { publicData = data.prefix(1 + 2 * field) }
        }
        var label = Data()
        if case .data(let d)? = item.attributes[SecConstant.kSecAttrApplicationLabel] { label = d }
        return SecKey(
            kind: kind, isPrivate: isPrivate, sizeInBits: Int(bits), keyData: data, publicKeyData: publicData,
            applicationLabel: label, attributes: item.attributes, authority: authority)
    }
}

extension SecKey {
    /// `SecKeyCopyAttributes`: the key's item attributes as `SecItemCopyMatching` returns them
    /// (a `SecAccessControl` object for `kSecAttrAccessControl`), `kSecClass`, and `kSecValueData`
    /// (the external representation) for an extractable key.
    package var attributeDictionary: [String: Any] {
        let item = StoredItem(
            itemClass: .key, id: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), attributes: itemAttributes, data: nil)
        var out = ResultShaper.attributes(of: item)
        out[SecConstant.kSecClass] = SecConstant.kSecClassKey
        if !isPrivate || isExtractable { out[SecConstant.kSecValueData] = keyData }
        return out
    }
}
