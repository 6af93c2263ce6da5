import SecItemCore
import Foundation

/// Match limits and every return-key combination's result shape (contract §6).
enum ResultShapeCases {
    static let returnKeys: [(String, [String])] = [
        ("none", []),
        ("data", [kSecReturnData as String]),
        ("attributes", [kSecReturnAttributes as String]),
        ("persistent ref", [kSecReturnPersistentRef as String]),
        ("ref", [kSecReturnRef as String]),
        ("data+attributes", [kSecReturnData as String, kSecReturnAttributes as String]),
        ("data+persistent ref", [kSecReturnData as String, kSecReturnPersistentRef as String]),
        ("attributes+persistent ref", [kSecReturnAttributes as String, kSecReturnPersistentRef as String]),
        ("data+attributes+persistent ref", [kSecReturnData as String, kSecReturnAttributes as String, kSecReturnPersistentRef as String]),
        ("data+ref", [kSecReturnData as String, kSecReturnRef as String]),
    ]

    /// Checks one element of a result against what `keys` ask for, for the item svc/acct with `data`.
    static func checkElement(_ c: ConformanceContext, _ value: Any?, keys: [String], account: String, data: Data, label: String) throws {
        let set = Set(keys)
        switch set.count {
        case 0:
            try c.expect(value == nil, "\(label): no return keys gives nil")
        case 1 where set.contains(kSecReturnData as String):
            try c.expect(value as? Data == data, "\(label): Data")
        case 1 where set.contains(kSecReturnAttributes as String):
            guard let d = value as? [String: Any] else { throw c.fail("\(label): expected an attribute dictionary") }
            try c.expect(d[kSecAttrAccount as String] as? String == account, "\(label): account in attributes")
            try c.expect(d[kSecValueData as String] == nil, "\(label): no data unless asked")
            try c.expect(d[kSecClass as String] == nil, "\(label): no class in attributes")
        case 1 where set.contains(kSecReturnPersistentRef as String):
            guard let r = value as? Data else { throw c.fail("\(label): expected a persistent ref") }
            try c.expect(r.count == 20 && r.prefix(4) == Data((kSecClassGenericPassword as String).utf8), "\(label): 20-byte ref starting with the class")
        case 1:
            try c.expect(value == nil, "\(label): kSecReturnRef for a password is nil")
        default:
            guard let d = value as? [String: Any] else { throw c.fail("\(label): expected one dictionary") }
            try c.expect(
                (d[kSecValueData as String] as? Data == data) == set.contains(kSecReturnData as String),
                "\(label): v_Data present exactly when asked")
            try c.expect(
                (d[kSecValuePersistentRef as String] as? Data)?.count == 20 || !set.contains(kSecReturnPersistentRef as String),
                "\(label): v_PersistentRef when asked")
            try c.expect(
                (d[kSecAttrAccount as String] as? String == account) == set.contains(kSecReturnAttributes as String),
                "\(label): attributes present exactly when asked")
        }
    }

    static let all: [ConformanceCase] = [
        ConformanceCase("match limits: default, One, All, N, 0, invalid") { c in
            for i in 0..<5 { try c.addGenp("svc", "user\(i)", data: Data("pw\(i)".utf8)) }
            let q: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc", kSecReturnData as String: true]
            var (status, result) = c.copy(q)
            try c.expectStatus(status, errSecSuccess, "default limit")
            try c.expect(result is Data, "default limit returns one Data, not an array")
            (status, result) = c.copy(q.merging([kSecMatchLimit as String: kSecMatchLimitOne]) { $1 })
            try c.expect(result is Data, "LimitOne returns one Data")
            (status, result) = c.copy(q.merging([kSecMatchLimit as String: kSecMatchLimitAll]) { $1 })
            try c.expect((result as? [Data])?.count == 5, "LimitAll returns all five")
            try c.expect(Set(result as? [Data] ?? []) == Set((0..<5).map { Data("pw\($0)".utf8) }), "LimitAll data")
            (status, result) = c.copy(q.merging([kSecMatchLimit as String: 3]) { $1 })
            try c.expect((result as? [Data])?.count == 3, "limit 3 returns three")
            (status, result) = c.copy(q.merging([kSecMatchLimit as String: 2]) { $1 })
            try c.expect((result as? [Data])?.count == 2, "limit 2 returns an array of two")
            (status, result) = c.copy(q.merging([kSecMatchLimit as String: 1]) { $1 })
            try c.expect(result is Data, "limit 1 returns one Data")
            (status, result) = c.copy(q.merging([kSecMatchLimit as String: 100]) { $1 })
            try c.expect((result as? [Data])?.count == 5, "limit 100 returns all five")
            (status, _) = c.copy(q.merging([kSecMatchLimit as String: 0]) { $1 })
            try c.expectStatus(status, errSecItemNotFound, "limit 0")
            (status, _) = c.copy(q.merging([kSecMatchLimit as String: "m_LimitSome"]) { $1 })
            try c.expectStatus(status, errSecParam, "unknown limit string")
            (status, _) = c.copy(q.merging([kSecMatchLimit as String: -1]) { $1 })
            try c.expectStatus(status, errSecParam, "negative limit")
        },
        ConformanceCase("result shapes for every return-key combination, limit one") { c in
            try c.addGenp("svc", "alice", data: Data("pw".utf8))
            for (label, keys) in returnKeys {
                var q = c.genp("svc", "alice")
                for k in keys { q[k] = true }
                let (status, result) = c.copy(q)
                try c.expectStatus(status, errSecSuccess, label)
                try checkElement(c, result, keys: keys, account: "alice", data: Data("pw".utf8), label: label)
            }
        },
        ConformanceCase("result shapes for every return-key combination, limit all") { c in
            try c.addGenp("svc", "alice", data: Data("pw".utf8))
            try c.addGenp("svc", "bob", data: Data("pw".utf8))
            for (label, keys) in returnKeys {
                var q: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc", kSecMatchLimit as String: kSecMatchLimitAll]
                for k in keys { q[k] = true }
                let (status, result) = c.copy(q)
                try c.expectStatus(status, errSecSuccess, label)
                guard let array = result as? [Any] else { throw c.fail("\(label): limit all gives an array") }
                let set = Set(keys)
                if set.isEmpty || set == [kSecReturnRef as String] {
                    try c.expect(array.isEmpty, "\(label): an empty array")
                    continue
                }
                try c.expect(array.count == 2, "\(label): two elements")
                let accounts = ["alice", "bob"]
                for element in array {
                    var account = "alice"
                    if let d = element as? [String: Any], let a = d[kSecAttrAccount as String] as? String { account = a }
                    try c.expect(accounts.contains(account), "\(label): known account")
                    try checkElement(c, element, keys: keys, account: account, data: Data("pw".utf8), label: label)
                }
            }
        },
        ConformanceCase("false return flags count as absent") { c in
            try c.addGenp("svc", "alice", data: Data("pw".utf8))
            let (status, result) = c.copy(c.genp("svc", "alice", [kSecReturnData as String: true, kSecReturnAttributes as String: false]))
            try c.expectStatus(status, errSecSuccess, "data true, attributes false")
            try c.expect(result as? Data == Data("pw".utf8), "only Data comes back")
        },
        ConformanceCase("add with return keys returns one object, never an array") { c in
            var result: AnyObject?
            try c.expectStatus(c.add(c.genp("s", "a", [kSecValueData as String: Data("x".utf8)]), result: &result), errSecSuccess, "add")
            try c.expect(result == nil, "no return keys: nil")
            try c.expectStatus(c.add(c.genp("s", "b", [kSecValueData as String: Data("x".utf8), kSecReturnData as String: true]), result: &result), errSecSuccess, "add r_Data")
            try c.expect(result as? Data == Data("x".utf8), "add returns Data")
            try c.expectStatus(c.add(c.genp("s", "c", [kSecReturnAttributes as String: true]), result: &result), errSecSuccess, "add r_Attributes")
            try c.expect((result as? [String: Any])?[kSecAttrAccount as String] as? String == "c", "add returns attributes")
            try c.expectStatus(c.add(c.genp("s", "d", [kSecReturnPersistentRef as String: true]), result: &result), errSecSuccess, "add r_PersistentRef")
            guard let ref = result as? Data, ref.count == 20 else { throw c.fail("add returns a persistent ref") }
            let (status, found) = c.copy([kSecValuePersistentRef as String: ref, kSecReturnAttributes as String: true])
            try c.expectStatus(status, errSecSuccess, "the returned ref finds the item")
            try c.expect((found as? [String: Any])?[kSecAttrAccount as String] as? String == "d", "it is the same item")
            try c.expectStatus(c.add(c.genp("s", "e", [kSecValueData as String: Data("y".utf8), kSecReturnAttributes as String: true, kSecReturnData as String: true, kSecMatchLimit as String: kSecMatchLimitAll]), result: &result), errSecSuccess, "add with two return keys")
            try c.expect((result as? [String: Any])?[kSecValueData as String] as? Data == Data("y".utf8), "add with two return keys returns one dictionary")
        },
        ConformanceCase("attribute dictionaries hold every stored attribute with defaults, not the class") { c in
            try c.expectStatus(c.add([kSecClass as String: kSecClassGenericPassword, kSecAttrLabel as String: "L", kSecValueData as String: Data("x".utf8)]), errSecSuccess, "add without service/account")
            let d = try c.attributes([kSecClass as String: kSecClassGenericPassword, kSecAttrLabel as String: "L"])
            try c.expect(d[kSecAttrAccount as String] as? String == "", "acct defaults to \"\"")
            try c.expect(d[kSecAttrService as String] as? String == "", "svce defaults to \"\"")
            try c.expect(d[kSecAttrLabel as String] as? String == "L", "the label")
            try c.expect(d[kSecAttrAccessGroup as String] as? String == ConformanceSuite.entitledGroups[0], "agrp is the first entitled group")
            try c.expect(d[kSecAttrAccessible as String] as? String == (kSecAttrAccessibleWhenUnlocked as String), "pdmn defaults to ak")
            try c.expect(d[kSecAttrSynchronizable as String] as? Int == 0, "sync is the number 0")
            try c.expect(d[kSecAttrCreationDate as String] is Date, "cdat is a Date")
            try c.expect(d[kSecAttrModificationDate as String] is Date, "mdat is a Date")
            try c.expect(d[kSecClass as String] == nil, "no class key")
            try c.expect(d[kSecValueData as String] == nil, "no data")
            var q = d
            q[kSecClass as String] = kSecClassGenericPassword
            q[kSecReturnData as String] = true
            let (status, data) = c.copy(q)
            try c.expectStatus(status, errSecSuccess, "an attribute dictionary plus kSecClass is a query for the item")
            try c.expect(data as? Data == Data("x".utf8), "it finds the item")
            let cert = try { () throws -> [String: Any] in
                try c.expectStatus(c.add([kSecClass as String: kSecClassCertificate, kSecAttrSerialNumber as String: Data([1])]), errSecSuccess, "add cert")
                return try c.attributes([kSecClass as String: kSecClassCertificate])
            }()
            try c.expect(cert[kSecAttrAccessible as String] as? String == (kSecAttrAccessibleAlways as String), "certificates default to dk")
        },
        ConformanceCase("an item without data: data alone gives nil, arrays skip it, dictionaries lack v_Data") { c in
            try c.addGenp("svc", "nodata", data: nil)
            try c.addGenp("svc", "withdata", data: Data("d".utf8))
            var (status, result) = c.copy(c.genp("svc", "nodata", [kSecReturnData as String: true]))
            try c.expectStatus(status, errSecSuccess, "data of an item without data")
            try c.expect(result == nil, "nil result")
            (status, result) = c.copy([kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc", kSecReturnData as String: true, kSecMatchLimit as String: kSecMatchLimitAll])
            try c.expect((result as? [Data]) == [Data("d".utf8)], "the array skips the item without data")
            (status, result) = c.copy(c.genp("svc", "nodata", [kSecReturnData as String: true, kSecReturnAttributes as String: true]))
            guard let d = result as? [String: Any] else { throw c.fail("a dictionary") }
            try c.expect(d[kSecValueData as String] == nil, "no v_Data key")
            try c.expect(d[kSecAttrAccount as String] as? String == "nodata", "attributes present")
        },
        ConformanceCase("empty data is stored as empty data, not as no data") { c in
            try c.addGenp("svc", "empty", data: Data())
            let (status, data) = c.readData("svc", "empty")
            try c.expectStatus(status, errSecSuccess, "read empty data")
            try c.expect(data == Data(), "empty Data comes back")
        },
        ConformanceCase("kSecReturnData alone by a whole primary key answers as with attributes too") { c in
            // A backend may answer such a search without reading attributes
            // (ItemQuery.exactPrimaryKey, ItemProjection.dataAndAccess): its answer must not differ.
            let inB: [String: Any] = [kSecAttrAccessGroup as String: ConformanceSuite.entitledGroups[1]]
            let synced = inB.merging([kSecAttrSynchronizable as String: true]) { $1 }
            try c.addGenp("pk", "data", data: Data("secret".utf8), inB)
            try c.addGenp("pk", "empty", data: Data(), inB)
            try c.addGenp("pk", "none", data: nil, inB)
            try c.addGenp("pk", "synced", data: Data("synced".utf8), synced)
            try c.addGenp("pk", "group-a", data: Data("a".utf8))
            try c.expectStatus(c.update(c.genp("pk", "data", inB), [kSecValueData as String: Data("new".utf8)]), errSecSuccess, "update")
            for account in ["data", "empty", "none", "synced", "group-a", "missing"] {
                for sync in [false, true] {
                    let q = c.genp("pk", account, inB.merging([kSecAttrSynchronizable as String: sync]) { $1 })
                    let (dataStatus, dataOnly) = c.copy(q.merging([kSecReturnData as String: true]) { $1 })
                    let (fullStatus, full) = c.copy(
                        q.merging([kSecReturnData as String: true, kSecReturnAttributes as String: true]) { $1 })
                    let what = "\(account), synchronizable \(sync)"
                    try c.expectStatus(dataStatus, fullStatus, "status of \(what)")
                    let expected = (full as? [String: Any])?[kSecValueData as String] as? Data
                    try c.expect((dataOnly as? Data) == expected && (dataOnly == nil) == (expected == nil), "data of \(what)")
                }
            }
            try c.expect(c.readData("pk", "data", inB).1 == Data("new".utf8), "the updated data")
            try c.expectStatus(c.delete(c.genp("pk", "data", inB)), errSecSuccess, "delete")
            try c.expectStatus(c.readData("pk", "data", inB).0, errSecItemNotFound, "gone")
        },
        ConformanceCase("results read as [[AnyHashable: Any]] or NSDictionary find an attribute by its kSec constant and by its string") { c in
            // KeychainSwift's allKeys(): `$0[kSecAttrAccount]` on [[AnyHashable: Any]] (issue 26).
            try c.addGenp("hash", "alice")
            try c.addGenp("hash", "bob")
            let (status, result) = c.copy([
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "hash", kSecReturnAttributes as String: true,
                kSecReturnData as String: true, kSecMatchLimit as String: kSecMatchLimitAll,
            ])
            try c.expectStatus(status, errSecSuccess, "search")
            guard let items = result as? [[AnyHashable: Any]] else { throw c.fail("the result is not an [[AnyHashable: Any]]") }
            try c.expect(Set(items.compactMap { $0[kSecAttrAccount] as? String }) == ["alice", "bob"], "by the constant")
            try c.expect(Set(items.compactMap { $0[kSecAttrAccount as String] as? String }) == ["alice", "bob"], "by its string")
            try c.expect(items.allSatisfy { $0[kSecValueData] as? Data == Data("secret".utf8) }, "v_Data by the constant")
            let (_, one) = c.copy(c.genp("hash", "alice", [kSecReturnAttributes as String: true]))
            guard let dictionary = one as? NSDictionary else { throw c.fail("a single result is not an NSDictionary") }
            try c.expect(dictionary[kSecAttrAccount] as? String == "alice", "NSDictionary by the constant")
            try c.expect(dictionary[kSecAttrAccount as String] as? String == "alice", "NSDictionary by its string")
        },
    ]
}
