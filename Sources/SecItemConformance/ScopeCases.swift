import SecItemCore
import Foundation

/// Access groups and synchronizable visibility.
enum ScopeCases {
    static let all: [ConformanceCase] = [
        ConformanceCase("synchronizable items are invisible without kSecAttrSynchronizable") { c in
            try c.addGenp("svc", "a", data: Data("local".utf8))
            try c.addGenp("svc", "a", data: Data("synced".utf8), [kSecAttrSynchronizable as String: true])
            try c.expect(c.readData("svc", "a").1 == Data("local".utf8), "no sync key: the local item")
            try c.expect(c.readData("svc", "a", [kSecAttrSynchronizable as String: true]).1 == Data("synced".utf8), "sync true: the synced item")
            try c.expect(c.readData("svc", "a", [kSecAttrSynchronizable as String: false]).1 == Data("local".utf8), "sync false: the local item")
            try c.expect(try c.count(c.genp("svc", "a", [kSecAttrSynchronizable as String: kSecAttrSynchronizableAny])) == 2, "Any: both")
            try c.expectStatus(c.add(c.genp("svc", "a", [kSecAttrSynchronizable as String: true])), errSecDuplicateItem, "sync is in the primary key")
            try c.expectStatus(c.delete(c.genp("svc", "a")), errSecSuccess, "delete without sync key")
            try c.expect(c.readData("svc", "a", [kSecAttrSynchronizable as String: true]).1 == Data("synced".utf8), "the synced item survives")
            let attrs = try c.attributes(c.genp("svc", "a", [kSecAttrSynchronizable as String: true]))
            try c.expect(attrs[kSecAttrSynchronizable as String] as? Int == 1, "sync comes back as the number 1")
            try c.expectStatus(c.update(c.genp("svc", "a", [kSecAttrSynchronizable as String: true]), [kSecAttrSynchronizable as String: false]), errSecSuccess, "make it local")
            try c.expect(c.readData("svc", "a").1 == Data("synced".utf8), "now visible without the sync key")
        },
        ConformanceCase("access groups: default, explicit, search across entitled groups, not entitled") { c in
            let (groupA, groupB) = (ConformanceSuite.entitledGroups[0], ConformanceSuite.entitledGroups[1])
            try c.addGenp("svc", "a", data: Data("A".utf8))
            try c.addGenp("svc", "a", data: Data("B".utf8), [kSecAttrAccessGroup as String: groupB])
            try c.expectStatus(c.add(c.genp("svc", "a", [kSecAttrAccessGroup as String: groupA])), errSecDuplicateItem, "the default group is the first entitled one")
            try c.expect(try c.count(c.genp("svc", "a")) == 2, "a search covers every entitled group")
            try c.expect(c.readData("svc", "a", [kSecAttrAccessGroup as String: groupB]).1 == Data("B".utf8), "explicit group B")
            let foreign = [kSecAttrAccessGroup as String: ConformanceSuite.foreignGroup]
            try c.expectRejected(errSecMissingEntitlement, "add to a group not entitled") { c.add(c.genp("svc", "x", foreign)) }
            try c.expectStatus(c.readData("svc", "a", foreign).0, errSecMissingEntitlement, "search in a group not entitled")
            try c.expectRejected(errSecMissingEntitlement, "delete in a group not entitled") { c.delete(c.genp("svc", "a", foreign)) }
            try c.expectStatus(c.delete(c.genp("svc", "a", [kSecAttrAccessGroup as String: groupB])), errSecSuccess, "delete in B")
            try c.expect(c.readData("svc", "a").1 == Data("A".utf8), "the item in A survives")
        },
        ConformanceCase("a client sees only its entitled groups in a shared store") { c in
            try c.addGenp("svc", "a", [kSecAttrAccessGroup as String: ConformanceSuite.entitledGroups[1]])
            let other = SecItemClient(backend: c.backend, accessGroups: AccessGroups([ConformanceSuite.foreignGroup]))
            var result: AnyObject?
            try c.expectStatus(other.copyMatching(c.genp("svc", "a"), &result), errSecItemNotFound, "another app's client")
            try c.expectStatus(other.add(c.genp("svc", "a"), nil), errSecSuccess, "same key in its own group")
            try c.expectStatus(other.delete(c.genp("svc", "a")), errSecSuccess, "it deletes only its own")
            try c.expectStatus(c.readData("svc", "a").0, errSecSuccess, "ours survives")
        },
        ConformanceCase("kSecMatchCaseInsensitive in search, update and delete") { c in
            try c.addGenp("Service", "Alice", data: Data("pw".utf8))
            try c.expectStatus(c.readData("service", "alice").0, errSecItemNotFound, "case-sensitive by default")
            let ci = [kSecMatchCaseInsensitive as String: true]
            try c.expect(c.readData("SERVICE", "alice", ci).1 == Data("pw".utf8), "case-insensitive search")
            try c.expectStatus(c.update(c.genp("service", "ALICE", ci), [kSecAttrLabel as String: "L"]), errSecSuccess, "case-insensitive update")
            try c.expectStatus(c.delete(c.genp("SERVICE", "alice", ci)), errSecSuccess, "case-insensitive delete")
            try c.expect(try c.count([kSecClass as String: kSecClassGenericPassword]) == 0, "deleted")
        },
        ConformanceCase("kSecReturnRef for passwords succeeds with nil") { c in
            try c.addGenp("svc", "a")
            let (status, result) = c.copy(c.genp("svc", "a", [kSecReturnRef as String: true]))
            try c.expectStatus(status, errSecSuccess, "return ref")
            try c.expect(result == nil, "nil result")
        },
    ]
}
