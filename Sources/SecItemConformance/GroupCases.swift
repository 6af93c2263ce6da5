import SecItemCore
import Foundation

/// Per-application access groups (contract §8, "Default access group"): several
/// programs with different application identifiers on one store.
enum GroupCases {
    static let appA = "com.example.conformance.a"
    static let appB = "com.example.conformance.b"
    static let appC = "com.example.conformance.c"
    static let shared = "com.example.conformance.shared"

    /// The four storable classes, as the iOS "sign out" idiom lists them.
    static let storableClasses = [
        kSecClassGenericPassword as String, kSecClassInternetPassword as String, kSecClassCertificate as String, kSecClassKey as String,
    ]

    /// Adds one item of every storable class with default settings (no group), data tagged with `tag`.
    static func addOneOfEach(_ client: SecItemClient, tag: String, _ c: ConformanceContext) throws {
        let items: [[String: Any]] = [
            [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "api", kSecAttrAccount as String: "user"],
            [kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "example.com", kSecAttrAccount as String: "user"],
            [kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: "cert", kSecAttrSerialNumber as String: Data([1, 2])],
            [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data("tag".utf8)],
        ]
        for var item in items {
            item[kSecValueData as String] = Data("\(tag)-\(item[kSecClass as String]!)".utf8) + Data([0, 0xFF])
            try c.expectStatus(client.add(item, nil), errSecSuccess, "\(tag): add \(item[kSecClass as String]!)")
        }
    }

    /// Every item in `groups`, every class and sync state, by identity.
    static func items(in groups: Set<String>, _ c: ConformanceContext) throws -> [UUID: StoredItem] {
        var out: [UUID: StoredItem] = [:]
        for itemClass in [ItemClass.genericPassword, .internetPassword, .certificate, .key] {
            let query = ItemQuery(itemClass: itemClass, accessGroups: groups, synchronizable: .any)
            do {
                for item in try c.backend.fetch(matching: query, limit: nil) { out[item.id] = item }
            } catch {
                throw c.fail("fetch of groups \(groups.sorted()) failed: \(error)")
            }
        }
        return out
    }

    /// The iOS idiom: `SecItemDelete([kSecClass: c])` for every class; each succeeds or finds nothing.
    static func wipe(_ client: SecItemClient, _ c: ConformanceContext) throws {
        for itemClass in storableClasses {
            let status = client.delete([kSecClass as String: itemClass])
            try c.expect(status == errSecSuccess || status == errSecItemNotFound, "wipe \(itemClass): status \(status)")
        }
    }

    static let all: [ConformanceCase] = [
        ConformanceCase("per-application groups: the wipe idiom of one application deletes only its own items") { c in
            let (a, b, cc) = (
                SecItemClient(backend: c.backend, applicationIdentifier: appA),
                SecItemClient(backend: c.backend, applicationIdentifier: appB),
                SecItemClient(backend: c.backend, applicationIdentifier: appC)
            )
            try addOneOfEach(a, tag: "A", c)
            try addOneOfEach(b, tag: "B", c)
            try addOneOfEach(cc, tag: "C", c)
            let othersBefore = try items(in: [appB, appC], c)
            try c.expect(othersBefore.count == 8, "B and C hold 4 items each, got \(othersBefore.count)")
            try wipe(a, c)
            try c.expect(try items(in: [appA], c).isEmpty, "A's items are gone")
            let othersAfter = try items(in: [appB, appC], c)
            try c.expect(othersAfter == othersBefore, "B's and C's items are unchanged, byte for byte")
            for itemClass in storableClasses {
                try c.expectStatus(
                    a.delete([kSecClass as String: itemClass]), errSecItemNotFound, "a second wipe of \(itemClass) finds nothing")
            }
        },
        ConformanceCase("per-application groups: each application's items are its own, same keys do not collide") { c in
            let a = SecItemClient(backend: c.backend, applicationIdentifier: appA)
            let b = SecItemClient(backend: c.backend, applicationIdentifier: appB)
            var ref: AnyObject?
            let item: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc", kSecAttrAccount as String: "acct",
                kSecValueData as String: Data("A's secret".utf8), kSecReturnPersistentRef as String: true,
            ]
            try c.expectStatus(a.add(item, &ref), errSecSuccess, "A adds")
            guard let aRef = ref as? Data else { throw c.fail("A's add returned no persistent ref") }
            let attrs = try c.attributes(c.genp("svc", "acct", [kSecAttrAccessGroup as String: appA]), via: a)
            try c.expect(attrs[kSecAttrAccessGroup as String] as? String == appA, "A's item is in A's group")
            let before = try items(in: [appA], c)

            let query = c.genp("svc", "acct", [kSecReturnData as String: true])
            var result: AnyObject?
            try c.expectStatus(b.copyMatching(query, &result), errSecItemNotFound, "B does not find A's item")
            try c.expect(result == nil, "B's result is untouched")
            let inA = [kSecAttrAccessGroup as String: appA]
            try c.expectStatus(b.copyMatching(c.genp("svc", "acct", inA), &result), errSecMissingEntitlement, "B naming A's group")
            try c.expectStatus(b.update(c.genp("svc", "acct", inA), [kSecAttrLabel as String: "x"]), errSecMissingEntitlement, "B updating in A's group")
            try c.expectStatus(b.delete(c.genp("svc", "acct", inA)), errSecMissingEntitlement, "B deleting in A's group")
            try c.expectStatus(b.update(c.genp("svc", "acct"), [kSecAttrLabel as String: "x"]), errSecItemNotFound, "B's update without a group")
            try c.expectStatus(b.delete(c.genp("svc", "acct")), errSecItemNotFound, "B's delete without a group")
            try c.expectStatus(b.copyMatching([kSecValuePersistentRef as String: aRef], &result), errSecItemNotFound, "B by A's persistent ref")
            try c.expectStatus(b.update([kSecValuePersistentRef as String: aRef], [kSecAttrLabel as String: "x"]), errSecItemNotFound, "B updating by A's ref")
            try c.expectStatus(b.delete([kSecValuePersistentRef as String: aRef]), errSecItemNotFound, "B deleting by A's ref")
            try c.expectStatus(
                b.update(c.genp("svc", "acct"), [kSecAttrAccessGroup as String: appA]), errSecMissingEntitlement,
                "B moving an item into A's group")
            try c.expect(try items(in: [appA], c) == before, "none of B's calls changed A's item")

            var bItem = item
            bItem[kSecValueData as String] = Data("B's secret".utf8)
            bItem[kSecReturnPersistentRef as String] = nil
            try c.expectStatus(b.add(bItem, nil), errSecSuccess, "B adds the same service and account: no collision")
            try c.expectStatus(a.copyMatching(query, &result), errSecSuccess, "A reads its own")
            try c.expect(result as? Data == Data("A's secret".utf8), "A still gets A's data")
            try c.expectStatus(b.copyMatching(query, &result), errSecSuccess, "B reads its own")
            try c.expect(result as? Data == Data("B's secret".utf8), "B gets B's data")
        },
        ConformanceCase("per-application groups: a group both applications list is shared by both") { c in
            let a = SecItemClient(backend: c.backend, accessGroups: AccessGroups([appA, shared]))
            let b = SecItemClient(backend: c.backend, accessGroups: AccessGroups([appB, shared]))
            let inShared = [kSecAttrAccessGroup as String: shared]
            var q = c.genp("svc", "token", inShared)
            q[kSecValueData as String] = Data("v1".utf8)
            try c.expectStatus(a.add(q, nil), errSecSuccess, "A adds to the shared group")
            try c.expectStatus(a.add(c.genp("svc", "private"), nil), errSecSuccess, "A adds to its default group")
            var result: AnyObject?
            try c.expectStatus(b.copyMatching(c.genp("svc", "token", [kSecReturnData as String: true]), &result), errSecSuccess, "B finds the shared item without naming the group")
            try c.expect(result as? Data == Data("v1".utf8), "B reads A's shared data")
            try c.expectStatus(b.update(c.genp("svc", "token"), [kSecValueData as String: Data("v2".utf8)]), errSecSuccess, "B updates it")
            try c.expectStatus(a.copyMatching(c.genp("svc", "token", [kSecReturnData as String: true]), &result), errSecSuccess, "A reads it")
            try c.expect(result as? Data == Data("v2".utf8), "A sees B's update")
            try c.expectStatus(b.copyMatching(c.genp("svc", "private"), &result), errSecItemNotFound, "A's default group stays A's")
            try wipe(b, c)
            try c.expectStatus(a.copyMatching(c.genp("svc", "token"), &result), errSecItemNotFound, "B's wipe covers the shared group it lists")
            try c.expectStatus(a.copyMatching(c.genp("svc", "private"), &result), errSecSuccess, "but not A's own group")
        },
        ConformanceCase("per-application groups: an update of kSecAttrAccessGroup moves items between entitled groups") { c in
            let legacy = AccessGroups.legacyDefaultGroup
            // Items an earlier version wrote sit in "default".
            let old = SecItemClient(backend: c.backend, accessGroups: AccessGroups([legacy]))
            var q = c.genp("svc", "a")
            q[kSecValueData as String] = Data("old".utf8)
            try c.expectStatus(old.add(q, nil), errSecSuccess, "an earlier version adds to 'default'")
            try c.expectStatus(old.add(c.genp("svc", "b"), nil), errSecSuccess, "and a second item")
            let app = SecItemClient(backend: c.backend, applicationIdentifier: appA)
            var result: AnyObject?
            try c.expectStatus(app.copyMatching(c.genp("svc", "a"), &result), errSecItemNotFound, "an application not listing 'default' does not see them")
            let upgraded = SecItemClient(backend: c.backend, accessGroups: AccessGroups([appA, legacy]))
            try c.expectStatus(upgraded.copyMatching(c.genp("svc", "a", [kSecReturnData as String: true]), &result), errSecSuccess, "one listing 'default' does")
            try c.expect(result as? Data == Data("old".utf8), "with its data")
            let before = try items(in: [legacy], c)
            let inLegacy = c.genp("svc", "a", [kSecAttrAccessGroup as String: legacy])
            try c.expectStatus(
                upgraded.update(inLegacy, [kSecAttrAccessGroup as String: "com.example.not-entitled"]), errSecMissingEntitlement,
                "a move into a group not entitled")
            try c.expect(try items(in: [legacy], c) == before, "the failed move changed nothing")
            try c.expectStatus(upgraded.update(inLegacy, [kSecAttrAccessGroup as String: appA]), errSecSuccess, "move to the application's group")
            let moved = try items(in: [appA], c)
            try c.expect(moved.count == 1, "one item in A's group, got \(moved.count)")
            guard let (id, item) = moved.first, let original = before[id] else {
                throw c.fail("the moved item kept no identity (its persistent ref changed)")
            }
            try c.expect(item.data == Data("old".utf8), "the moved item keeps its data")
            try c.expect(item.attributes[SecConstant.kSecAttrCreationDate] == original.attributes[SecConstant.kSecAttrCreationDate], "and its creation date")
            try c.expectStatus(app.copyMatching(c.genp("svc", "a"), &result), errSecSuccess, "now the application alone finds it")
            // A collision: the same key already in the target group.
            try c.expectStatus(app.add(c.genp("svc", "b"), nil), errSecSuccess, "A adds its own svc/b")
            let snapshot = try items(in: [legacy, appA], c)
            try c.expectStatus(
                upgraded.update(c.genp("svc", "b", [kSecAttrAccessGroup as String: legacy]), [kSecAttrAccessGroup as String: appA]),
                errSecDuplicateItem, "a move onto an existing key")
            try c.expect(try items(in: [legacy, appA], c) == snapshot, "the refused move changed nothing")
        },
        ConformanceCase("an operator client sees every group; an explicit group narrows; adds go to its default group") { c in
            let a = SecItemClient(backend: c.backend, applicationIdentifier: appA)
            let b = SecItemClient(backend: c.backend, applicationIdentifier: appB)
            try c.expectStatus(a.add(c.genp("svc", "x"), nil), errSecSuccess, "A adds")
            try c.expectStatus(b.add(c.genp("svc", "x"), nil), errSecSuccess, "B adds the same key")
            let op = SecItemClient(backend: c.backend, accessGroups: .everyGroup(defaultGroup: "com.example.operator"))
            var result: AnyObject?
            let all = c.genp("svc", "x", [kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true])
            try c.expectStatus(op.copyMatching(all, &result), errSecSuccess, "the operator finds them")
            let groups = Set(((result as? [[String: Any]]) ?? []).compactMap { $0[kSecAttrAccessGroup as String] as? String })
            try c.expect(groups == [appA, appB], "in both groups: \(groups.sorted())")
            var inB = c.genp("svc", "x", [kSecAttrAccessGroup as String: appB])
            try c.expectStatus(op.update(inB, [kSecAttrLabel as String: "seen"]), errSecSuccess, "an update narrowed to B")
            try c.expect(try c.attributes(c.genp("svc", "x"), via: a)[kSecAttrLabel as String] == nil, "A's item untouched")
            try c.expectStatus(op.add(c.genp("svc", "y"), nil), errSecSuccess, "the operator adds without a group")
            let added = try c.attributes(c.genp("svc", "y", [kSecAttrAccessGroup as String: "com.example.operator"]), via: op)
            try c.expect(added[kSecAttrAccessGroup as String] as? String == "com.example.operator", "to its default group")
            try c.expectStatus(op.add(c.genp("svc", "z", [kSecAttrAccessGroup as String: appB]), nil), errSecSuccess, "the operator adds to B's group")
            try c.expectStatus(b.copyMatching(c.genp("svc", "z"), &result), errSecSuccess, "B finds it")
            inB[kSecAttrAccount as String] = "x"
            try c.expectStatus(op.delete(inB), errSecSuccess, "a delete narrowed to B")
            try c.expectStatus(a.copyMatching(c.genp("svc", "x"), &result), errSecSuccess, "A's svc/x survives")
            try c.expectStatus(b.copyMatching(c.genp("svc", "x"), &result), errSecItemNotFound, "B's is gone")
        },
    ]
}

extension ConformanceContext {
    /// Attributes of the single item matching `query`, read through `client`.
    func attributes(_ query: [String: Any], via client: SecItemClient, file: StaticString = #filePath, line: UInt = #line)
        throws -> [String: Any]
    {
        var q = query
        q[kSecReturnAttributes as String] = true
        var result: AnyObject?
        try expectStatus(client.copyMatching(q, &result), errSecSuccess, "read attributes", file: file, line: line)
        guard let dict = result as? [String: Any] else { throw fail("attributes: not a dictionary", file: file, line: line) }
        return dict
    }
}
