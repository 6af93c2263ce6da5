import Foundation
import SecItem
import SecItemCore
import SecItemMemory
import Synchronization

/// The memory backend against the same work done directly: building the same
/// `[String: Any]` query and using a Swift dictionary under the same kind of lock.
enum MemoryBenchmarks {
    static func run(items: Int, samples: Int) throws -> [Measurement] {
        let client = SecItemClient(backend: MemoryBackend(), accessGroups: AccessGroups(["bench"]))
        let workload = Workload(client: client, items: items, samples: samples, warmup: samples / 10)
        try workload.populate()

        // The baseline store: key "service\0account" → (data, attributes), behind a Mutex.
        // Unchecked: the attribute values are immutable value types (String, Int, Date), as in the backend.
        struct Entry: @unchecked Sendable { var data: Data; var attributes: [String: Any] }
        var initial: [String: Entry] = [:]
        var byLabel: [String: [String]] = [:]
        for i in 0..<items {
            let key = Workload.service + "\u{0}" + Workload.account(i)
            let label = Workload.label(i, items: items)
            initial[key] = Entry(data: Workload.data(i), attributes: [
                "acct": Workload.account(i), "svce": Workload.service, "labl": label, "agrp": "bench", "pdmn": "ak",
                "sync": 0, "cdat": Date(), "mdat": Date(),
            ])
            byLabel[label, default: []].append(key)
        }
        let store = Mutex(initial)
        let labels = byLabel
        func key(of query: [String: Any]) -> String {
            (query[kSecAttrService as String] as? String ?? "") + "\u{0}" + (query[kSecAttrAccount as String] as? String ?? "")
        }
        let baselines = Baselines(
            add: .init(name: "dictionary+lock") { k in
                let q = Workload.addQuery(k, items: items, account: "new-\(k)")
                let data = q[kSecValueData as String] as? Data ?? Data()
                return store.withLock { s in
                    s[key(of: q)] = Entry(data: data, attributes: q)
                    return s.count
                }
            },
            lookupHit: .init(name: "dictionary+lock") { k in
                let q = Workload.lookupQuery(Workload.account(workload.existing(k)))
                return store.withLock { $0[key(of: q)]?.data.count ?? -1 }
            },
            lookupMiss: .init(name: "dictionary+lock") { k in
                let q = Workload.lookupQuery("missing-\(k)")
                return store.withLock { $0[key(of: q)]?.data.count ?? -1 }
            },
            update: .init(name: "dictionary+lock") { k in
                let q: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: Workload.service,
                                        kSecAttrAccount as String: Workload.account(workload.existing(k))]
                let changes: [String: Any] = [kSecValueData as String: Workload.data(k &+ 1)]
                return store.withLock { s in
                    s[key(of: q)]?.data = changes[kSecValueData as String] as? Data ?? Data()
                    return 1
                }
            },
            delete: .init(name: "dictionary+lock") { k in
                let q: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: Workload.service,
                                        kSecAttrAccount as String: "new-\(k)"]
                return store.withLock { $0.removeValue(forKey: key(of: q)) == nil ? 0 : 1 }
            },
            query100: .init(name: "dictionary+lock") { k in
                let label = Workload.label(workload.existing(k), items: items)
                let q: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: Workload.service,
                                        kSecAttrLabel as String: label, kSecReturnAttributes as String: true,
                                        kSecMatchLimit as String: kSecMatchLimitAll]
                let keys = labels[q[kSecAttrLabel as String] as? String ?? ""] ?? []
                let result: [[String: Any]] = store.withLock { s in keys.compactMap { s[$0]?.attributes } }
                return result.count
            }
        )
        // Subject and baseline alternate in rounds, so machine noise hits both alike.
        return try interleaved(workload, rounds: 20, backend: "memory", baselines: baselines)
    }
}
