import Foundation
import Glibc
import SecItem
import SecItemCore
import SecItemPostgreSQL
import Synchronization

/// Lookups from many threads on one PostgreSQL keychain (issue 24: 8 threads ≥ 3× one
/// thread), beside the minimal libpq store (``MinimalPostgreSQLStore``) with a pool of
/// the same size, in the same rounds: 1, 2, 4, 8 and 32 threads each doing lookup hits
/// on 1,000 items for a fixed time; then the backend's readers with one more thread
/// adding items all along. Both pools are `SECITEM_POSTGRESQL_POOL_SIZE` connections
/// (default 8), read as the backend reads it. Runs under `scripts/with-postgresql`.
enum PostgreSQLScaling {
    static func group(_ options: Options, _ results: inout [Measurement], _ extra: inout [[String: Any]]) {
        guard options.wants("scaling/postgresql") else { return }
        let env = ProcessInfo.processInfo.environment
        guard !(env["PGHOST"] ?? "").isEmpty || !(env["SECITEM_POSTGRESQL_URL"] ?? "").isEmpty else {
            print("scaling/postgresql: skipped: no server named (PGHOST or SECITEM_POSTGRESQL_URL); run under scripts/with-postgresql")
            return
        }
        announce("scaling/postgresql")
        do {
            extra += try run(quick: options.quick)
        } catch {
            fail("scaling/postgresql", error)
        }
    }

    /// A bounded pool of minimal stores (one connection each, the same schema and keys).
    final class MinimalPool: @unchecked Sendable {
        // @unchecked: `idle` only under `lock`; a store is used by the thread that took it.
        private let lock = Mutex<Void>(())
        private var idle: [MinimalPostgreSQLStore]
        private let slots: DispatchSemaphore

        init(_ stores: [MinimalPostgreSQLStore]) {
            idle = stores
            slots = DispatchSemaphore(value: stores.count)
        }

        func lookup(_ account: String) throws -> Int {
            slots.wait()
            defer { slots.signal() }
            let store = lock.withLock { _ in idle.removeLast() }
            defer { lock.withLock { _ in idle.append(store) } }
            return try store.lookup(account: account)
        }
    }

    static func run(quick: Bool) throws -> [[String: Any]] {
        let env = ProcessInfo.processInfo.environment
        let poolSize = try SecItemConfiguration.environmentOnly(env).value(PostgreSQLBackend.Settings.poolSize) ?? 8
        let window = quick ? 0.15 : 0.3
        let rounds = quick ? 3 : 5
        let tag = UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(10).lowercased()
        let configuration = PostgreSQLBackend.Configuration(
            keySource: .rawKey(Data(try randomBytes(32))), schema: "bench_scale_\(tag)", poolSize: poolSize)
        let make = { (i: Int) in (Workload.account(i), Workload.label(i, items: 1_000), bytes(Workload.data(i))) }
        try DirectPostgreSQLKeychain(configuration: configuration, service: Workload.service, accessGroup: "bench").fill(1_000, make)
        let backend = try PostgreSQLBackend(configuration: configuration)
        defer { backend.close() }
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["bench"]))
        let first = try MinimalPostgreSQLStore(schema: "bench_scale_min_\(tag)")
        try first.fill(1_000, make)
        let minimal = MinimalPool([first] + (try (1..<poolSize).map { _ in try MinimalPostgreSQLStore(schema: "", sharing: first) }))

        let ours: @Sendable (Int) -> Bool = { k in
            (try? client.copyMatchingItems(Workload.lookupQuery(Workload.account(k % 1_000)))) as? Data != nil
        }
        let theirs: @Sendable (Int) -> Bool = { k in ((try? minimal.lookup(Workload.account(k % 1_000))) ?? -1) > 0 }
        let writerTag = UUID().uuidString.prefix(8)
        let writer: @Sendable (Int) -> Void = { k in
            _ = try? client.addItem(Workload.addQuery(k, items: 1_000, account: "w-\(writerTag)-\(k)"))
        }
        typealias Case = (name: String, threads: Int, writer: Bool)
        var cases: [Case] = []
        for threads in ScalingBenchmarks.threadCounts {
            cases.append(("postgresql", threads, false))
            cases.append(("libpq-minimal", threads, false))
        }
        for threads in ScalingBenchmarks.writerReaderCounts { cases.append(("postgresql", threads, true)) }
        var rates = [[Double]](repeating: [], count: cases.count)
        // Every connection of both pools made and warm.
        _ = try measure(threads: 32, seconds: window / 2, reader: ours, writer: nil)
        _ = try measure(threads: 32, seconds: window / 2, reader: theirs, writer: nil)
        for _ in 0..<rounds {
            for (i, c) in cases.enumerated() {
                rates[i].append(
                    try measure(
                        threads: c.threads, seconds: window, reader: c.name == "postgresql" ? ours : theirs,
                        writer: c.writer ? writer : nil))
            }
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        func one(_ name: String) -> Double { median(rates[cases.firstIndex { $0.name == name && $0.threads == 1 && !$0.writer }!]) }
        var load = [Double](repeating: 0, count: 3)
        _ = getloadavg(&load, 3)
        var lines = [
            "PostgreSQL lookup scaling (1,000 items; pool of \(poolSize) connections each; lookups/s, median of \(rounds) rounds; "
                + String(format: "load average %.2f %.2f %.2f)", load[0], load[1], load[2]),
            "threads   postgresql   ratio   libpq-minimal   ratio   postgresql/minimal",
        ]
        var out: [[String: Any]] = []
        for threads in ScalingBenchmarks.threadCounts {
            let a = median(rates[cases.firstIndex { $0.name == "postgresql" && $0.threads == threads && !$0.writer }!])
            let b = median(rates[cases.firstIndex { $0.name == "libpq-minimal" && $0.threads == threads }!])
            lines.append(
                String(threads).leftPad(7) + String(format: "%.0f", a).leftPad(13) + String(format: "%.2f×", a / one("postgresql")).leftPad(8)
                    + String(format: "%.0f", b).leftPad(16) + String(format: "%.2f×", b / one("libpq-minimal")).leftPad(8)
                    + String(format: "%.2f×", b > 0 ? a / b : 0).leftPad(21))
        }
        lines.append("with one writer thread adding items all along (the backend's readers; ratio to the same readers alone)")
        for (i, c) in cases.enumerated() {
            let rate = median(rates[i])
            let one = one(c.name)
            let alone = median(rates[cases.firstIndex { $0.name == c.name && $0.threads == c.threads && !$0.writer }!])
            if c.writer {
                lines.append(String(c.threads).leftPad(7) + String(format: "%.0f", rate).leftPad(13) + String(format: "%.2f×", rate / alone).leftPad(8))
            }
            out.append([
                "backend": c.name, "op": c.writer ? "lookup-scaling-with-writer" : "lookup-scaling", "threads": c.threads,
                "lookups_per_second": rate, "ratio_to_one_thread": rate / one,
                "ratio_to_no_writer": c.writer ? rate / alone : NSNull(), "pool_size": poolSize, "load_average": load[0],
            ])
        }
        print(lines.joined(separator: "\n"))
        return out
    }

    /// Lookups per second of `threads` threads calling `reader` for `seconds` (and one
    /// more thread calling `writer` all along, when given).
    static func measure(
        threads: Int, seconds: Double, reader: @escaping @Sendable (Int) -> Bool, writer: (@Sendable (Int) -> Void)?
    ) throws -> Double {
        let go = Atomic<Bool>(false)
        let stop = Atomic<Bool>(false)
        let total = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        let group = DispatchGroup()
        let ready = DispatchSemaphore(value: 0)
        func spawn(_ body: @escaping @Sendable () -> Void) {
            group.enter()
            Thread {
                ready.signal()
                while !go.load(ordering: .acquiring) { sched_yield() }
                body()
                group.leave()
            }.start()
        }
        for t in 0..<threads {
            spawn {
                var k = t &* 7919
                var n = 0
                while !stop.load(ordering: .relaxed) {
                    if !reader((k &* 7919) % 1_000) { failures.wrappingAdd(1, ordering: .relaxed) }
                    k &+= 1
                    n += 1
                }
                total.wrappingAdd(n, ordering: .relaxed)
            }
        }
        if let writer {
            spawn {
                var k = 0
                while !stop.load(ordering: .relaxed) {
                    writer(k)
                    k += 1
                }
            }
        }
        for _ in 0..<(threads + (writer == nil ? 0 : 1)) { ready.wait() }
        let start = nowNanoseconds()
        go.store(true, ordering: .releasing)
        usleep(UInt32(seconds * 1e6))
        stop.store(true, ordering: .relaxed)
        group.wait()
        let elapsed = Double(nowNanoseconds() - start) / 1e9
        guard failures.load(ordering: .relaxed) == 0 else { throw BenchmarkError("lookups failed during the scaling run") }
        return Double(total.load(ordering: .relaxed)) / elapsed
    }
}
