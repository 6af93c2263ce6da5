import SecItemCore
import Foundation

/// Every errSecParam / errSecNoSuchAttr / errSecNoSuchClass trigger of the
/// contract (§4, §5), each checked to leave the store unchanged.
enum InputCases {
    static let genpClass = kSecClass as String
    static let all: [ConformanceCase] = [
        ConformanceCase("bad input to SecItemAdd is rejected with the right status and changes nothing") { c in
            try c.addGenp("existing", "item")
            let good = c.genp("svc", "new", [kSecValueData as String: Data("x".utf8)])
            let cases: [(String, OSStatus, [String: Any])] = [
                ("no kSecClass", errSecParam, good.filter { $0.key != genpClass }),
                ("kSecClass not a string", errSecParam, good.merging([genpClass: 42]) { $1 }),
                ("unknown class", errSecNoSuchClass, good.merging([genpClass: "nope"]) { $1 }),
                ("attribute of another class (srvr on genp)", errSecNoSuchAttr, good.merging([kSecAttrServer as String: "x"]) { $1 }),
                ("unknown four-letter attribute", errSecNoSuchAttr, good.merging(["zzzz": "x"]) { $1 }),
                ("internal attribute", errSecNoSuchAttr, good.merging(["musr": Data()]) { $1 }),
                ("unknown return key", errSecParam, good.merging(["r_Everything": true]) { $1 }),
                ("return value not a Bool", errSecParam, good.merging([kSecReturnData as String: "yes"]) { $1 }),
                ("unknown use key", errSecParam, good.merging(["u_Whatever": true]) { $1 }),
                ("authentication UI value unknown", errSecParam, good.merging([kSecUseAuthenticationUI as String: "sometimes"]) { $1 }),
                ("unknown key", errSecParam, good.merging(["notAKey": 1]) { $1 }),
                ("kSecValueData a String", errSecParam, good.merging([kSecValueData as String: "text"]) { $1 }),
                ("kSecValuePersistentRef in an add", errSecParam, good.merging([kSecValuePersistentRef as String: Data(count: 20)]) { $1 }),
                ("accessibility value unknown", errSecParam, good.merging([kSecAttrAccessible as String: "whenever"]) { $1 }),
                ("number attribute given Data", errSecParam, good.merging([kSecAttrCreator as String: Data([1])]) { $1 }),
                ("date attribute given a String", errSecParam, good.merging([kSecAttrCreationDate as String: "yesterday"]) { $1 }),
                ("blob attribute given a Date", errSecParam, good.merging([kSecAttrLabel as String: Date()]) { $1 }),
                ("blob attribute given a Bool", errSecParam, good.merging([kSecAttrComment as String: true]) { $1 }),
                ("access group given a number", errSecParam, good.merging([kSecAttrAccessGroup as String: 7]) { $1 }),
                ("kSecAttrSynchronizableAny in an add", errSecParam, good.merging([kSecAttrSynchronizable as String: kSecAttrSynchronizableAny]) { $1 }),
                ("a nil value", errSecParam, good.merging([kSecAttrLabel as String: Optional<String>.none as Any]) { $1 }),
                ("access group not entitled", errSecMissingEntitlement, good.merging([kSecAttrAccessGroup as String: ConformanceSuite.foreignGroup]) { $1 }),
            ]
            for (label, status, query) in cases {
                try c.expectRejected(status, "add: \(label)") { c.add(query) }
            }
        },
        ConformanceCase("bad searches are rejected with the right status") { c in
            try c.addGenp("svc", "a")
            let good = c.genp("svc", "a", [kSecReturnData as String: true])
            let cases: [(String, OSStatus, [String: Any])] = [
                ("no kSecClass", errSecParam, good.filter { $0.key != genpClass }),
                ("unknown class", errSecNoSuchClass, good.merging([genpClass: "nope"]) { $1 }),
                ("attribute of another class", errSecNoSuchAttr, good.merging([kSecAttrPort as String: 80]) { $1 }),
                ("unknown return key", errSecParam, good.merging(["r_Nope": true]) { $1 }),
                ("return value not a Bool", errSecParam, good.merging([kSecReturnAttributes as String: 1]) { $1 }),
                ("unknown match key", errSecParam, good.merging(["m_Nope": true]) { $1 }),
                ("match limit of another type", errSecParam, good.merging([kSecMatchLimit as String: Data()]) { $1 }),
                ("unknown key", errSecParam, good.merging(["notAKey": 1]) { $1 }),
                ("case-insensitive flag not a Bool", errSecParam, good.merging([kSecMatchCaseInsensitive as String: "yes"]) { $1 }),
            ]
            for (label, status, query) in cases {
                try c.expectStatus(c.copy(query).0, status, "search: \(label)")
            }
            try c.expectStatus(c.copy(good.merging([kSecUseDataProtectionKeychain as String: true]) { $1 }).0, errSecSuccess, "kSecUseDataProtectionKeychain is accepted")
        },
        ConformanceCase("bad updates are rejected with the right status and change nothing") { c in
            try c.addGenp("svc", "a")
            let q = c.genp("svc", "a")
            let cases: [(String, OSStatus, [String: Any], [String: Any])] = [
                ("kSecValueData a String", errSecParam, q, [kSecValueData as String: "text"]),
                ("kSecValueData nil", errSecParam, q, [kSecValueData as String: Optional<Data>.none as Any]),
                ("kSecClass in the changes", errSecNoSuchAttr, q, [genpClass: kSecClassInternetPassword]),
                ("a return key in the changes", errSecNoSuchAttr, q, [kSecReturnData as String: true]),
                ("a match key in the changes", errSecNoSuchAttr, q, [kSecMatchLimit as String: kSecMatchLimitAll]),
                ("an attribute of another class", errSecNoSuchAttr, q, [kSecAttrServer as String: "x"]),
                ("empty changes", errSecParam, q, [:]),
                ("a bad value", errSecParam, q, [kSecAttrAccessible as String: "never"]),
                ("access group not entitled", errSecMissingEntitlement, q, [kSecAttrAccessGroup as String: ConformanceSuite.foreignGroup]),
                ("query without class", errSecParam, q.filter { $0.key != genpClass }, [kSecAttrLabel as String: "x"]),
                ("query with unknown class", errSecNoSuchClass, q.merging([genpClass: "nope"]) { $1 }, [kSecAttrLabel as String: "x"]),
                ("query with an attribute of another class", errSecNoSuchAttr, q.merging([kSecAttrPath as String: "/"]) { $1 }, [kSecAttrLabel as String: "x"]),
            ]
            for (label, status, query, changes) in cases {
                try c.expectRejected(status, "update: \(label)") { c.update(query, changes) }
            }
        },
        ConformanceCase("bad deletes are rejected with the right status and change nothing") { c in
            try c.addGenp("svc", "a")
            let q = c.genp("svc", "a")
            let cases: [(String, OSStatus, [String: Any])] = [
                ("no kSecClass", errSecParam, q.filter { $0.key != genpClass }),
                ("unknown class", errSecNoSuchClass, q.merging([genpClass: "nope"]) { $1 }),
                ("attribute not in the class", errSecNoSuchAttr, q.merging([kSecAttrProtocol as String: kSecAttrProtocolSSH]) { $1 }),
                ("unknown key", errSecParam, q.merging(["notAKey": 1]) { $1 }),
            ]
            for (label, status, query) in cases {
                try c.expectRejected(status, "delete: \(label)") { c.delete(query) }
            }
        },
        ConformanceCase("size limits: 16 KiB per attribute value and 1 MiB of data; beyond them errSecParam, nothing changed") { c in
            let maxAttribute = ItemLimits.maxAttributeLength
            let maxData = ItemLimits.maxDataLength
            // At the limits: stored and read back whole, by every backend.
            let atLimit = c.genp("limits", "at", [
                kSecAttrLabel as String: String(repeating: "l", count: maxAttribute),
                kSecAttrGeneric as String: Data(repeating: 7, count: maxAttribute),
                kSecValueData as String: Data(repeating: 0x5A, count: maxData),
            ])
            try c.expectStatus(c.add(atLimit), errSecSuccess, "add at the limits")
            let (status, found) = c.copy(c.genp("limits", "at", [kSecReturnData as String: true]))
            try c.expectStatus(status, errSecSuccess, "read at the limits")
            try c.expect((found as? Data)?.count == maxData, "the 1 MiB of data comes back whole")
            try c.addGenp("limits", "small")
            let q = c.genp("limits", "small")
            // The report's 20 MB label, and one byte over each limit.
            let adds: [(String, [String: Any])] = [
                ("a 20 MB label", c.genp("limits", "big", [kSecAttrLabel as String: String(repeating: "x", count: 20_000_000)])),
                ("a label one byte over", c.genp("limits", "big", [kSecAttrLabel as String: String(repeating: "é", count: maxAttribute / 2) + "x"])),
                ("an account one byte over", c.genp("limits", String(repeating: "a", count: maxAttribute + 1))),
                ("kSecAttrGeneric one byte over", c.genp("limits", "big", [kSecAttrGeneric as String: Data(count: maxAttribute + 1)])),
                ("data one byte over", c.genp("limits", "big", [kSecValueData as String: Data(count: maxData + 1)])),
            ]
            for (label, query) in adds {
                try c.expectRejected(errSecParam, "add: \(label)") { c.add(query) }
            }
            let changes: [(String, [String: Any])] = [
                ("a label one byte over", [kSecAttrLabel as String: String(repeating: "x", count: maxAttribute + 1)]),
                ("data one byte over", [kSecValueData as String: Data(count: maxData + 1)]),
            ]
            for (label, change) in changes {
                try c.expectRejected(errSecParam, "update: \(label)") { c.update(q, change) }
            }
            // A search for an oversized value is not an error: it finds nothing.
            try c.expectStatus(c.copy(c.genp("limits", String(repeating: "a", count: maxAttribute + 1))).0, errSecItemNotFound, "search")
        },
    ]
}
