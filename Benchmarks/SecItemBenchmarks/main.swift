// SecItem benchmarks: every backend against its baseline, measured in the same run.
//
//   swift run -c release SecItemBenchmarks [--quick] [--filter TEXT] [--op OPS] [--json FILE] [--secitem PATH] [--cli-floor PROGRAM]…
//
// A full run ends with the CLI table (group `cli`, CLIStartupBenchmarks.swift), which
// runs the `secitem` built beside this program (or --secitem PATH); run the whole under
// `scripts/with-secret-service scripts/with-postgresql` for every group.
//
// Ratios (subject median / baseline median) are what to read; absolute times
// depend on the machine. See Benchmarks/RESULTS.md.
import Foundation

struct Options {
    var quick = false
    var filter: String?
    var jsonPath: String?
    /// The `secitem` the `cli` group runs (default: the one beside this program).
    var secitem: String?
    /// Programs the `cli` group also times alone (`--cli-floor PROG`, repeatable: a floor such as an empty Swift program).
    var cliFloors: [String] = []

    init(_ arguments: [String]) {
        var it = arguments.makeIterator()
        while let a = it.next() {
            switch a {
            case "--quick": quick = true
            case "--filter": filter = it.next()
            case "--json": jsonPath = it.next()
            case "--op": Workload.opFilter = it.next()
            case "--secitem": secitem = it.next()
            case "--cli-floor": if let program = it.next() { cliFloors.append(program) }
            case "-h", "--help":
                print("usage: SecItemBenchmarks [--quick] [--filter GROUP] [--op OPERATION[,OPERATION…]] [--json FILE] [--secitem PATH] [--cli-floor PROGRAM]…")
                exit(0)
            default:
                FileHandle.standardError.write(Data("unknown argument \(a)\n".utf8))
                exit(64)
            }
        }
    }

    /// `--filter memory` runs every memory group; `--filter memory/1000` only that one.
    func wants(_ name: String) -> Bool {
        guard let filter else { return true }
        return name == filter || name.hasPrefix(filter + "/")
    }
}

// One host of the fleet group, started by it (FleetBenchmarks.swift).
if CommandLine.arguments.dropFirst().first == "--fleet-worker" {
    FleetBenchmarks.worker(Array(CommandLine.arguments.dropFirst(2)))
}

#if DEBUG
let banner = """
    ============================================================
    WARNING: a debug build. Numbers are meaningless; run with
        swift run -c release SecItemBenchmarks
    ============================================================
    """
print(banner)
#endif

let options = Options(Array(CommandLine.arguments.dropFirst()))
var results: [Measurement] = []
var extra: [[String: Any]] = []

@MainActor
func group(_ name: String, _ body: () throws -> [Measurement]) {
    guard options.wants(name) else { return }
    FileHandle.standardError.write(Data("running \(name)…\n".utf8))
    do {
        results += try body()
    } catch {
        FileHandle.standardError.write(Data("\(name) failed: \(error)\n".utf8))
        exit(1)
    }
}

let memorySizes = options.quick ? [1_000, 10_000] : [1_000, 10_000, 100_000]
for size in memorySizes {
    group("memory/\(size)") { try MemoryBenchmarks.run(items: size, samples: options.quick ? 2_000 : 10_000) }
}
for registered in extraGroups {
    registered(options, &results, &extra)
}

print(Report.table(results))
if let path = options.jsonPath {
    do {
        try Report.json(results, extra: extra).write(to: URL(fileURLWithPath: path))
    } catch {
        FileHandle.standardError.write(Data("cannot write \(path): \(error)\n".utf8))
        exit(1)
    }
}
