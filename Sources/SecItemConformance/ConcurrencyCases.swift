import SecItemCore
import Foundation
import Dispatch
import Synchronization

/// Many threads at once, with a consistent end state.
enum ConcurrencyCases {
    static let all: [ConformanceCase] = [
        ConformanceCase("threads × mixed operations end in a consistent state") { c in
            let threads = c.options.threads
            let perThread = c.options.operationsPerThread
            let unexpected = Mutex<[String]>([])
            let models = Mutex<[Int: [String: Data]]>([:])
            // Each thread's operations come from its own generator derived from one
            // seed: SECITEM_TEST_SEED replays them (the interleaving is the scheduler's).
            let random = SeededRandom()
            DispatchQueue.concurrentPerform(iterations: threads) { t in
                var model: [String: Data] = [:]
                var rng = random.derived(t)
                func note(_ s: String) { unexpected.withLock { if $0.count < 20 { $0.append(s) } } }
                for i in 0..<perThread {
                    // Private keys: the thread's model predicts every status exactly.
                    let account = "t\(t)-k\(Int.random(in: 0..<8, using: &rng))"
                    let value = Data("v\(t)-\(i)".utf8)
                    // Shared keys: any thread may hold them; only the statuses are checked.
                    let shared = "shared-\(Int.random(in: 0..<4, using: &rng))"
                    switch Int.random(in: 0..<6, using: &rng) {
                    case 0:
                        let s = c.add(c.genp("conc", account, [kSecValueData as String: value]))
                        if s != (model[account] == nil ? errSecSuccess : errSecDuplicateItem) { note("add \(account): \(s)") }
                        if s == errSecSuccess { model[account] = value }
                    case 1:
                        let s = c.update(c.genp("conc", account), [kSecValueData as String: value])
                        if s != (model[account] == nil ? errSecItemNotFound : errSecSuccess) { note("update \(account): \(s)") }
                        if s == errSecSuccess { model[account] = value }
                    case 2:
                        let s = c.delete(c.genp("conc", account))
                        if s != (model[account] == nil ? errSecItemNotFound : errSecSuccess) { note("delete \(account): \(s)") }
                        model[account] = nil
                    case 3:
                        let (s, d) = c.readData("conc", account)
                        if let expected = model[account] {
                            if s != errSecSuccess || d != expected { note("read \(account): \(s)") }
                        } else if s != errSecItemNotFound { note("read missing \(account): \(s)") }
                    case 4:
                        let s = c.add(c.genp("conc", shared, [kSecValueData as String: value]))
                        if s != errSecSuccess && s != errSecDuplicateItem { note("shared add: \(s)") }
                    default:
                        let s = i % 2 == 0 ? c.delete(c.genp("conc", shared)) : c.readData("conc", shared).0
                        if s != errSecSuccess && s != errSecItemNotFound { note("shared delete/read: \(s)") }
                    }
                }
                models.withLock { $0[t] = model }
            }
            let problems = unexpected.withLock { $0 }
            try c.expect(problems.isEmpty, "unexpected statuses: \(problems); \(random.replayHint)")
            let expected = models.withLock { $0 }.values.reduce(into: [String: Data]()) { $0.merge($1) { a, _ in a } }
            for (account, value) in expected {
                try c.expect(c.readData("conc", account).1 == value, "final value of \(account); \(random.replayHint)")
            }
            let q: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "conc"]
            let total = try c.count(q)
            let sharedCount = try c.count(q.merging([kSecAttrAccount as String: "shared-0"]) { $1 })
                + (try c.count(q.merging([kSecAttrAccount as String: "shared-1"]) { $1 }))
                + (try c.count(q.merging([kSecAttrAccount as String: "shared-2"]) { $1 }))
                + (try c.count(q.merging([kSecAttrAccount as String: "shared-3"]) { $1 }))
            try c.expect(total == expected.count + sharedCount, "no lost or extra items: \(total) vs \(expected.count) + \(sharedCount); \(random.replayHint)")
            try c.expect(sharedCount <= 4, "each shared key at most once")
        },
    ]
}
