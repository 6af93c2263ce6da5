import Foundation
import Glibc
import SecItem
import SecItemCore
import SecItemSealedStore
import SecItemSQLite

/// The file backend (SQLiteBackend, keychain in a temporary directory, raw key)
/// against ``RawFileKeychain``: the same SQL and crypto on sqlite3/libcrypto with
/// no SecItem layer, on its own file with the same schema, in the same run.
///
/// Both files are filled in one transaction each (the backend's
/// `inBulkTransaction`), so 100,000 items take seconds, not one fsync per item.
/// Also measured: opening with a key file and with a passphrase, lookup at the
/// largest size against 1,000 items, and the peak memory (VmHWM) of a separate
/// process holding the largest store open doing lookups.
enum FileBenchmarks {
    /// The hidden `--filter` value that turns this binary into the peak-memory child.
    static let childFilter = "file/peak-memory-child"
    static let childFileVariable = "SECITEM_BENCH_CHILD_FILE"
    static let childItemsVariable = "SECITEM_BENCH_CHILD_ITEMS"

    static func group(_ options: Options, _ results: inout [Measurement], _ extra: inout [[String: Any]]) {
        if options.filter == childFilter { runPeakMemoryChild() }
        let sizes = options.quick ? [1_000, 10_000] : [1_000, 10_000, 100_000]
        let largest = sizes.filter { options.wants("file/\($0)") }.max()
        var lookups: [Int: Measurement] = [:]
        for size in sizes where options.wants("file/\(size)") {
            announce("file/\(size)")
            do {
                let (measured, peak) = try run(
                    items: size, samples: options.quick ? 100 : 300, measurePeakMemory: size == largest)
                results += measured
                lookups[size] = measured.first { $0.op == "lookup-hit" }
                if let peak {
                    extra.append(["backend": "file", "op": "peak-memory", "items": size, "vmhwm_bytes": peak,
                                  "target_bytes": 64 << 20])
                    print(String(format: "file: peak memory (VmHWM) of a process holding %d items open, doing lookups: %.1f MiB (target < 64 MiB)",
                                 size, Double(peak) / 1_048_576))
                }
            } catch {
                fail("file/\(size)", error)
            }
        }
        if let small = lookups[1_000], let largest, largest > 1_000, let large = lookups[largest] {
            results.append(Measurement(
                backend: "file", op: "lookup-hit-scale", items: largest, samples: large.samples,
                baseline: "file lookup-hit @1000", baselineSamples: small.samples))
        }
        if options.wants("file/open") {
            announce("file/open")
            do { results += try runOpens(samples: options.quick ? 20 : 50, passphraseSamples: options.quick ? 3 : 5) } catch {
                fail("file/open", error)
            }
        }
    }

    static func run(items: Int, samples: Int, measurePeakMemory: Bool) throws -> ([Measurement], Int?) {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var key = try randomBytes(32)
        defer { wipeBytes(&key) }
        let path = dir + "/keychain.db"
        let backend = try SQLiteBackend(configuration: .init(path: path, keySource: .rawKey(Data(key))))
        defer { backend.close() }
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["bench"]))
        let workload = Workload(client: client, items: items, samples: samples, warmup: max(5, samples / 10))
        try backend.inBulkTransaction { try workload.populate() }

        let raw = try RawFileKeychain(path: dir + "/baseline.db")
        try raw.bulk {
            for i in 0..<items {
                try raw.add(account: Workload.account(i), label: Workload.label(i, items: items),
                            data: bytes(Workload.data(i)), joiningOpenTransaction: true)
            }
        }
        let minimal = try MinimalFileKeychain(path: dir + "/minimal.db")
        try minimal.bulk {
            for i in 0..<items {
                try minimal.add(account: Workload.account(i), label: Workload.label(i, items: items), data: bytes(Workload.data(i)))
            }
        }
        // Both stores hold what the workload expects.
        let last = Workload.account(items - 1)
        guard (try client.copyMatchingItems(Workload.lookupQuery(last)) as? Data) == Workload.data(items - 1),
            try raw.lookup(account: last) == 32, try raw.query(label: Workload.label(0, items: items)).count == min(100, items),
            try minimal.lookup(account: last) > 32, try minimal.lookup(account: "missing") == -1
        else { throw BenchmarkError("the populated stores do not hold the workload's items") }
        // First row of each operation: the minimal design (the physical limit); second: the same design.
        var minimalBaselines = Baselines.direct("minimal design (C level)", minimal, workload)
        minimalBaselines.query100 = nil
        let sameDesign = Baselines.direct("same design (C level)", raw, workload)
        let measured = try interleaved(
            workload, rounds: max(1, samples / 50), backend: "file", baselines: minimalBaselines, second: sameDesign)
        var peak: Int?
        if measurePeakMemory {
            peak = try peakMemoryOfChild(path: path, key: key, items: items)
        }
        return (measured, peak)
    }

    // MARK: Opening

    /// Opening with a key file (sqlite3+libcrypto doing the same as the baseline)
    /// and with a passphrase (scrypt alone as the baseline: the KDF runs once per open).
    static func runOpens(samples: Int, passphraseSamples: Int) throws -> [Measurement] {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var key = try randomBytes(32)
        let hex = key.map { String(format: "%02x", $0) }.joined()
        wipeBytes(&key)
        let keyFile = dir + "/keychain.key"
        guard FileManager.default.createFile(atPath: keyFile, contents: Data(hex.utf8), attributes: [.posixPermissions: 0o600])
        else { throw BenchmarkError("cannot write the key file") }
        let keyed = SQLiteBackend.Configuration(path: dir + "/keyed.db", keySource: .keyFile(keyFile))
        let passphrase = "correct horse battery staple \(UInt32.random(in: 0...UInt32.max))"
        let protected = SQLiteBackend.Configuration(path: dir + "/passphrase.db", keySource: .passphrase(passphrase))
        for configuration in [keyed, protected] {
            let backend = try SQLiteBackend(configuration: configuration)
            let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["bench"]))
            try client.addItem(Workload.addQuery(0, items: 1))
            backend.close()
        }
        let openKeyed = try sample(count: samples, warmup: 3) { _ in
            let backend = try SQLiteBackend(configuration: keyed)
            backend.close()
            return 1
        }
        let rawKeyed = try sample(count: samples, warmup: 3) { _ in
            try rawOpenWithKeyFile(path: keyed.path, keyFile: keyFile)
        }
        let openProtected = try sample(count: passphraseSamples, warmup: 1) { _ in
            let backend = try SQLiteBackend(configuration: protected)
            backend.close()
            return 1
        }
        let rawProtected = try sample(count: passphraseSamples, warmup: 1) { _ in try rawScrypt(passphrase: passphrase) }
        return [
            Measurement(backend: "file", op: "open-key-file", items: 1, samples: openKeyed,
                        baseline: "sqlite3+libcrypto open", baselineSamples: rawKeyed),
            Measurement(backend: "file", op: "open-passphrase", items: 1, samples: openProtected,
                        baseline: "scrypt(2^15,8,1) alone", baselineSamples: rawProtected),
        ]
    }

    // MARK: Peak memory in a separate process

    /// Spawns this binary as the child (hidden filter), hands it the key on stdin,
    /// and reads back its VmHWM.
    static func peakMemoryOfChild(path: String, key: [UInt8], items: Int) throws -> Int {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        child.arguments = ["--filter", childFilter]
        var environment = ProcessInfo.processInfo.environment
        environment[childFileVariable] = path
        environment[childItemsVariable] = String(items)
        child.environment = environment
        let input = Pipe(), output = Pipe()
        child.standardInput = input
        child.standardOutput = output
        try child.run()
        input.fileHandleForWriting.write(Data(key.map { String(format: "%02x", $0) }.joined().utf8))
        try input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        guard child.terminationStatus == 0,
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("vmhwm ") }),
            let bytes = Int(line.dropFirst(6))
        else { throw BenchmarkError("the peak-memory child failed (status \(child.terminationStatus))") }
        return bytes
    }

    /// The child: opens the store (key from stdin), does 2,000 hits, 200 misses and
    /// 20 queries of 100 attributes, prints its VmHWM and exits.
    static func runPeakMemoryChild() -> Never {
        let env = ProcessInfo.processInfo.environment
        guard let path = env[childFileVariable], let items = env[childItemsVariable].flatMap(Int.init) else {
            FileHandle.standardError.write(Data("\(childFilter): run by the file group only\n".utf8))
            exit(64)
        }
        var hex = Array(FileHandle.standardInput.readDataToEndOfFile())
        guard hex.count == 64 else { exit(65) }
        func nibble(_ c: UInt8) -> UInt8 { c <= 57 ? c - 48 : (c | 0x20) - 87 }
        var key = Data((0..<32).map { nibble(hex[2 * $0]) << 4 | nibble(hex[2 * $0 + 1]) })
        wipeBytes(&hex)
        do {
            let backend = try SQLiteBackend(configuration: .init(path: path, keySource: .rawKey(key)))
            key.resetBytes(in: 0..<key.count)
            let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["bench"]))
            var kept = 0
            for k in 0..<2_000 {
                let q = Workload.lookupQuery(Workload.account((k &* 7919) % items))
                kept &+= (try client.copyMatchingItems(q) as? Data)?.count ?? 0
            }
            for k in 0..<200 { kept &+= (try? client.copyMatchingItems(Workload.lookupQuery("missing-\(k)"))) == nil ? 1 : 0 }
            for k in 0..<20 {
                let q: [String: Any] = [
                    kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: Workload.service,
                    kSecAttrLabel as String: Workload.label(k, items: items), kSecReturnAttributes as String: true,
                    kSecMatchLimit as String: kSecMatchLimitAll,
                ]
                kept &+= (try client.copyMatchingItems(q) as? [[String: Any]])?.count ?? 0
            }
            blackHole &+= kept
            backend.close()
        } catch {
            FileHandle.standardError.write(Data("\(childFilter): \(error)\n".utf8))
            exit(1)
        }
        print("vmhwm \(peakResidentBytes() ?? -1)")
        exit(0)
    }
}

// MARK: Helpers shared by the groups

/// Runs the workload in `rounds` rounds of `samples / rounds` samples each and
/// merges them, so the subject and its baseline alternate every few hundred
/// milliseconds: on a shared disk the fsync cost drifts over seconds, and one
/// long block each would compare two different moments. Every round leaves the
/// store as it found it (what `add` adds, `delete` removes).
func interleaved(
    _ workload: Workload, rounds: Int, backend: String, baselines: Baselines, second: Baselines? = nil, third: Baselines? = nil
) throws -> [Measurement] {
    var round = workload
    round.samples = max(1, workload.samples / rounds)
    round.warmup = max(2, workload.warmup / rounds)
    var merged: [Measurement] = []
    for _ in 0..<rounds {
        let measured = try round.run(backend: backend, baselines: baselines, second: second, third: third)
        if merged.isEmpty {
            merged = measured
        } else {
            for (i, m) in measured.enumerated() {
                merged[i].samples += m.samples
                merged[i].baselineSamples += m.baselineSamples
            }
        }
    }
    return merged
}

func bytes(_ data: Data) -> [UInt8] { [UInt8](data) }

func makeTemporaryDirectory() throws -> String {
    var template = Array((NSTemporaryDirectory() + "/secitem-bench.XXXXXX").utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw BenchmarkError("cannot create a temporary directory")
    }
    return String(cString: made)
}

func announce(_ group: String) {
    FileHandle.standardError.write(Data("running \(group)…\n".utf8))
}

func fail(_ group: String, _ error: any Error) -> Never {
    FileHandle.standardError.write(Data("\(group) failed: \(error)\n".utf8))
    exit(1)
}
