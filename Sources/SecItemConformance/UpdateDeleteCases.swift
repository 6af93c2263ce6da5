import SecItemCore
import Foundation

/// SecItemUpdate and SecItemDelete (contract §5).
enum UpdateDeleteCases {
    static let all: [ConformanceCase] = [
        ConformanceCase("update changes every match") { c in
            for a in ["a", "b", "c"] { try c.addGenp("svc", a) }
            try c.addGenp("other", "a")
            try c.expectStatus(
                c.update([kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc"],
                         [kSecAttrLabel as String: "updated", kSecValueData as String: Data("new".utf8)]),
                errSecSuccess, "update three")
            try c.expect(try c.count([kSecClass as String: kSecClassGenericPassword, kSecAttrLabel as String: "updated"]) == 3, "three updated")
            try c.expect(c.readData("svc", "b").1 == Data("new".utf8), "data updated")
            try c.expect(c.readData("other", "a").1 == Data("secret".utf8), "the non-matching item is unchanged")
        },
        ConformanceCase("update collision changes nothing") { c in
            try c.addGenp("svc", "a", data: Data("A".utf8))
            try c.addGenp("svc", "b", data: Data("B".utf8))
            try c.expectRejected(errSecDuplicateItem, "rename a to b") {
                c.update(c.genp("svc", "a"), [kSecAttrAccount as String: "b", kSecValueData as String: Data("X".utf8)])
            }
            try c.addGenp("svc2", "x")
            try c.addGenp("svc2", "y")
            try c.expectRejected(errSecDuplicateItem, "two matches given the same account") {
                c.update([kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc2"], [kSecAttrAccount as String: "same"])
            }
            try c.expect(c.readData("svc", "a").1 == Data("A".utf8), "a unchanged")
        },
        ConformanceCase("update that changes primary-key attributes without collision") { c in
            try c.addGenp("svc", "a")
            try c.expectStatus(c.update(c.genp("svc", "a"), [kSecAttrAccount as String: "renamed"]), errSecSuccess, "rename")
            try c.expectStatus(c.readData("svc", "a").0, errSecItemNotFound, "old key gone")
            try c.expectStatus(c.readData("svc", "renamed").0, errSecSuccess, "new key found")
            try c.addGenp("svc", "a")
        },
        ConformanceCase("update and delete of nothing are errSecItemNotFound") { c in
            try c.addGenp("svc", "a")
            try c.expectRejected(errSecItemNotFound, "update missing") {
                c.update(c.genp("svc", "missing"), [kSecValueData as String: Data("x".utf8)])
            }
            try c.expectRejected(errSecItemNotFound, "delete missing") { c.delete(c.genp("svc", "missing")) }
        },
        ConformanceCase("dates: caller's dates overwritten on add; update advances mdat and keeps cdat") { c in
            let past = Date(timeIntervalSince1970: 1_000_000)
            try c.addGenp("svc", "a", [kSecAttrCreationDate as String: past, kSecAttrModificationDate as String: past])
            let before = try c.attributes(c.genp("svc", "a"))
            guard let cdat = before[kSecAttrCreationDate as String] as? Date, let mdat = before[kSecAttrModificationDate as String] as? Date else {
                throw c.fail("dates present")
            }
            try c.expect(cdat.timeIntervalSince(past) > 1000, "creation date is now, not the caller's")
            try c.expect(abs(cdat.timeIntervalSinceNow) < 600, "creation date is recent")
            try c.expect(mdat == cdat, "modification date equals creation date on add")
            try c.expectStatus(c.update(c.genp("svc", "a"), [kSecValueData as String: Data("x".utf8), kSecAttrCreationDate as String: past]), errSecSuccess, "update")
            let after = try c.attributes(c.genp("svc", "a"))
            try c.expect(after[kSecAttrCreationDate as String] as? Date == cdat, "creation date kept")
            guard let mdat2 = after[kSecAttrModificationDate as String] as? Date else { throw c.fail("mdat present") }
            try c.expect(mdat2 > mdat, "modification date strictly later")
            try c.expectStatus(c.update(c.genp("svc", "a"), [kSecValueData as String: Data("y".utf8)]), errSecSuccess, "update again")
            let mdat3 = try c.attributes(c.genp("svc", "a"))[kSecAttrModificationDate as String] as? Date
            try c.expect(mdat3 != nil && mdat3! > mdat2, "every update advances mdat")
        },
        ConformanceCase("update moves an item between access groups") { c in
            let (groupA, groupB) = (ConformanceSuite.entitledGroups[0], ConformanceSuite.entitledGroups[1])
            try c.addGenp("svc", "a", [kSecAttrAccessGroup as String: groupA])
            try c.expectStatus(c.update(c.genp("svc", "a"), [kSecAttrAccessGroup as String: groupB]), errSecSuccess, "move")
            try c.expectStatus(c.readData("svc", "a", [kSecAttrAccessGroup as String: groupA]).0, errSecItemNotFound, "gone from A")
            try c.expectStatus(c.readData("svc", "a", [kSecAttrAccessGroup as String: groupB]).0, errSecSuccess, "found in B")
            try c.expectRejected(errSecMissingEntitlement, "move to a group not entitled") {
                c.update(c.genp("svc", "a"), [kSecAttrAccessGroup as String: ConformanceSuite.foreignGroup])
            }
        },
        ConformanceCase("persistent refs: stable across updates, query without class, invalid forms") { c in
            var result: AnyObject?
            try c.expectStatus(c.add(c.genp("svc", "a", [kSecValueData as String: Data("1".utf8), kSecReturnPersistentRef as String: true]), result: &result), errSecSuccess, "add")
            guard let ref = result as? Data else { throw c.fail("a ref") }
            try c.expectStatus(c.update(c.genp("svc", "a"), [kSecAttrAccount as String: "b", kSecValueData as String: Data("2".utf8)]), errSecSuccess, "update")
            let (s1, r1) = c.copy(c.genp("svc", "b", [kSecReturnPersistentRef as String: true]))
            try c.expectStatus(s1, errSecSuccess, "find updated")
            try c.expect(r1 as? Data == ref, "the persistent ref is unchanged by an update")
            let (s2, r2) = c.copy([kSecValuePersistentRef as String: ref, kSecReturnData as String: true])
            try c.expectStatus(s2, errSecSuccess, "query by ref without class")
            try c.expect(r2 as? Data == Data("2".utf8), "the ref finds the item")
            try c.expectStatus(c.copy([kSecClass as String: kSecClassGenericPassword, kSecValuePersistentRef as String: ref]).0, errSecSuccess, "with its own class")
            try c.expectStatus(c.copy([kSecClass as String: kSecClassInternetPassword, kSecValuePersistentRef as String: ref]).0, errSecItemNotFound, "with another class")
            try c.expectStatus(c.copy([kSecValuePersistentRef as String: ref, kSecAttrAccount as String: "b"]).0, errSecParam, "ref plus attributes")
            try c.expectStatus(c.copy([kSecValuePersistentRef as String: Data([1, 2, 3])]).0, errSecParam, "a ref of the wrong length")
            try c.expectStatus(c.update([kSecValuePersistentRef as String: ref], [kSecAttrLabel as String: "by ref"]), errSecSuccess, "update by ref")
            try c.expect(try c.attributes(c.genp("svc", "b"))[kSecAttrLabel as String] as? String == "by ref", "updated through the ref")
            try c.expectStatus(c.delete([kSecValuePersistentRef as String: ref]), errSecSuccess, "delete by ref")
            try c.expectStatus(c.copy([kSecValuePersistentRef as String: ref]).0, errSecItemNotFound, "ref after delete")
        },
        ConformanceCase("delete removes every match and nothing else") { c in
            for a in ["a", "b", "c"] { try c.addGenp("svc", a) }
            try c.addGenp("keep", "a")
            try c.expectStatus(c.delete([kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc"]), errSecSuccess, "delete three")
            try c.expect(try c.count([kSecClass as String: kSecClassGenericPassword]) == 1, "one left")
            try c.expectStatus(c.readData("keep", "a").0, errSecSuccess, "the other item survives")
            try c.expectStatus(c.delete([kSecClass as String: kSecClassGenericPassword]), errSecSuccess, "delete the class")
            try c.expect(try c.count([kSecClass as String: kSecClassGenericPassword]) == 0, "none left")
        },
        ConformanceCase("update and delete ignore kSecMatch, kSecReturn and kSecValueData in the query") { c in
            try c.addGenp("svc", "a")
            try c.addGenp("svc", "b")
            let noisy: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc",
                kSecMatchLimit as String: kSecMatchLimitOne, kSecReturnData as String: true,
                kSecReturnAttributes as String: true, kSecValueData as String: Data("ignored".utf8),
            ]
            try c.expectStatus(c.update(noisy, [kSecAttrLabel as String: "L"]), errSecSuccess, "update with noisy query")
            try c.expect(try c.count([kSecClass as String: kSecClassGenericPassword, kSecAttrLabel as String: "L"]) == 2, "the limit is ignored: both updated")
            try c.expectStatus(c.delete(noisy), errSecSuccess, "delete with noisy query")
            try c.expect(try c.count([kSecClass as String: kSecClassGenericPassword]) == 0, "both deleted")
        },
        ConformanceCase("the KeychainHelper upsert pattern: update, then add when not found") { c in
            func save(_ data: Data) throws {
                let q = c.genp("helper", "token")
                let status = c.update(q, [kSecValueData as String: data, kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock])
                if status == errSecItemNotFound {
                    try c.expectStatus(c.add(q.merging([kSecValueData as String: data]) { $1 }), errSecSuccess, "add after not found")
                } else {
                    try c.expectStatus(status, errSecSuccess, "update")
                }
            }
            try save(Data("one".utf8))
            try save(Data("two".utf8))
            try c.expect(c.readData("helper", "token").1 == Data("two".utf8), "the second save wins")
            try c.expect(try c.count(c.genp("helper", "token")) == 1, "one item")
        },
    ]
}
