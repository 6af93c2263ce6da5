import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Monotonic nanoseconds.
@inline(__always)
func nowNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Keeps results alive so the optimiser cannot drop the work that produced them.
nonisolated(unsafe) var blackHole = 0

/// One measured operation: per-operation samples of the subject and of its baseline.
struct Measurement {
    var backend: String
    var op: String
    var items: Int
    var samples: [UInt64]
    var baseline: String?
    var baselineSamples: [UInt64]

    static func percentile(_ values: [UInt64], _ p: Double) -> UInt64 {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))
        return sorted[index]
    }

    var median: UInt64 { Self.percentile(samples, 0.5) }
    var p99: UInt64 { Self.percentile(samples, 0.99) }
    var baselineMedian: UInt64? { baselineSamples.isEmpty ? nil : Self.percentile(baselineSamples, 0.5) }
    var ratio: Double? {
        guard let b = baselineMedian, b > 0 else { return nil }
        return Double(median) / Double(b)
    }
}

/// Runs `body` `warmup` times untimed, then `count` times timed one by one.
/// `body` gets the iteration index and returns a value that is kept.
func sample(count: Int, warmup: Int, _ body: (Int) throws -> Int) rethrows -> [UInt64] {
    for i in 0..<warmup { blackHole &+= try body(i) }
    var out = [UInt64]()
    out.reserveCapacity(count)
    for i in 0..<count {
        let start = nowNanoseconds()
        let r = try body(warmup + i)
        let end = nowNanoseconds()
        blackHole &+= r
        out.append(end - start)
    }
    return out
}

/// ``sample(count:warmup:_:)`` of several bodies at once, alternating call by call
/// (the subject and its baselines): each gets `warmup` untimed calls, then the `count`
/// timed calls go round the bodies, starting each round with the next body. So all of
/// them meet the machine in the same state: one block each after a phase of writes
/// timed the first block on a CPU just woken from the writes' fsyncs (caches cold,
/// clocks low) and the last on a warm one, which made a subject measured first look
/// 1.5–2× slower than it was against its baseline (issue 24 item 3).
/// - Returns: The samples of each body, in the order of `bodies`.
func sampleAlternating(count: Int, warmup: Int, _ bodies: [(Int) throws -> Int]) throws -> [[UInt64]] {
    for body in bodies {
        for i in 0..<warmup { blackHole &+= try body(i) }
    }
    var out = [[UInt64]](repeating: [], count: bodies.count)
    for j in out.indices { out[j].reserveCapacity(count) }
    for i in 0..<count {
        for turn in 0..<bodies.count {
            let j = (i + turn) % bodies.count
            let start = nowNanoseconds()
            let r = try bodies[j](warmup + i)
            let end = nowNanoseconds()
            blackHole &+= r
            out[j].append(end - start)
        }
    }
    return out
}

func formatNanoseconds(_ ns: UInt64) -> String {
    if ns >= 10_000_000 { return String(format: "%.1f ms", Double(ns) / 1e6) }
    if ns >= 10_000 { return String(format: "%.1f µs", Double(ns) / 1e3) }
    return "\(ns) ns"
}

/// The printed table and the JSON file.
enum Report {
    static func table(_ results: [Measurement]) -> String {
        var lines = [
            "operation        backend          items   median      p99         ops/s      baseline                 base median  ratio",
            String(repeating: "-", count: 126),
        ]
        for r in results {
            let ops = r.median > 0 ? String(format: "%.0f", 1e9 / Double(r.median)) : "-"
            let ratio = r.ratio.map { String(format: "%.2f×", $0) } ?? "-"
            lines.append(
                [
                    r.op.padding(toLength: 16, withPad: " ", startingAt: 0),
                    r.backend.padding(toLength: 16, withPad: " ", startingAt: 0),
                    String(r.items).leftPad(6),
                    formatNanoseconds(r.median).leftPad(10),
                    formatNanoseconds(r.p99).leftPad(10),
                    ops.leftPad(10),
                    "  " + (r.baseline ?? "-").padding(toLength: 24, withPad: " ", startingAt: 0),
                    (r.baselineMedian.map(formatNanoseconds) ?? "-").leftPad(11),
                    ratio.leftPad(7),
                ].joined(separator: " "))
        }
        return lines.joined(separator: "\n")
    }

    static func json(_ results: [Measurement], extra: [[String: Any]]) throws -> Data {
        var uts = utsname()
        uname(&uts)
        let machine = withUnsafeBytes(of: &uts.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let object: [String: Any] = [
            "machine": [
                "arch": machine, "cores": ProcessInfo.processInfo.activeProcessorCount,
                "memory_bytes": ProcessInfo.processInfo.physicalMemory,
                "os": ProcessInfo.processInfo.operatingSystemVersionString,
            ],
            "date": ISO8601DateFormatter().string(from: Date()),
            "results": results.map { r -> [String: Any] in
                var d: [String: Any] = [
                    "backend": r.backend, "op": r.op, "items": r.items, "median_ns": r.median, "p99_ns": r.p99,
                ]
                d["baseline"] = r.baseline ?? NSNull()
                d["baseline_median_ns"] = r.baselineMedian.map { $0 as Any } ?? NSNull()
                d["ratio"] = r.ratio.map { $0 as Any } ?? NSNull()
                return d
            } + extra,
        ]
        return try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
    }
}

extension String {
    func leftPad(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}

/// Peak resident set size of this process, in bytes (VmHWM).
func peakResidentBytes() -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        let kb = line.split(separator: " ").compactMap { Int($0) }.first
        return kb.map { $0 * 1024 }
    }
    return nil
}
