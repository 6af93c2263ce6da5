import Foundation
import SecItem
import SecItemCore
import SecItemSealedStore
import SecItemSQLite

/// A loop to profile the file lookup path under `perf record` (not part of a full run:
/// only `--filter profile/file` runs it). A store of 1,000 items and the minimal design
/// beside it; `SECITEM_BENCH_PROFILE_SECONDS` (default 5) of hits, then of misses, on
/// the backend and then on the minimal design, each printed as lookups per second.
/// `--op hit` or `--op miss` runs one kind only; `--op minimal` or `--op secitem` one side.
/// `--op floor`: the floor of this format, ``RawFileKeychain/lookupData(account:)`` (the
/// backend's data-alone lookup at C level), on a store of its own; `floor+dict` the same
/// with the app's query dictionary built per lookup, as the SecItem loop's closure builds it.
enum ProfileBenchmarks {
    static func group(_ options: Options, _ results: inout [Measurement], _ extra: inout [[String: Any]]) {
        guard let filter = options.filter, filter == "profile/file" else { return }
        announce(filter)
        do { try runFile() } catch { fail(filter, error) }
    }

    static func runFile() throws {
        let seconds = ProcessInfo.processInfo.environment["SECITEM_BENCH_PROFILE_SECONDS"].flatMap(Double.init) ?? 5
        let ops = Workload.opFilter?.split(separator: ",").map(String.init) ?? []
        func wanted(_ name: String) -> Bool { ops.isEmpty || ops.contains { name.contains($0) } }
        let items = 1_000
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let backend = try SQLiteBackend(
            configuration: .init(path: dir + "/keychain.db", keySource: .rawKey(Data(try randomBytes(32)))))
        defer { backend.close() }
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["bench"]))
        let workload = Workload(client: client, items: items, samples: 0, warmup: 0)
        try backend.inBulkTransaction { try workload.populate() }
        let minimal = try MinimalFileKeychain(path: dir + "/minimal.db")
        try minimal.bulk {
            for i in 0..<items {
                try minimal.add(account: Workload.account(i), label: Workload.label(i, items: items), data: bytes(Workload.data(i)))
            }
        }
        let raw = try RawFileKeychain(path: dir + "/raw.db")
        try raw.bulk {
            for i in 0..<items {
                try raw.add(account: Workload.account(i), label: Workload.label(i, items: items),
                            data: bytes(Workload.data(i)), joiningOpenTransaction: true)
            }
        }
        guard try raw.lookupData(account: Workload.account(items - 1)) == 32, try raw.lookupData(account: "missing") == -1
        else { throw BenchmarkError("the floor's store does not hold the workload's items") }
        // One call of each kind first: the first read after the bulk fill synchronises
        // (and checks the indexes against the rows), a one-off no loop should count.
        _ = try client.copyMatchingItems(Workload.lookupQuery(Workload.account(0)))
        _ = try? client.copyMatchingItems(Workload.lookupQuery("missing"))
        _ = try minimal.lookup(account: Workload.account(0))
        func loop(_ name: String, _ body: (Int) throws -> Int) rethrows {
            guard wanted(name) else { return }
            let start = nowNanoseconds()
            var n = 0
            while true {
                for _ in 0..<256 {
                    blackHole &+= try body(n)
                    n += 1
                }
                if Double(nowNanoseconds() - start) / 1e9 >= seconds { break }
            }
            let elapsed = Double(nowNanoseconds() - start) / 1e9
            print(String(format: "%-24@ %10.0f lookups/s  %7.0f ns each", name as NSString, Double(n) / elapsed, elapsed * 1e9 / Double(n)))
        }
        try loop("hit secitem") { k in
            (try client.copyMatchingItems(Workload.lookupQuery(Workload.account(workload.existing(k)))) as? Data)?.count ?? -1
        }
        try loop("hit minimal") { k in try minimal.lookup(account: Workload.account(workload.existing(k))) }
        try loop("hit floor") { k in try raw.lookupData(account: Workload.account(workload.existing(k))) }
        try loop("hit floor+dict") { k in
            let query = Workload.lookupQuery(Workload.account(workload.existing(k)))
            return try raw.lookupData(account: query[kSecAttrAccount as String] as! String)
        }
        loop("miss secitem") { k in
            do {
                _ = try client.copyMatchingItems(Workload.lookupQuery("missing-\(k)"))
                return -1
            } catch {
                return Int((error as? SecItemError)?.status ?? 0)
            }
        }
        try loop("miss minimal") { k in try minimal.lookup(account: "missing-\(k)") }
        try loop("miss floor") { k in try raw.lookupData(account: "missing-\(k)") }
        try loop("miss floor+dict") { k in
            let query = Workload.lookupQuery("missing-\(k)")
            return try raw.lookupData(account: query[kSecAttrAccount as String] as! String)
        }
    }
}
