import Foundation
import SecItem
import SecItemCore
import SecItemPostgreSQL
import SecItemSQLite
import SecItemSealedStore

/// The PostgreSQL backend against two baselines on the same server, in the same run,
/// each on a schema of its own: ``DirectPostgreSQLKeychain`` (`libpq+codec`: the same
/// statements and the same crypto on libpq directly, with no SecItem layer: what the
/// layers cost) and ``MinimalPostgreSQLStore`` (`libpq-minimal`: one statement and the
/// irreducible crypto per operation: what the design costs, issue 24's target), and
/// `libpq-floor` (``MinimalPostgreSQLStore/Floor``: the minimal store plus the work our
/// guarantees add, the floor where the target cannot be met).
///
/// Runs when the `PG*` variables name a server (run the benchmark under
/// `scripts/with-postgresql`, which starts a private one on a Unix socket);
/// otherwise says why it was skipped. Both stores are filled in one transaction
/// each; every measured write is its own durable transaction.
enum PostgreSQLBenchmarks {
    static func group(_ options: Options, _ results: inout [Measurement], _ extra: inout [[String: Any]]) {
        let sizes = [1_000, 10_000]
        for size in sizes where options.wants("postgresql/\(size)") {
            let name = "postgresql/\(size)"
            let env = ProcessInfo.processInfo.environment
            guard (env["PGHOST"] ?? "").isEmpty == false || (env["SECITEM_POSTGRESQL_URL"] ?? "").isEmpty == false else {
                print("\(name): skipped: no server named (PGHOST or SECITEM_POSTGRESQL_URL); run under scripts/with-postgresql")
                continue
            }
            announce(name)
            do {
                results += try run(items: size, samples: options.quick ? 100 : 300)
            } catch {
                fail(name, error)
            }
        }
    }

    static func run(items: Int, samples: Int) throws -> [Measurement] {
        var key = try randomBytes(32)
        defer { wipeBytes(&key) }
        let tag = UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(10).lowercased()
        let backendConfiguration = PostgreSQLBackend.Configuration(keySource: .rawKey(Data(key)), schema: "bench_\(tag)")
        let rawConfiguration = PostgreSQLBackend.Configuration(keySource: .rawKey(Data(key)), schema: "bench_raw_\(tag)")
        let make = { (i: Int) in (Workload.account(i), Workload.label(i, items: items), bytes(Workload.data(i))) }
        // The backend's store, filled in one transaction by the direct driver (items
        // as SecItemAdd makes them: same primary key, group, attributes).
        try DirectPostgreSQLKeychain(configuration: backendConfiguration, service: Workload.service, accessGroup: "bench")
            .fill(items, make)
        let backend = try PostgreSQLBackend(configuration: backendConfiguration)
        defer { backend.close() }
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["bench"]))
        let workload = Workload(client: client, items: items, samples: samples, warmup: max(5, samples / 10))

        let raw = try DirectPostgreSQLKeychain(configuration: rawConfiguration, service: Workload.service, accessGroup: "bench")
        try raw.fill(items, make)
        let last = Workload.account(items - 1)
        guard (try client.copyMatchingItems(Workload.lookupQuery(last)) as? Data) == Workload.data(items - 1),
            try raw.lookup(account: last) == 32, try raw.count(label: Workload.label(0, items: items)) == min(100, items)
        else { throw BenchmarkError("the populated stores do not hold the workload's items") }
        let baselines = Baselines.direct("libpq+codec", DirectStore(raw: raw), workload)
        // The irreducible work (issue 24's target: every operation ≤ 1.2× this).
        let minimal = try MinimalPostgreSQLStore(schema: "bench_min_\(tag)")
        try minimal.fill(items, make)
        guard try minimal.lookup(account: last) > 32, try minimal.count(label: Workload.label(0, items: items)) == min(100, items) else {
            throw BenchmarkError("the minimal baseline does not hold the workload's items")
        }
        let second = Baselines.direct("libpq-minimal", minimal, workload)
        // The floor: the minimal store plus the work our guarantees add (MinimalPostgreSQLStore.Floor):
        // where the minimal store is out of reach, how far ours is from what it must do.
        let floor = try MinimalPostgreSQLStore(schema: "bench_floor_\(tag)", floor: true)
        try floor.fill(items, make)
        guard try floor.lookup(account: last) > 32, try floor.count(label: Workload.label(0, items: items)) == min(100, items) else {
            throw BenchmarkError("the floor baseline does not hold the workload's items")
        }
        let third = Baselines.direct("libpq-floor", floor, workload)
        return try interleaved(
            workload, rounds: max(1, samples / 50), backend: "postgresql", baselines: baselines, second: second, third: third)
    }
}

/// ``DirectPostgreSQLKeychain`` as the workload's ``RawStore``.
struct DirectStore: RawStore {
    let raw: DirectPostgreSQLKeychain
    func add(account: String, label: String, data: [UInt8]) throws { try raw.add(account: account, label: label, data: data) }
    func lookup(account: String) throws -> Int { try raw.lookup(account: account) }
    func update(account: String, data: [UInt8]) throws -> Int { try raw.update(account: account, data: data) }
    func delete(account: String) throws -> Int { try raw.delete(account: account) }
    func count(label: String) throws -> Int { try raw.count(label: label) }
}
