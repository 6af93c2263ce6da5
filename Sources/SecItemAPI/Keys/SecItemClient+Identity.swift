package import SecItemSecurity
package import SecItemModel
import Foundation

/// `kSecClassIdentity`: a certificate item paired with the private-key item whose
/// `kSecAttrApplicationLabel` is the certificate's `kSecAttrPublicKeyHash` (SHA-1 of the
/// public key), as Apple's keychain joins them. Nothing is stored as an identity: an add
/// stores the certificate and the key, a delete removes both.
extension SecItemClient {
    /// One identity found: its certificate item and its private-key item.
    package struct IdentityMatch: Sendable {
        package var certificate: StoredItem
        package var key: StoredItem
    }

    /// The request of the certificate half (the attributes a certificate has) and the key
    /// half (the key's own attributes that a certificate does not have).
    private func halves(_ request: ClientRequest) -> (certificate: ClientRequest, key: ClientRequest) {
        var certificate = request
        certificate.itemClass = .certificate
        certificate.reference = nil
        certificate.attributes = request.attributes.filter { ItemClass.certificate.attributeKeys.contains($0.key) }
        var key = ClientRequest(.key, accessGroup: request.accessGroup, synchronizable: request.synchronizable)
        key.attributes = request.attributes.filter {
            ItemClass.key.attributeKeys.contains($0.key) && !ItemClass.certificate.attributeKeys.contains($0.key)
        }
        key.caseInsensitive = request.caseInsensitive
        key.attributes[SecConstant.kSecAttrKeyClass] = .number(1)
        return (certificate, key)
    }

    /// The identities `request` matches, at most its limit's count.
    /// - Throws: `errSecItemNotFound` when none.
    package func findIdentities(_ request: ClientRequest) throws(SecItemError) -> [IdentityMatch] {
        try request.validate(.search, entitlements: accessGroups)
        if case .count(0) = request.limit { throw SecItemError(errSecItemNotFound, "kSecMatchLimit is 0") }
        let (certificateRequest, keyRequest) = halves(request)
        let certificates = try backend.fetch(matching: try makeQuery(certificateRequest), limit: nil)
        var found: [IdentityMatch] = []
        for certificate in certificates {
            if let limit = request.limit.fetchLimit, found.count >= limit { break }
            guard case .data(let hash)? = certificate.attributes[SecConstant.kSecAttrPublicKeyHash], !hash.isEmpty else { continue }
            var keyQuery = keyRequest
            keyQuery.attributes[SecConstant.kSecAttrApplicationLabel] = .data(hash)
            keyQuery.accessGroup = keyRequest.accessGroup
            guard let key = try backend.fetch(matching: try makeQuery(keyQuery), limit: 1).first else { continue }
            found.append(IdentityMatch(certificate: certificate, key: key))
        }
        guard !found.isEmpty else { throw SecItemError(errSecItemNotFound) }
        if request.returns.data {
            // kSecReturnData of an identity is its certificate's DER; the key's data is
            // released only through its own class (and the access gate).
            _ = try AccessGate.release(
                found.map(\.certificate), authenticationUI: request.authenticationUI, prompt: request.operationPrompt,
                authority: accessAuthority)
        }
        return found
    }

    /// `SecItemCopyMatching` of `kSecClassIdentity`: `kSecReturnRef` gives `SecIdentity`s,
    /// `kSecReturnAttributes` the certificate's attributes with the key's own added,
    /// `kSecReturnPersistentRef` the certificate's, `kSecReturnData` the certificate's DER.
    func copyIdentities(_ request: ClientRequest) throws(SecItemError) -> Any? {
        let matches = try findIdentities(request)
        let shaped = matches.map { match -> Any? in
            var out: [String: Any] = [:]
            let returns = request.returns
            if returns.attributes {
                out = ResultShaper.attributes(of: match.key).filter { $0.key != SecConstant.kSecAttrAccessControl }
                out.merge(ResultShaper.attributes(of: match.certificate)) { _, certificate in certificate }
                out[SecConstant.kSecClass] = SecConstant.kSecClassIdentity
            }
            if returns.data { out[SecConstant.kSecValueData] = match.certificate.data }
            if returns.persistentRef { out[SecConstant.kSecValuePersistentRef] = match.certificate.persistentReference }
            if returns.ref { out[SecConstant.kSecValueRef] = makeIdentity(match) }
            switch returns.count {
            case 0: return nil
            case 1 where returns.attributes: return out
            case 1 where returns.data: return out[SecConstant.kSecValueData]
            case 1 where returns.persistentRef: return out[SecConstant.kSecValuePersistentRef]
            case 1: return out[SecConstant.kSecValueRef]
            default: return out
            }
        }
        if request.limit.returnsArray { return shaped.compactMap { $0 } }
        return shaped.first ?? nil
    }

    /// The `SecIdentity` of a match, its key asking this client's authority before use.
    package func makeIdentity(_ match: IdentityMatch) -> SecIdentity? {
        guard let certificate = SecCertificate.fromItem(match.certificate),
            let key = SecKey.fromItem(match.key, authority: accessAuthority)
        else { return nil }
        return SecIdentity(certificate: certificate, privateKey: key)
    }

    /// `SecItemAdd` of a `SecIdentity`: its private key, then its certificate; when the
    /// certificate fails, the key added here is removed again (nothing half-stored). A key
    /// already in the keychain (the same key, tag and group) is shared, not duplicated.
    func addIdentity(_ request: ClientRequest) throws(SecItemError) -> Any? {
        guard case .identity(let identity)? = request.reference else {
            throw SecItemError(errSecParam, "an identity is added as kSecValueRef of a SecIdentity")
        }
        var keyRequest = ClientRequest(.key, accessGroup: request.accessGroup, synchronizable: request.synchronizable)
        keyRequest.reference = .key(identity.privateKey)
        for name in [SecConstant.kSecAttrAccessible, SecConstant.kSecAttrAccessControl, SecConstant.kSecAttrApplicationTag]
        where request.attributes[name] != nil {
            keyRequest.attributes[name] = request.attributes[name]
        }
        try keyRequest.apply(.key(identity.privateKey), role: .add, classGiven: true)
        var certificateRequest = request
        certificateRequest.itemClass = .certificate
        certificateRequest.attributes = request.attributes.filter { ItemClass.certificate.attributeKeys.contains($0.key) }
        certificateRequest.reference = nil
        try certificateRequest.apply(.certificate(identity.certificate), role: .add, classGiven: true)
        var addedKey: StoredItem?
        do {
            addedKey = try add(keyRequest)
        } catch SecItemError.duplicateItem {
            addedKey = nil
        }
        let certificate: StoredItem
        do {
            certificate = try add(certificateRequest)
        } catch {
            if let addedKey { _ = try? backend.delete(matching: ItemQuery(id: addedKey)) }
            throw error
        }
        guard request.returns.count > 0 else { return nil }
        var keyItem = addedKey
        if keyItem == nil {
            var keyQuery = ClientRequest(.key, accessGroup: request.accessGroup)
            try keyQuery.apply(.key(identity.privateKey), role: .search, classGiven: true)
            keyItem = try backend.fetch(matching: try makeQuery(keyQuery), limit: 1).first
        }
        guard let keyItem else { return nil }
        let match = IdentityMatch(certificate: certificate, key: keyItem)
        if request.returns.count == 1 {
            if request.returns.ref { return makeIdentity(match) }
            if request.returns.persistentRef { return certificate.persistentReference }
            if request.returns.data { return certificate.data }
            return ResultShaper.attributes(of: certificate)
        }
        var out = request.returns.attributes ? ResultShaper.attributes(of: certificate) : [:]
        if request.returns.ref { out[SecConstant.kSecValueRef] = makeIdentity(match) }
        if request.returns.persistentRef { out[SecConstant.kSecValuePersistentRef] = certificate.persistentReference }
        if request.returns.data { out[SecConstant.kSecValueData] = certificate.data }
        return out
    }

    /// `SecItemDelete` of `kSecClassIdentity`: each matching identity's certificate and key.
    func deleteIdentities(_ request: ClientRequest) throws(SecItemError) -> Int {
        var all = request
        all.limit = .all
        let matches = try findIdentities(all)
        for match in matches {
            _ = try backend.delete(matching: ItemQuery(id: match.certificate))
            _ = try backend.delete(matching: ItemQuery(id: match.key))
        }
        return matches.count
    }
}

extension ItemQuery {
    /// The query of exactly `item` (by its persistent reference), in its own group.
    init(id item: StoredItem) {
        self.init(
            itemClass: item.itemClass, persistentReferenceID: item.id, accessGroups: [item.accessGroup],
            synchronizable: .any, caseInsensitive: false, allowsInteraction: false)
    }
}
