import Foundation
import SecItem
import SecItemCore
import SecItemPostgreSQL
import SecItemSQLite
import SecItemSealedStore

/// The rollback evidence's cost (docs/file-format.md, "Rollback evidence"): the same
/// operations on one store through two backends, one with the check on (marks in a
/// temporary state directory) and one with it off (the baseline), alternating in
/// rounds of 50 within one run.
///
/// - `lookup`: a hit by primary key, the store unchanged (the common case: no extra work).
/// - `lookup-after-commit`: a hit right after another connection committed a write, so
///   the check runs (the state is read again and compared with the mark, which is
///   raised); the other connection's write is not timed.
/// - `update`: an update of one item (the write reads the mark; after the commit it raises it).
enum RollbackBenchmarks {
    static func group(_ options: Options, _ results: inout [Measurement], _ extra: inout [[String: Any]]) {
        if options.wants("rollback/file") {
            announce("rollback/file")
            do {
                results += try runFile(samples: options.quick ? 200 : 1_000)
            } catch {
                fail("rollback/file", error)
            }
        }
        if options.wants("rollback/postgresql") {
            let env = ProcessInfo.processInfo.environment
            guard (env["PGHOST"] ?? "").isEmpty == false || (env["SECITEM_POSTGRESQL_URL"] ?? "").isEmpty == false else {
                print("rollback/postgresql: skipped: no server named (PGHOST or SECITEM_POSTGRESQL_URL); run under scripts/with-postgresql")
                return
            }
            announce("rollback/postgresql")
            do {
                results += try runPostgreSQL(samples: options.quick ? 200 : 1_000)
            } catch {
                fail("rollback/postgresql", error)
            }
        }
    }

    static let items = 1_000

    /// The two clients (check on, check off) and a third connection that writes.
    struct Pair {
        var on: SecItemClient
        var off: SecItemClient
        var other: SecItemClient
    }

    static func measure(_ pair: Pair, backend: String, samples: Int) throws -> [Measurement] {
        let rounds = max(1, samples / 50)
        var lookupOn: [UInt64] = [], lookupOff: [UInt64] = []
        var afterOn: [UInt64] = [], afterOff: [UInt64] = []
        var updateOn: [UInt64] = [], updateOff: [UInt64] = []
        var k = 0
        func lookup(_ client: SecItemClient) throws -> Int {
            k += 1
            let data = try client.copyMatchingItems(Workload.lookupQuery(Workload.account((k &* 7919) % items))) as? Data
            return data?.count ?? 0
        }
        func poke() throws {
            k += 1
            _ = try pair.other.updateItems(
                [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: Workload.service,
                 kSecAttrAccount as String: Workload.account(k % items)],
                [kSecValueData as String: Workload.data(k)])
        }
        func update(_ client: SecItemClient) throws -> Int {
            k += 1
            return try client.updateItems(
                [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: Workload.service,
                 kSecAttrAccount as String: Workload.account(k % items)],
                [kSecValueData as String: Workload.data(k)])
        }
        for _ in 0..<rounds {
            lookupOn += try sample(count: 50, warmup: 5) { _ in try lookup(pair.on) }
            lookupOff += try sample(count: 50, warmup: 5) { _ in try lookup(pair.off) }
            for _ in 0..<10 {
                try poke()
                afterOn += try sample(count: 1, warmup: 0) { _ in try lookup(pair.on) }
                try poke()
                afterOff += try sample(count: 1, warmup: 0) { _ in try lookup(pair.off) }
            }
            updateOn += try sample(count: 5, warmup: 0) { _ in try update(pair.on) }
            updateOff += try sample(count: 5, warmup: 0) { _ in try update(pair.off) }
        }
        return [
            Measurement(backend: backend, op: "lookup", items: items, samples: lookupOn, baseline: "check off", baselineSamples: lookupOff),
            Measurement(backend: backend, op: "lookup-after-commit", items: items, samples: afterOn, baseline: "check off",
                        baselineSamples: afterOff),
            Measurement(backend: backend, op: "update", items: items, samples: updateOn, baseline: "check off", baselineSamples: updateOff),
        ]
    }

    static func fill(_ client: SecItemClient) throws {
        for i in 0..<items { try client.addItem(Workload.addQuery(i, items: items)) }
    }

    static func runFile(samples: Int) throws -> [Measurement] {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let key = Data(try randomBytes(32))
        let path = dir + "/rollback.db"
        let witness = StateDirectoryWitness(directory: dir + "/state")
        func open(_ mode: RollbackCheckMode) throws -> SQLiteBackend {
            try SQLiteBackend(configuration: .init(path: path, keySource: .rawKey(key), rollbackCheck: mode, rollbackWitness: witness))
        }
        let on = try open(.enforce), off = try open(.off), other = try open(.off)
        defer { [on, off, other].forEach { $0.close() } }
        let groups = AccessGroups(["bench"])
        let pair = Pair(
            on: SecItemClient(backend: on, accessGroups: groups), off: SecItemClient(backend: off, accessGroups: groups),
            other: SecItemClient(backend: other, accessGroups: groups))
        try other.inBulkTransaction { try fill(pair.other) }
        return try measure(pair, backend: "file", samples: samples)
    }

    static func runPostgreSQL(samples: Int) throws -> [Measurement] {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let key = Data(try randomBytes(32))
        let schema = "bench_rb_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(10).lowercased()
        let witness = StateDirectoryWitness(directory: dir + "/state")
        func open(_ mode: RollbackCheckMode) throws -> PostgreSQLBackend {
            try PostgreSQLBackend(configuration: .init(keySource: .rawKey(key), schema: schema, rollbackCheck: mode, rollbackWitness: witness))
        }
        let on = try open(.enforce), off = try open(.off), other = try open(.off)
        defer { [on, off, other].forEach { $0.close() } }
        let groups = AccessGroups(["bench"])
        let pair = Pair(
            on: SecItemClient(backend: on, accessGroups: groups), off: SecItemClient(backend: off, accessGroups: groups),
            other: SecItemClient(backend: other, accessGroups: groups))
        try fill(pair.other)
        return try measure(pair, backend: "postgresql", samples: samples)
    }
}
