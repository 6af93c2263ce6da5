import Testing
import Foundation
import SecItem
import SecItemCore
import SecItemMemory

/// Random dictionaries through all four calls: never a crash, only documented
/// statuses, and a failed call never changes the store.
@Suite("Random input")
struct RandomInputTests {
    static let keys: [String] = [
        "class", "acct", "svce", "labl", "agrp", "sync", "pdmn", "port", "ptcl", "srvr", "cdat", "klbl", "bsiz",
        "v_Data", "v_PersistentRef", "v_Ref", "r_Data", "r_Attributes", "r_Ref", "r_PersistentRef", "r_Bogus",
        "m_Limit", "m_CaseInsensitive", "m_ItemList", "m_Bogus", "u_AuthUI", "u_Bogus", "nleg", "zzzz", "x",
        "", "🙂", "musr",
    ]

    static func randomValue(_ rng: inout some RandomNumberGenerator) -> Any {
        switch Int.random(in: 0..<22, using: &rng) {
        case 0: return ["genp", "inet", "cert", "keys", "idnt", "nope"].randomElement(using: &rng)!
        case 1: return "s\(Int.random(in: 0..<4, using: &rng))"
        case 2: return Data((0..<Int.random(in: 0..<8, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        case 3: return Int.random(in: -3...3, using: &rng)
        case 4: return Bool.random(using: &rng)
        case 5: return [Double.nan, .infinity, -.infinity, 1e300, 2.5, 3.0].randomElement(using: &rng)!
        case 6: return Date(timeIntervalSinceReferenceDate: Double(Int.random(in: 0..<1000, using: &rng)))
        case 7: return Optional<String>.none as Any
        case 8: return NSNull()
        case 9: return ["a", 1] as [Any]
        case 10: return ["k": "v"]
        case 11: return ["m_LimitOne", "m_LimitAll", "u_AuthUIA", "u_AuthUIF", "syna", "ak", "dk"].randomElement(using: &rng)!
        case 12: return UInt64.max
        case 13: return Int8(-1)
        case 14: return Float(1.5)
        case 15: return NSNumber(value: Int.random(in: 0...2, using: &rng))
        case 16: return Data(count: 20)
        case 17: return "genp".data(using: .utf8)! + Data(count: 16)
        case 18: return Optional<Bool>.some(true) as Any
        case 19: return Substring("sub")
        case 20: return String(repeating: "long", count: 1000)
        default: return kCFBooleanFalse as Any
        }
    }

    static func randomDictionary(_ rng: inout some RandomNumberGenerator) -> [String: Any] {
        var d: [String: Any] = [:]
        if Int.random(in: 0..<4, using: &rng) > 0 { d["class"] = ["genp", "inet"].randomElement(using: &rng)! }
        for _ in 0..<Int.random(in: 0..<6, using: &rng) {
            d[keys.randomElement(using: &rng)!] = randomValue(&rng)
        }
        return d
    }

    static let documented: Set<OSStatus> = [
        errSecSuccess, errSecParam, errSecNoSuchAttr, errSecNoSuchClass, errSecUnimplemented, errSecItemNotFound,
        errSecDuplicateItem, errSecMissingEntitlement,
    ]

    @Test("5000 random calls")
    func randomCalls() throws {
        var rng = SystemRandomNumberGenerator()
        let store = MemoryBackend()
        let client = SecItemClient(backend: store, accessGroups: AccessGroups(["g1", "g2"]))
        let everything = ItemQuery(itemClass: nil, accessGroups: ["g1", "g2"], synchronizable: .any)
        for round in 0..<5000 {
            let before = try Set(store.fetch(matching: everything, limit: nil))
            let query = Self.randomDictionary(&rng)
            var result: AnyObject?
            let status: OSStatus
            switch round % 4 {
            case 0: status = client.add(query, &result)
            case 1: status = client.copyMatching(query, &result)
            case 2: status = client.update(query, Self.randomDictionary(&rng))
            default: status = client.delete(query)
            }
            #expect(Self.documented.contains(status), "undocumented status \(status)")
            if status != errSecSuccess {
                let after = try Set(store.fetch(matching: everything, limit: nil))
                #expect(before == after, "a failed call (\(status)) changed the store")
            }
        }
    }
}
