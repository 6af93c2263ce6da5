import Foundation
import SecItem

/// The operations every backend is measured on, through the public SecItem API.
///
/// A store holds `items` generic passwords of service "bench", accounts `acct-<i>`,
/// 32 bytes of data, and labels `label-<i % (items/100)>` so that a label query
/// returns 100 items.
struct Workload {
    let client: SecItemClient
    let items: Int
    var samples: Int
    var warmup: Int

    static let service = "bench"
    static func account(_ i: Int) -> String { "acct-\(i)" }
    static func label(_ i: Int, items: Int) -> String { "label-\(i % max(1, items / 100))" }
    static func data(_ i: Int) -> Data { Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &+ i) }) }

    /// The add dictionary of item `i`, as an app builds it.
    static func addQuery(_ i: Int, items: Int, account: String? = nil) -> [String: Any] {
        [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecAttrAccount as String: account ?? Workload.account(i), kSecAttrLabel as String: label(i, items: items),
            kSecValueData as String: data(i),
        ]
    }

    static func lookupQuery(_ account: String) -> [String: Any] {
        [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecAttrAccount as String: account, kSecReturnData as String: true,
        ]
    }

    /// Fills the store through SecItemAdd.
    func populate() throws {
        for i in 0..<items {
            try client.addItem(Self.addQuery(i, items: items))
        }
    }

    /// A deterministic spread of existing indices.
    func existing(_ k: Int) -> Int { (k &* 7919) % items }

    /// The six operations, measured through the client.
    /// `--op TEXT[,TEXT…]`: only operations whose name contains one of the TEXTs (for
    /// profiling one of them, or a chosen interleaving: `--op add,lookup`).
    nonisolated(unsafe) static var opFilter: String?

    /// Whether `--op` selects `op` (every operation when it is not given).
    static func wants(_ op: String, filter: String? = opFilter) -> Bool {
        filter.map { $0.split(separator: ",").contains { op.contains($0) } } ?? true
    }

    /// `second`: another baseline for the same operations (measured in the same
    /// rounds); each operation then gets a second row, the same samples against it.
    /// The subject and its baselines alternate call by call (``sampleAlternating(count:warmup:_:)``).
    ///
    /// A run leaves every store as it found it, whichever operations `--op` selects:
    /// `add` creates accounts `new-<k>` that `delete` removes, so with `add` alone its
    /// items are deleted untimed after the round (the next round adds them again), and
    /// with `delete` alone they are added untimed before it (it would time deleting
    /// nothing). Each delete is checked: a round that does not remove exactly what it
    /// added fails the run rather than report the wrong work.
    func run(backend: String, baselines: Baselines, second: Baselines? = nil, third: Baselines? = nil) throws -> [Measurement] {
        let opFilter = Self.opFilter
        var out: [Measurement] = []
        let n = samples, w = warmup
        func measure(
            _ op: String, count: Int? = nil, warmup: Int? = nil, _ which: KeyPath<Baselines, Baselines.Work?>,
            _ subject: @escaping (Int) throws -> Int
        ) throws {
            guard Self.wants(op, filter: opFilter) else { return }
            let first = baselines[keyPath: which], other = second?[keyPath: which], last = third?[keyPath: which]
            let bodies = [subject] + [first, other, last].compactMap { $0?.body }
            let measured = try sampleAlternating(count: count ?? n, warmup: warmup ?? w, bodies)
            out.append(Measurement(backend: backend, op: op, items: items, samples: measured[0],
                                   baseline: first?.name, baselineSamples: first == nil ? [] : measured[1]))
            var next = first == nil ? 1 : 2
            for (given, work) in [(second, other), (third, last)] where given != nil {
                out.append(Measurement(backend: backend, op: op, items: items, samples: measured[0],
                                       baseline: work?.name, baselineSamples: work == nil ? [] : measured[next]))
                if work != nil { next += 1 }
            }
        }
        let client = self.client, items = self.items, existing = self.existing
        let add: (Int) throws -> Int = { k in
            try client.addItem(Self.addQuery(k, items: items, account: "new-\(k)"))
            return k
        }
        let delete: (Int) throws -> Int = { k in
            let q: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: Self.service,
                kSecAttrAccount as String: "new-\(k)",
            ]
            return try client.deleteItems(q)
        }
        // The stores' add and delete, subject first: what `add` and `delete` need of each other.
        let pairs: [(name: String, add: ((Int) throws -> Int)?, delete: ((Int) throws -> Int)?)] =
            [(backend, add, delete)] + [baselines, second, third].compactMap { $0 }.map { ($0.add?.name ?? $0.delete?.name ?? "", $0.add?.body, $0.delete?.body) }
        let keys = 0..<(w + n)  // the k of every call sampleAlternating makes
        let adding = Self.wants("add", filter: opFilter), deleting = Self.wants("delete", filter: opFilter)
        /// Runs `body` untimed on every key; each call must return `expected` (deletes: 1 removed).
        func untimed(_ what: String, _ body: ((Int) throws -> Int)?, of name: String, expected: Int? = nil) throws {
            guard let body else {
                throw BenchmarkError("\(backend): --op \(opFilter ?? "") needs \(name)'s \(what) to keep the store as the other operations expect, and it has none")
            }
            for k in keys {
                let r = try body(k)
                if let expected, r != expected {
                    throw BenchmarkError("\(backend): \(name)'s \(what) of item new-\(k) returned \(r), not \(expected): the store is not in the state the workload expects")
                }
            }
        }
        for pair in pairs where deleting && !adding && pair.delete != nil {
            try untimed("add", pair.add, of: pair.name)
        }
        try measure("add", \.add, add)
        try measure("lookup-hit", \.lookupHit) { k in
            (try client.copyMatchingItems(Self.lookupQuery(Self.account(existing(k)))) as? Data)?.count ?? -1
        }
        try measure("lookup-miss", \.lookupMiss) { k in
            do {
                _ = try client.copyMatchingItems(Self.lookupQuery("missing-\(k)"))
                return -1
            } catch {
                return Int((error as? SecItemError)?.status ?? 0)
            }
        }
        try measure("update", \.update) { k in
            let q: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: Self.service,
                kSecAttrAccount as String: Self.account(existing(k)),
            ]
            return try client.updateItems(q, [kSecValueData as String: Self.data(k &+ 1)])
        }
        try measure("delete", \.delete, delete)
        for pair in pairs where adding && !deleting && pair.add != nil {
            try untimed("delete", pair.delete, of: pair.name, expected: 1)
        }
        let queryCount = max(5, n / 10)
        try measure("query-100-attrs", count: queryCount, warmup: 2, \.query100) { k in
            let q: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: Self.service,
                kSecAttrLabel as String: Self.label(existing(k), items: items), kSecReturnAttributes as String: true,
                kSecMatchLimit as String: kSecMatchLimitAll,
            ]
            return (try client.copyMatchingItems(q) as? [[String: Any]])?.count ?? -1
        }
        return out
    }
}

/// A store driven directly, without the SecItem layers: the baseline of a backend.
protocol RawStore {
    func add(account: String, label: String, data: [UInt8]) throws
    func lookup(account: String) throws -> Int
    func update(account: String, data: [UInt8]) throws -> Int
    func delete(account: String) throws -> Int
    /// How many items carry `label`.
    func count(label: String) throws -> Int
}

extension Baselines {
    /// The six operations done on `raw` with the workload's data. `newPrefix`
    /// names the accounts `add` creates and `delete` removes.
    static func direct(_ name: String, _ raw: some RawStore, _ workload: Workload, newPrefix: String = "new-") -> Baselines {
        let items = workload.items
        return Baselines(
            add: .init(name: name) { k in
                try raw.add(account: "\(newPrefix)\(k)", label: Workload.label(k, items: items), data: [UInt8](Workload.data(k)))
                return k
            },
            lookupHit: .init(name: name) { k in try raw.lookup(account: Workload.account(workload.existing(k))) },
            lookupMiss: .init(name: name) { k in try raw.lookup(account: "missing-\(k)") },
            update: .init(name: name) { k in
                try raw.update(account: Workload.account(workload.existing(k)), data: [UInt8](Workload.data(k &+ 1)))
            },
            delete: .init(name: name) { k in try raw.delete(account: "\(newPrefix)\(k)") },
            query100: .init(name: name) { k in try raw.count(label: Workload.label(workload.existing(k), items: items)) }
        )
    }
}

/// What each operation is compared with, measured in the same run.
struct Baselines {
    struct Work {
        var name: String
        var body: (Int) throws -> Int
    }

    var add: Work?
    var lookupHit: Work?
    var lookupMiss: Work?
    var update: Work?
    var delete: Work?
    var query100: Work?
}
