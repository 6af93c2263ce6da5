import Foundation
import SecItemCore

/// Keys as keychain items (issue 25): `kSecValueRef` adds, `kSecReturnRef` finds, the
/// derived attributes and primary key, non-extractable keys. The kit depends on the core
/// only, so its keys are fixed P-256 keys (made with `openssl ecparam`, their application
/// labels the SHA-1 of the public point, computed outside): no libcrypto needed here.
enum KeyCases {
    static func fixture(_ hex: String, label: String, attributes: [String: AttributeValue] = [:]) -> SecKey {
        let data = bytes(hex)
        return SecKey(
            kind: .ec, isPrivate: true, sizeInBits: 256, keyData: data, publicKeyData: data.prefix(65),
            applicationLabel: bytes(label), attributes: attributes)
    }

    static func bytes(_ hex: String) -> Data {
        var out = Data()
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    static let first = fixture(
        "04677e98fa4c8c83e7119bc03a8f4e6ecd1c97ba667a53236c507f209c7b52e110357a6f6da7d3c875d0ed57655158bbb327c5458dbeb4c7ad51c5113dbbbdb91b7016cd02ec5c26fe7e10c09fcf2c69686d7fe161b069b3f663cc9ea9945fa803",
        label: "0aecf881cf383325509d61c9d88a83d8cbaebc83")
    static let second = fixture(
        "04a8559bcc57264775a836564c2c00934df891b896dc881f78a2c749060c320fad09d9d04baf7eee09886f6d40b6945f014fa9b921345215d8d2e3b08cc7d441411f5724e7105c0487197465b26511facf8f40b7a57757126774acf639d3ad506c",
        label: "b9bd285f47c948811ab9541221ddbb07b15f2756")

    static let tag = Data("com.example.device-key".utf8)

    static func addKey(_ c: ConformanceContext, _ key: SecKey, _ extra: [String: Any] = [:]) -> OSStatus {
        var q: [String: Any] = [
            kSecClass as String: kSecClassKey, kSecValueRef as String: key, kSecAttrApplicationTag as String: tag,
        ]
        q.merge(extra) { _, new in new }
        return c.add(q)
    }

    static let all: [ConformanceCase] = [
        ConformanceCase("keys: kSecValueRef add, found by tag with kSecReturnRef, derived attributes") { c in
            try c.expectStatus(addKey(c, first, [kSecAttrLabel as String: "device key"]), errSecSuccess, "add key")
            let (status, found) = c.copy([
                kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag,
                kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
                kSecAttrKeySizeInBits as String: 256, kSecReturnRef as String: true,
            ])
            try c.expectStatus(status, errSecSuccess, "find by tag, type, class and size")
            guard let key = found as? SecKey else { throw c.fail("kSecReturnRef returns a SecKey, not \(String(describing: found))") }
            try c.expect(key == first, "the key found is the key stored")
            let attributes = try c.attributes([
                kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag,
            ])
            try c.expect(attributes[kSecAttrApplicationLabel as String] as? Data == first.applicationLabel, "klbl is SHA-1 of the public key")
            try c.expect(attributes[kSecAttrKeyClass as String] as? Int == 1, "kcls private")
            try c.expect(attributes[kSecAttrKeyType as String] as? Int == 73, "type 73")
            try c.expect(attributes[kSecAttrKeySizeInBits as String] as? Int == 256, "bsiz 256")
            try c.expect(attributes[kSecAttrLabel as String] as? String == "device key", "label")
            try c.expect(attributes[kSecAttrCanSign as String] as? Int == 1, "can sign")
            // By label, with the ref and the persistent ref together.
            let (s2, both) = c.copy([
                kSecClass as String: kSecClassKey, kSecAttrLabel as String: "device key", kSecReturnRef as String: true,
                kSecReturnPersistentRef as String: true,
            ])
            try c.expectStatus(s2, errSecSuccess, "find by label")
            let dict = both as? [String: Any]
            try c.expect(dict?[kSecValueRef as String] as? SecKey == first, "v_Ref in the dictionary")
            try c.expect((dict?[kSecValuePersistentRef as String] as? Data)?.count == 20, "v_PersistentRef in the dictionary")
            // The ref finds and deletes its own item.
            try c.expectStatus(c.delete([kSecValueRef as String: first]), errSecSuccess, "delete by kSecValueRef")
            try c.expectStatus(c.copy([kSecClass as String: kSecClassKey, kSecReturnRef as String: true]).0, errSecItemNotFound, "gone")
        },
        ConformanceCase("keys: duplicates by application label and tag; other keys and tags coexist") { c in
            try c.expectStatus(addKey(c, first), errSecSuccess, "add")
            try c.expectRejected(errSecDuplicateItem, "same key, same tag, other label") {
                addKey(c, first, [kSecAttrLabel as String: "other"])
            }
            try c.expectStatus(addKey(c, first, [kSecAttrApplicationTag as String: Data("other-tag".utf8)]), errSecSuccess, "same key, other tag")
            try c.expectStatus(addKey(c, second), errSecSuccess, "other key, same tag")
            let (status, all) = c.copy([
                kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag, kSecReturnRef as String: true,
                kSecMatchLimit as String: kSecMatchLimitAll,
            ])
            try c.expectStatus(status, errSecSuccess, "find all with tag")
            let keys = all as? [SecKey] ?? []
            try c.expect(Set(keys) == [first, second], "both keys with the tag come back as SecKeys")
            try c.expect(try c.count([kSecClass as String: kSecClassKey]) == 3, "three key items")
        },
        ConformanceCase("keys: kSecReturnData is the X9.63 key; non-extractable keys refuse it") { c in
            try c.expectStatus(addKey(c, first), errSecSuccess, "add")
            let (status, data) = c.copy([kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag, kSecReturnData as String: true])
            try c.expectStatus(status, errSecSuccess, "data of an extractable key")
            try c.expect(data as? Data == first.keyData, "the external representation")
            let before = try c.snapshot()
            try c.expectStatus(
                addKey(c, second, [kSecAttrIsExtractable as String: false]), errSecSuccess, "add non-extractable")
            let (refused, nothing) = c.copy([
                kSecClass as String: kSecClassKey, kSecAttrApplicationLabel as String: second.applicationLabel, kSecReturnData as String: true,
            ])
            try c.expectStatus(refused, errSecInteractionNotAllowed, "no data for a non-extractable key")
            try c.expect(nothing == nil, "nothing returned")
            let (ok, ref) = c.copy([
                kSecClass as String: kSecClassKey, kSecAttrApplicationLabel as String: second.applicationLabel, kSecReturnRef as String: true,
            ])
            try c.expectStatus(ok, errSecSuccess, "a ref to a non-extractable key")
            try c.expect((ref as? SecKey)?.isExtractable == false, "the ref knows it is not extractable")
            try c.expect(try c.snapshot().count == before.count + 1, "one more item")
        },
        ConformanceCase("keys: a kSecValueRef of the wrong class or type is errSecParam, nothing stored") { c in
            let before = try c.snapshot()
            try c.expectRejected(errSecParam, "SecKey as a generic password") {
                c.add([kSecClass as String: kSecClassGenericPassword, kSecValueRef as String: first])
            }
            try c.expectRejected(errSecParam, "a string as kSecValueRef") {
                c.add([kSecClass as String: kSecClassKey, kSecValueRef as String: "not a key"])
            }
            try c.expect(try c.snapshot() == before, "the store is unchanged")
        },
    ]
}
