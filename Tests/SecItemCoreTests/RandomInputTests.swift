import Testing
import Foundation
import SecItemConformance
import SecItemCore
import SecItemMemory

/// Random dictionaries through all four calls: never a crash, only documented
/// statuses, and a failed call never changes the store. Seeded: a failure names
/// its seed; `SECITEM_TEST_SEED=N` replays it.
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

    @Test("the generator replays: the same seed gives the same dictionaries")
    func replay() {
        var a = SeededRandom(seed: 42)
        var b = SeededRandom(environment: ["SECITEM_TEST_SEED": "42"])
        #expect(b.seed == 42)
        func text(_ d: [String: Any]) -> String { d.keys.sorted().map { "\($0)=\(d[$0]!)" }.joined(separator: ";") }
        for _ in 0..<50 {
            #expect(text(Self.randomDictionary(&a)) == text(Self.randomDictionary(&b)))
        }
        #expect(SeededRandom(environment: ["SECITEM_TEST_SEED": "0x2a"]).seed == 42)
        #expect(SeededRandom(seed: 42).derived(0).seed != SeededRandom(seed: 42).derived(1).seed)
    }

    @Test("5000 random calls")
    func randomCalls() throws {
        var rng = SeededRandom()
        let replay = rng.replayHint
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
            #expect(Self.documented.contains(status), "round \(round): undocumented status \(status); \(replay)")
            if status != errSecSuccess {
                let after = try Set(store.fetch(matching: everything, limit: nil))
                #expect(before == after, "round \(round): a failed call (\(status)) changed the store; \(replay)")
            }
        }
    }
}
