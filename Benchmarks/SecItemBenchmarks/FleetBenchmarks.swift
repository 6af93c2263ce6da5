import Foundation
import SecItem
import SecItemCore
import SecItemPostgreSQL
import SecItemSealedStore
#if canImport(Glibc)
import Glibc
#endif

/// A fleet on one PostgreSQL server (issue 29): 1, 2, 4 and 8 processes, each a host
/// with its own connection, doing mixed lookups and updates (90:10 by default) on one
/// shared keychain of 1,000 items for a fixed time; then writers only, to find the
/// fleet-wide write ceiling (every write holds the `state` row from its
/// `SELECT … FOR UPDATE` to its `COMMIT`, so writes of all hosts run one at a time).
///
/// Each process is this program again (`--fleet-worker`), started together behind a
/// barrier (a file); each reports its operations and its latencies' percentiles.
/// Throughput is the fleet's total; p99 is the highest of the processes' p99s.
enum FleetBenchmarks {
    static func group(_ options: Options, _ results: inout [Measurement], _ extra: inout [[String: Any]]) {
        guard options.wants("fleet/postgresql") else { return }
        let env = ProcessInfo.processInfo.environment
        guard (env["PGHOST"] ?? "").isEmpty == false || (env["SECITEM_POSTGRESQL_URL"] ?? "").isEmpty == false else {
            print("fleet/postgresql: skipped: no server named (PGHOST or SECITEM_POSTGRESQL_URL); run under scripts/with-postgresql")
            return
        }
        announce("fleet/postgresql")
        do {
            extra += try run(seconds: options.quick ? 2 : 5)
        } catch {
            fail("fleet/postgresql", error)
        }
    }

    struct Outcome {
        var reads = 0, writes = 0, failures = 0
        var readP50 = 0.0, readP99 = 0.0, writeP50 = 0.0, writeP99 = 0.0, allP99 = 0.0
    }

    static func run(seconds: Int) throws -> [[String: Any]] {
        let directory = NSTemporaryDirectory() + "secitem-fleet-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var key = try randomBytes(32)
        defer { wipeBytes(&key) }
        let keyFile = directory + "/fleet.key"
        guard FileManager.default.createFile(atPath: keyFile, contents: Data(key), attributes: [.posixPermissions: 0o600]) else {
            throw BenchmarkError("cannot write \(keyFile)")
        }
        let tag = UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(10).lowercased()
        let schema = "bench_fleet_\(tag)"
        let items = 1_000
        let configuration = PostgreSQLBackend.Configuration(keySource: .keyFile(keyFile), schema: schema)
        let backend = try PostgreSQLBackend(configuration: configuration)
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["bench"]))
        for i in 0..<items {
            try client.addItem([
                "class": "genp", "svce": Workload.service, "acct": Workload.account(i), "v_Data": Workload.data(i),
            ])
        }
        backend.close()

        var rows: [[String: Any]] = []
        print("")
        print("fleet/postgresql: \(items) items, \(seconds) s per run; reads:writes 90:10, then writers only")
        print("procs  mix      ops/s  reads/s  writes/s  read p50  read p99  write p50  write p99  p99 (all)  failed")
        for (processes, writePercent) in [(1, 10), (2, 10), (4, 10), (8, 10), (1, 100), (2, 100), (4, 100), (8, 100)] {
            let outcomes = try fleet(
                processes: processes, writePercent: writePercent, seconds: seconds, schema: schema, keyFile: keyFile,
                items: items, directory: directory)
            let reads = outcomes.map(\.reads).reduce(0, +), writes = outcomes.map(\.writes).reduce(0, +)
            let failures = outcomes.map(\.failures).reduce(0, +)
            let d = Double(seconds)
            func worst(_ value: KeyPath<Outcome, Double>) -> Double { outcomes.map { $0[keyPath: value] }.max() ?? 0 }
            func middle(_ value: KeyPath<Outcome, Double>) -> Double {
                let sorted = outcomes.map { $0[keyPath: value] }.sorted()
                return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
            }
            let mix = writePercent == 100 ? "writes" : "90:10"
            print(
                String(
                    format: "%5d  %-6@ %8.0f %8.0f %9.0f %7.2f ms %7.2f ms %8.2f ms %8.2f ms %8.2f ms  %d", processes, mix as NSString,
                    Double(reads + writes) / d, Double(reads) / d, Double(writes) / d, middle(\.readP50), worst(\.readP99),
                    middle(\.writeP50), worst(\.writeP99), worst(\.allP99), failures))
            rows.append([
                "group": "fleet/postgresql", "processes": processes, "mix": mix, "seconds": seconds,
                "ops_per_second": Double(reads + writes) / d, "reads_per_second": Double(reads) / d,
                "writes_per_second": Double(writes) / d, "read_p50_ms": middle(\.readP50), "read_p99_ms": worst(\.readP99),
                "write_p50_ms": middle(\.writeP50), "write_p99_ms": worst(\.writeP99), "p99_ms": worst(\.allP99),
                "failures": failures,
            ])
        }
        // The ceiling: one write at a time holds the state row from FOR UPDATE to COMMIT.
        if let single = rows.first(where: { $0["processes"] as? Int == 1 && $0["mix"] as? String == "writes" }),
            let median = single["write_p50_ms"] as? Double, median > 0
        {
            let best = rows.filter { $0["mix"] as? String == "writes" }.compactMap { $0["writes_per_second"] as? Double }.max() ?? 0
            print(
                String(
                    format: "write serialization: one write holds the state row at most %.2f ms (its whole call, median, one process): "
                        + "a ceiling of about %.0f writes/s for the fleet; measured best %.0f writes/s", median, 1000 / median, best))
        }
        return rows
    }

    /// Starts `processes` workers, releases them together, and collects their outcomes.
    static func fleet(
        processes: Int, writePercent: Int, seconds: Int, schema: String, keyFile: String, items: Int, directory: String
    ) throws -> [Outcome] {
        let go = directory + "/go-\(processes)-\(writePercent)"
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        var children: [(Process, Pipe)] = []
        for i in 0..<processes {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = [
                "--fleet-worker", schema, keyFile, go, "\(seconds)", "\(writePercent)", "\(items)", "\(0x5EED &+ i &* 7919)",
            ]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            children.append((process, pipe))
        }
        // Each worker opened its connection before the barrier: the open is not timed.
        usleep(UInt32(300_000 + 150_000 * processes))
        _ = FileManager.default.createFile(atPath: go, contents: nil)
        var outcomes: [Outcome] = []
        for (process, pipe) in children {
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("result ") }) else {
                throw BenchmarkError("a fleet worker failed: \(output.suffix(400))")
            }
            let f = line.split(separator: " ").dropFirst().map { Double($0) ?? 0 }
            guard f.count == 8 else { throw BenchmarkError("a fleet worker printed \(line)") }
            outcomes.append(
                Outcome(
                    reads: Int(f[0]), writes: Int(f[1]), failures: Int(f[2]), readP50: f[3], readP99: f[4], writeP50: f[5], writeP99: f[6],
                    allP99: f[7]))
        }
        return outcomes
    }

    /// One host: `--fleet-worker <schema> <key-file> <go-file> <seconds> <write-%> <items> <seed>`.
    /// Opens the keychain, waits for the go file, runs for the time given, prints
    /// `result <reads> <writes> <failures> <read p50> <read p99> <write p50> <write p99> <p99>` (ms).
    static func worker(_ arguments: [String]) -> Never {
        guard arguments.count == 7, let seconds = Int(arguments[3]), let writePercent = UInt64(arguments[4]),
            let items = UInt64(arguments[5]), var state = UInt64(arguments[6])
        else {
            FileHandle.standardError.write(Data("usage: --fleet-worker <schema> <key-file> <go-file> <seconds> <write-%> <items> <seed>\n".utf8))
            exit(64)
        }
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        do {
            let backend = try PostgreSQLBackend(configuration: .init(keySource: .keyFile(arguments[1]), schema: arguments[0]))
            let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["bench"]))
            _ = try client.copyMatchingItems(Workload.lookupQuery(Workload.account(0)))
            while !FileManager.default.fileExists(atPath: arguments[2]) { usleep(1_000) }
            var reads: [UInt64] = [], writes: [UInt64] = [], failures = 0
            let end = nowNanoseconds() + UInt64(seconds) * 1_000_000_000
            var now = nowNanoseconds()
            while now < end {
                let i = Int(next() % items)
                let write = next() % 100 < writePercent
                do {
                    if write {
                        _ = try client.updateItems(
                            ["class": "genp", "svce": Workload.service, "acct": Workload.account(i)],
                            ["v_Data": Data("fleet-\(next())".utf8)])
                    } else {
                        blackHole &+= (try client.copyMatchingItems(Workload.lookupQuery(Workload.account(i))) as? Data)?.count ?? 0
                    }
                } catch {
                    failures += 1
                }
                let done = nowNanoseconds()
                if write { writes.append(done - now) } else { reads.append(done - now) }
                now = done
            }
            func ms(_ values: [UInt64], _ p: Double) -> String { String(format: "%.3f", Double(Measurement.percentile(values, p)) / 1e6) }
            print(
                "result \(reads.count) \(writes.count) \(failures) \(ms(reads, 0.5)) \(ms(reads, 0.99)) \(ms(writes, 0.5)) "
                    + "\(ms(writes, 0.99)) \(ms(reads + writes, 0.99))")
            backend.close()
            exit(0)
        } catch {
            print("error \(error)")
            exit(1)
        }
    }
}
