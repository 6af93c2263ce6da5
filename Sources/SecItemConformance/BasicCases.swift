import SecItemCore
import Foundation

/// Primary keys, duplicates, the four calls' basic statuses.
enum BasicCases {
    static let all: [ConformanceCase] = [
        ConformanceCase("add, read, update, delete round trip") { c in
            try c.addGenp("svc", "alice", data: Data("pw1".utf8))
            var (status, data) = c.readData("svc", "alice")
            try c.expectStatus(status, errSecSuccess, "read after add")
            try c.expect(data == Data("pw1".utf8), "read returns the stored data")
            try c.expectStatus(
                c.update(c.genp("svc", "alice"), [kSecValueData as String: Data("pw2".utf8)]), errSecSuccess, "update")
            (status, data) = c.readData("svc", "alice")
            try c.expect(data == Data("pw2".utf8), "read returns the updated data")
            try c.expectStatus(c.delete(c.genp("svc", "alice")), errSecSuccess, "delete")
            try c.expectStatus(c.readData("svc", "alice").0, errSecItemNotFound, "read after delete")
        },
        ConformanceCase("genp primary key is service + account; label and accessibility are not in it") { c in
            try c.addGenp("svc", "alice", [kSecAttrLabel as String: "one", kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked])
            try c.expectRejected(errSecDuplicateItem, "same service/account, other label and accessibility") {
                c.add(c.genp("svc", "alice", [
                    kSecAttrLabel as String: "two", kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock,
                    kSecAttrComment as String: "c", kSecAttrGeneric as String: Data([1]),
                    kSecValueData as String: Data("other".utf8),
                ]))
            }
            try c.addGenp("svc", "bob")
            try c.addGenp("svc2", "alice")
            // A missing attribute counts as its default: "" for strings.
            try c.expectStatus(c.add([kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "only"]), errSecSuccess, "service only")
            try c.expectRejected(errSecDuplicateItem, "service only, account given as empty string") {
                c.add(c.genp("only", ""))
            }
            try c.expect(try c.count([kSecClass as String: kSecClassGenericPassword]) == 4, "four items")
        },
        ConformanceCase("inet primary key covers server, protocol, port, path, domain, auth type") { c in
            let base: [String: Any] = [
                kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "example.com",
                kSecAttrAccount as String: "alice", kSecAttrProtocol as String: kSecAttrProtocolHTTPS,
                kSecAttrPort as String: 443, kSecAttrPath as String: "/login",
                kSecAttrSecurityDomain as String: "realm", kSecAttrAuthenticationType as String: kSecAttrAuthenticationTypeHTMLForm,
            ]
            try c.expectStatus(c.add(base), errSecSuccess, "add inet")
            try c.expectRejected(errSecDuplicateItem, "same inet key, other label") {
                c.add(base.merging([kSecAttrLabel as String: "x"]) { $1 })
            }
            let variants: [(String, Any)] = [
                (kSecAttrServer as String, "other.com"), (kSecAttrAccount as String, "bob"),
                (kSecAttrProtocol as String, kSecAttrProtocolHTTP), (kSecAttrPort as String, 8443),
                (kSecAttrPath as String, "/other"), (kSecAttrSecurityDomain as String, "realm2"),
                (kSecAttrAuthenticationType as String, kSecAttrAuthenticationTypeHTTPBasic),
            ]
            for (key, value) in variants {
                try c.expectStatus(c.add(base.merging([key: value]) { $1 }), errSecSuccess, "inet differing in \(key)")
            }
            try c.expect(try c.count([kSecClass as String: kSecClassInternetPassword]) == 8, "eight inet items")
        },
        ConformanceCase("cert and keys primary keys") { c in
            let cert: [String: Any] = [
                kSecClass as String: kSecClassCertificate, kSecAttrCertificateType as String: 1,
                kSecAttrIssuer as String: Data("issuer".utf8), kSecAttrSerialNumber as String: Data([1, 2, 3]),
                kSecValueData as String: Data("DER".utf8),
            ]
            try c.expectStatus(c.add(cert), errSecSuccess, "add cert")
            try c.expectRejected(errSecDuplicateItem, "same cert key, other label") {
                c.add(cert.merging([kSecAttrLabel as String: "x", kSecAttrSubject as String: Data("s".utf8)]) { $1 })
            }
            try c.expectStatus(
                c.add(cert.merging([kSecAttrSerialNumber as String: Data([9])]) { $1 }), errSecSuccess, "other serial")
            let key: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
                kSecAttrApplicationTag as String: Data("com.example.key".utf8), kSecAttrKeyType as String: kSecAttrKeyTypeEC,
                kSecAttrKeySizeInBits as String: 256, kSecValueData as String: Data(repeating: 7, count: 32),
            ]
            try c.expectStatus(c.add(key), errSecSuccess, "add key")
            try c.expectRejected(errSecDuplicateItem, "same key primary key, other label") {
                c.add(key.merging([kSecAttrLabel as String: "x", kSecAttrCanSign as String: true]) { $1 })
            }
            try c.expectStatus(
                c.add(key.merging([kSecAttrKeySizeInBits as String: 384]) { $1 }), errSecSuccess, "other key size")
            try c.expect(try c.count([kSecClass as String: kSecClassKey]) == 2, "two keys")
            try c.expect(try c.count([kSecClass as String: kSecClassCertificate]) == 2, "two certs")
        },
        ConformanceCase("identity class: added only as a SecIdentity; none stored is errSecItemNotFound") { c in
            try c.expectRejected(errSecParam, "add identity without kSecValueRef") {
                c.add([kSecClass as String: kSecClassIdentity, kSecAttrLabel as String: "x"])
            }
            try c.expectStatus(c.copy([kSecClass as String: kSecClassIdentity]).0, errSecItemNotFound, "search identity")
            try c.expectRejected(errSecUnimplemented, "update identity") {
                c.update([kSecClass as String: kSecClassIdentity], [kSecAttrLabel as String: "y"])
            }
        },
        ConformanceCase("classes are separate: the same attributes in genp and inet do not collide") { c in
            try c.addGenp("s", "a")
            try c.expectStatus(
                c.add([kSecClass as String: kSecClassInternetPassword, kSecAttrAccount as String: "a"]), errSecSuccess,
                "inet with the same account")
            try c.expect(try c.count([kSecClass as String: kSecClassGenericPassword]) == 1, "one genp")
        },
        ConformanceCase("an over-specified query finds nothing while the add collides") { c in
            try c.addGenp("svc", "alice", [kSecAttrLabel as String: "label", kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock])
            try c.expectStatus(
                c.readData("svc", "alice", [kSecAttrLabel as String: "other"]).0, errSecItemNotFound, "other label")
            try c.expectStatus(
                c.readData("svc", "alice", [kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked]).0,
                errSecItemNotFound, "other accessibility")
            try c.expectStatus(
                c.readData("svc", "alice", [kSecAttrLabel as String: "label"]).0, errSecSuccess, "the right label")
            try c.expectStatus(c.add(c.genp("svc", "alice", [kSecAttrLabel as String: "other"])), errSecDuplicateItem, "add collides")
        },
        ConformanceCase("kSecValueData in a search does not filter") { c in
            try c.addGenp("svc", "alice", data: Data("right".utf8))
            let (status, data) = c.readData("svc", "alice", [kSecValueData as String: Data("wrong".utf8)])
            try c.expectStatus(status, errSecSuccess, "search with other data")
            try c.expect(data == Data("right".utf8), "the stored data comes back")
        },
        ConformanceCase("not found leaves the result untouched; a nil result pointer is allowed") { c in
            var result: AnyObject? = "sentinel" as AnyObject
            let status = c.client.copyMatching(c.genp("none", "none", [kSecReturnData as String: true]), &result)
            try c.expectStatus(status, errSecItemNotFound, "missing item")
            try c.expect((result as? String) == "sentinel", "result untouched on failure")
            try c.addGenp("s", "a")
            try c.expectStatus(c.client.copyMatching(c.genp("s", "a", [kSecReturnData as String: true]), nil), errSecSuccess, "nil result pointer")
            try c.expectStatus(c.client.add(c.genp("s", "b", [kSecReturnData as String: true]), nil), errSecSuccess, "add with nil result pointer")
        },
    ]
}
