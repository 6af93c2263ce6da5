import Foundation
import Glibc
import SecItem
import SecItemCore
import SecItemMemory
import SecItemPostgreSQL
import SecItemSealedStore
import SecItemSQLite
import Synchronization

/// Lookups from many threads on one store (issue 24): 1, 2, 4, 8 and 32 threads each
/// doing `SecItemCopyMatching` hits on a store of 1,000 items for a fixed time, on
/// memory and file (PostgreSQL: ``PostgreSQLScaling``). Reported as
/// lookups per second and the ratio to one thread, all measured in the same rounds
/// (every thread count once per round, rounds alternating, median of the rounds).
/// Then the same readers with one more thread adding items without pause: the
/// readers' throughput against their own without the writer, in the same rounds.
/// Memory and file are each measured beside their minimal design under the same
/// threads, in the same rounds (`… minimal` rows, ScalingBaselines.swift): the
/// machine's own limit, against which the backend's ratios are read.
enum ScalingBenchmarks {
    static let threadCounts = counts("SECITEM_BENCH_SCALING_THREADS") ?? [1, 2, 4, 8, 32]
    static let writerReaderCounts = counts("SECITEM_BENCH_SCALING_WRITER_READERS") ?? [1, 2]
    /// `SECITEM_BENCH_SCALING_WRITES_PER_SECOND=N`: the writer adds at most N items a second,
    /// the backend's and the minimal design's alike, so their readers share the store with
    /// the same writes (unpaced, each writer goes as fast as its disk lets it commit).
    static let writerPace = ProcessInfo.processInfo.environment["SECITEM_BENCH_SCALING_WRITES_PER_SECOND"].flatMap(Double.init)

    /// A comma-separated list of thread counts from the environment (to profile one
    /// configuration: `SECITEM_BENCH_SCALING_THREADS=2 SECITEM_BENCH_SCALING_WRITER_READERS=`).
    static func counts(_ name: String) -> [Int]? {
        ProcessInfo.processInfo.environment[name].map { $0.split(separator: ",").compactMap { Int($0) } }
    }

    struct Row {
        var backend: String
        var threads: Int
        var writer: Bool
        var rates: [Double] = []
        /// Lookups per second of CPU time the process used (all its threads).
        var perCPU: [Double] = []
        /// CPU seconds per wall second: how many cores the process kept busy.
        var cores: [Double] = []
        /// With a writer: the items it added per second (what the readers shared the store with).
        var writes: [Double] = []
        var median: Double { rates.sorted()[rates.count / 2] }
        var medianPerCPU: Double { perCPU.sorted()[perCPU.count / 2] }
        var medianCores: Double { cores.sorted()[cores.count / 2] }
        var medianWrites: Double { writes.isEmpty ? 0 : writes.sorted()[writes.count / 2] }
    }

    static func group(_ options: Options, _ results: inout [Measurement], _ extra: inout [[String: Any]]) {
        guard options.wants("scaling") || options.filter?.hasPrefix("scaling/") == true else { return }
        let env = ProcessInfo.processInfo.environment
        let window = env["SECITEM_BENCH_SCALING_SECONDS"].flatMap(Double.init) ?? (options.quick ? 0.15 : 0.3)
        let rounds = env["SECITEM_BENCH_SCALING_ROUNDS"].flatMap(Int.init) ?? (options.quick ? 3 : 5)
        let stores: [(String, () throws -> (SecItemClient, () -> Void))] = [
            ("memory", { (try populated(MemoryBackend()), {}) }),
            ("file", {
                let dir = try makeTemporaryDirectory()
                let backend = try SQLiteBackend(
                    configuration: .init(path: dir + "/keychain.db", keySource: .rawKey(Data(try randomBytes(32)))))
                let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["bench"]))
                try backend.inBulkTransaction { try Workload(client: client, items: 1_000, samples: 0, warmup: 0).populate() }
                return (client, {
                    backend.close()
                    try? FileManager.default.removeItem(atPath: dir)
                })
            }),
        ]
        // PostgreSQL: PostgreSQLScaling (its pool size as configured, the minimal store beside it).
        let maxThreads = (threadCounts + writerReaderCounts).max() ?? 1
        let minimals: [String: () throws -> (Subject, () -> Void)] = [
            "memory": { (Subject(ScalingBaselines.MemoryStore(items: 1_000)), {}) },
            "file": {
                let dir = try makeTemporaryDirectory()
                let store = try ScalingBaselines.FileStore(path: dir + "/minimal.db", items: 1_000, readers: maxThreads)
                return (Subject(store), { try? FileManager.default.removeItem(atPath: dir) })
            },
        ]
        var table: [Row] = []
        for (name, make) in stores where options.wants("scaling/\(name)") {
            announce("scaling/\(name)")
            do {
                let (client, done) = try make()
                defer { done() }
                let minimal = try minimals[name]?()
                defer { minimal?.1() }
                // The backend's rows, then its minimal design's, measured in the same rounds.
                var subjects = [(name, Subject(client))]
                if let minimal { subjects.append((name + " minimal", minimal.0)) }
                var rows = subjects.map { backend, _ in
                    threadCounts.map { Row(backend: backend, threads: $0, writer: false) }
                        + writerReaderCounts.map { Row(backend: backend, threads: $0, writer: true) }
                }
                // Warm every connection a thread count will use.
                for (_, subject) in subjects { _ = try measure(subject, threads: maxThreads, writer: false, seconds: window / 2) }
                for _ in 0..<rounds {
                    for i in rows[0].indices {
                        for (s, (_, subject)) in subjects.enumerated() {
                            let m = try measure(subject, threads: rows[s][i].threads, writer: rows[s][i].writer, seconds: window)
                            rows[s][i].rates.append(m.rate)
                            rows[s][i].perCPU.append(m.perCPU)
                            rows[s][i].cores.append(m.cores)
                            rows[s][i].writes.append(m.writes)
                        }
                    }
                }
                table += rows.flatMap { $0 }
            } catch {
                fail("scaling/\(name)", error)
            }
        }
        guard !table.isEmpty else { return }
        print(report(table))
        for row in table {
            let one = table.first { $0.backend == row.backend && $0.threads == 1 && !$0.writer }?.median ?? .nan
            let alone = table.first { $0.backend == row.backend && $0.threads == row.threads && !$0.writer }?.median ?? .nan
            extra.append([
                "backend": row.backend, "op": row.writer ? "lookup-scaling-with-writer" : "lookup-scaling",
                "threads": row.threads, "lookups_per_second": row.median, "ratio_to_one_thread": row.median / one,
                "ratio_to_no_writer": row.writer ? row.median / alone : NSNull(),
                "lookups_per_cpu_second": row.medianPerCPU, "cores_busy": row.medianCores,
                "writer_adds_per_second": row.writer ? row.medianWrites : NSNull(),
            ])
        }
    }

    static func populated(_ backend: MemoryBackend) throws -> SecItemClient {
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["bench"]))
        try Workload(client: client, items: 1_000, samples: 0, warmup: 0).populate()
        return client
    }

    /// What a run does: a lookup of item `index` on thread `thread` (whether it found
    /// the item's data), and an add of a new item.
    struct Subject: Sendable {
        var lookup: @Sendable (_ thread: Int, _ index: Int) -> Bool
        var add: @Sendable (_ k: Int, _ tag: String) -> Void

        /// `SecItemCopyMatching` returning the data, `SecItemAdd`, on `client`.
        init(_ client: SecItemClient) {
            lookup = { _, index in (try? client.copyMatchingItems(Workload.lookupQuery(Workload.account(index)))) as? Data != nil }
            add = { k, tag in _ = try? client.addItem(Workload.addQuery(k, items: 1_000, account: "w-\(tag)-\(k)")) }
        }

        init(_ store: ScalingBaselines.MemoryStore) {
            lookup = { _, index in store.lookup(Workload.account(index)) }
            add = { k, tag in store.add(k, tag: tag) }
        }

        init(_ store: ScalingBaselines.FileStore) {
            lookup = { thread, index in store.lookup(thread: thread, Workload.account(index)) }
            add = { k, tag in store.add(k, tag: tag) }
        }
    }

    /// Lookups per second of `threads` threads reading for `seconds` (with one more
    /// thread adding items all along when `writer`).
    static func measure(_ subject: Subject, threads: Int, writer: Bool, seconds: Double) throws
        -> (rate: Double, perCPU: Double, cores: Double, writes: Double)
    {
        let go = Atomic<Bool>(false)
        let stop = Atomic<Bool>(false)
        let ready = Atomic<Int>(0)
        let total = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        let added = Atomic<Int>(0)
        let shared = subject
        var handles: [pthread_t] = []
        func spawn(_ body: @escaping @Sendable () -> Void) {
            final class Box { let body: @Sendable () -> Void; init(_ b: @escaping @Sendable () -> Void) { body = b } }
            var handle = pthread_t()
            let box = Unmanaged.passRetained(Box(body)).toOpaque()
            pthread_create(&handle, nil, { raw in
                let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
                box.body()
                return nil
            }, box)
            handles.append(handle)
        }
        for t in 0..<threads {
            spawn {
                ready.wrappingAdd(1, ordering: .relaxed)
                while !go.load(ordering: .acquiring) { sched_yield() }
                var k = t &* 7919
                var n = 0
                while !stop.load(ordering: .relaxed) {
                    if !shared.lookup(t, (k &* 7919) % 1_000) { failures.wrappingAdd(1, ordering: .relaxed) }
                    k &+= 1
                    n += 1
                }
                total.wrappingAdd(n, ordering: .relaxed)
            }
        }
        if writer {
            let tag = UUID().uuidString.prefix(8)
            spawn {
                ready.wrappingAdd(1, ordering: .relaxed)
                while !go.load(ordering: .acquiring) { sched_yield() }
                var k = 0
                let paced = writerPace.map { 1e9 / $0 }, begin = nowNanoseconds()
                while !stop.load(ordering: .relaxed) {
                    if let paced {
                        let due = begin + UInt64(Double(k) * paced), now = nowNanoseconds()
                        if now < due {
                            usleep(UInt32(min(10_000, (due - now) / 1_000)))
                            continue
                        }
                    }
                    shared.add(k, String(tag))
                    k += 1
                }
                added.store(k, ordering: .relaxed)
            }
        }
        while ready.load(ordering: .relaxed) < handles.count { sched_yield() }
        let cpuStart = cpuSeconds()
        let start = nowNanoseconds()
        go.store(true, ordering: .releasing)
        usleep(UInt32(seconds * 1e6))
        stop.store(true, ordering: .relaxed)
        for h in handles { pthread_join(h, nil) }
        let elapsed = Double(nowNanoseconds() - start) / 1e9
        let cpu = cpuSeconds() - cpuStart
        guard failures.load(ordering: .relaxed) == 0 else { throw BenchmarkError("lookups failed during the scaling run") }
        let lookups = Double(total.load(ordering: .relaxed))
        return (lookups / elapsed, cpu > 0 ? lookups / cpu : 0, cpu / elapsed, Double(added.load(ordering: .relaxed)) / elapsed)
    }

    /// User + system CPU time of the whole process.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    static func report(_ table: [Row]) -> String {
        var lines = ["lookup scaling (1,000 items; lookups/s, median of the rounds; ratio to one thread of the same backend;",
                     "'minimal': the minimal design under the same threads in the same rounds, each thread its own connection)",
                     "(per CPU-s: lookups per second of CPU time; cores: CPU seconds per wall second, how many cores it kept busy)",
                     "backend          threads   lookups/s   ratio   per CPU-s   cores"]
        for row in table where !row.writer {
            let one = table.first { $0.backend == row.backend && $0.threads == 1 && !$0.writer }?.median ?? .nan
            lines.append(row.backend.padding(toLength: 16, withPad: " ", startingAt: 0)
                + String(row.threads).leftPad(8) + String(format: "%.0f", row.median).leftPad(12)
                + String(format: "%.2f×", row.median / one).leftPad(8)
                + String(format: "%.0f", row.medianPerCPU).leftPad(12) + String(format: "%.2f", row.medianCores).leftPad(8))
        }
        lines.append("with one writer thread adding items all along (readers' lookups/s; ratio to the same readers alone;")
        lines.append("'memory minimal': two copies of a dictionary, lookups never waiting for the writer; cores: with 2 readers")
        lines.append("and the writer, 3 threads share 2 cores, so readers alone on both cores can keep at most about 2/3 of their lookups;")
        lines.append("writes/s: the items the writer added per second: the faster the disk lets it commit, the more the readers share;")
        lines.append(writerPace.map { String(format: "the writer paced to at most %.0f a second)", $0) } ?? "the writer unpaced)")
        for row in table where row.writer {
            let alone = table.first { $0.backend == row.backend && $0.threads == row.threads && !$0.writer }?.median ?? .nan
            lines.append(row.backend.padding(toLength: 16, withPad: " ", startingAt: 0)
                + String(row.threads).leftPad(8) + String(format: "%.0f", row.median).leftPad(12)
                + String(format: "%.2f×", row.median / alone).leftPad(8)
                + String(format: "%.0f", row.medianPerCPU).leftPad(12) + String(format: "%.2f", row.medianCores).leftPad(8)
                + String(format: "%.0f", row.medianWrites).leftPad(10) + " writes/s")
        }
        return lines.joined(separator: "\n")
    }
}
