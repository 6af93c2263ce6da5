import Foundation
import Glibc
import SecItemSecretService

/// The CLI table (issue 24, item 4): whole-process start-up of `secitem
/// find-generic-password -w`, each paired with its floor, in the benchmark's own run
/// (`--filter cli`; `cli/file`, `cli/secret-service` for one pair).
///
/// Times whole processes (fork/exec to exit, as a shell script calling `secitem` sees
/// them) and reads each process's CPU time (user + system) and peak memory (ru_utime,
/// ru_stime and ru_maxrss from wait4). The fork happens in
/// `Benchmarks/CLIStartup/spawn_measure.c`, a process of about 1 MiB compiled here with
/// `cc` (or `clang`): a child forked (or vforked) from this process would have this process's peak
/// counted in its ru_maxrss. Subject and baseline alternate run by run, so drift hits
/// both. The CPU time's ratio decides a target: on a loaded machine wall time stretches
/// with the queue for a core while CPU time stays the work the program did.
///
/// - `cli/file`: `find -w` on a key-file-protected file keychain of 1,000 items against
///   `Benchmarks/CLIStartup/find_baseline.c` (the same SQLite + OpenSSL work, ≤ 1.5×).
/// - `cli/secret-service`: `find -w` on the session bus's provider against `secret-tool
///   lookup` of the very same item (≤ 1.0×) and against
///   `Benchmarks/CLIStartup/secret_service_floor.c` (GDBus, libcrypto, libgcrypt alone:
///   the floor, no target); then each program once more under `dbus-monitor`: its
///   connections, calls and round trips. Needs a reachable provider (run under
///   `scripts/with-secret-service`); without one the rows are skipped, saying so.
/// - `/bin/true`: process creation alone; `--cli-floor PROGRAM` (repeatable) times another
///   program alone the same way (a floor, e.g. an empty Swift program linked as `secitem` is).
///
/// `secitem` is the one built beside this program (`swift build -c release --product
/// secitem`) or `--secitem PATH`. Secrets are random test values and never printed.
enum CLIStartupBenchmarks {
    /// One run of a program: wall nanoseconds, peak RSS (KiB), CPU microseconds.
    struct Run {
        var wall: UInt64
        var peakKiB: Int
        var cpuMicroseconds: UInt64
    }

    /// Medians of a program's runs (and the wall time's 90th percentile), its largest peak.
    struct Summary {
        var wallMs: Double, p90Ms: Double, cpuMs: Double, peakMiB: Double

        init(_ runs: [Run]) {
            let walls = runs.map(\.wall).sorted()
            wallMs = median(walls.map { Double($0) }) / 1e6  // not map(Double.init): that is init(bitPattern:) on UInt64
            p90Ms = Double(walls.count >= 10 ? walls[Int(Double(walls.count) * 0.9) - 1] : walls.last ?? 0) / 1e6
            cpuMs = median(runs.map { Double($0.cpuMicroseconds) }) / 1e3
            peakMiB = Double(runs.map(\.peakKiB).max() ?? 0) / 1024
        }

        var json: [String: Any] { ["median_ms": wallMs, "p90_ms": p90Ms, "cpu_ms": cpuMs, "peak_rss_mib": peakMiB] }
    }

    /// A program to run: its arguments, environment and the exact output it must print.
    struct Program {
        var argv: [String]
        var environment: [String: String]
        var expected: Data?
    }

    struct Pair {
        var backend: String, baseline: String, target: Double?
        var subject: [Run], base: [Run]
        /// How many items the store holds.
        var items: Int
    }

    static func group(_ options: Options, _ results: inout [Measurement], _ extra: inout [[String: Any]]) {
        guard options.wants("cli") || options.filter?.hasPrefix("cli/") == true else { return }
        announce("cli")
        do {
            try run(options, &results, &extra)
        } catch {
            fail("cli", error)
        }
    }

    static func run(_ options: Options, _ results: inout [Measurement], _ extra: inout [[String: Any]]) throws {
        let runs = options.quick ? 5 : 15, items = 1_000
        let here = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
        let secitem = options.secitem ?? here + "/secitem"
        guard FileManager.default.isExecutableFile(atPath: secitem) else {
            throw BenchmarkError("no secitem at \(secitem): build it (swift build -c release --product secitem) or give --secitem PATH")
        }
        let sources = try sourceDirectory()
        let work = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let spawn = work + "/spawn_measure", findBaseline = work + "/find_baseline"
        try compile(sources + "/spawn_measure.c", to: spawn)
        try compile(sources + "/find_baseline.c", to: findBaseline, libraries: ["-lsqlite3", "-lcrypto"])

        var key = try randomBytes(32)
        let keyFile = work + "/key"
        guard FileManager.default.createFile(
            atPath: keyFile, contents: Data(key.map { String(format: "%02x", $0) }.joined().utf8), attributes: [.posixPermissions: 0o600])
        else { throw BenchmarkError("cannot write the key file") }
        wipeBytes(&key)
        let seed = Int.random(in: 0..<1_000_000_000)
        print("cli: \(runs) paired runs, \(items) items (the Secret Service: \(min(items, 100))), seed \(seed), secitem \(secitem)")
        var base = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SECITEM_") }
        base["SECITEM_CONFIG"] = "none"
        base["XDG_DATA_HOME"] = work
        base["XDG_CONFIG_HOME"] = work
        let measurer = Measurer(spawn: spawn, report: work + "/report")
        var pairs: [Pair] = []
        var conversations: [(String, Conversation)] = []

        if options.wants("cli/file") {
            var fileEnvironment = base
            fileEnvironment["SECITEM_BACKEND"] = "file"
            fileEnvironment["SECITEM_FILE"] = work + "/keychain.db"
            fileEnvironment["SECITEM_KEY_FILE"] = keyFile
            let export = work + "/items.json"
            try plaintextExport(count: items, service: "bulk", seed: seed).write(to: URL(fileURLWithPath: export))
            try check([secitem, "import", "--plaintext", "--input", export], fileEnvironment)
            try check([findBaseline, "create", work + "/baseline.db", keyFile, String(items)], base)
            let middle = items / 2
            let find = Program(
                argv: [secitem, "find-generic-password", "-a", "account-\(middle)", "-s", "bulk", "-w"],
                environment: fileEnvironment, expected: Data("secret-\(seed)-\(middle)\n".utf8))
            let baseline = Program(
                argv: [findBaseline, "lookup", work + "/baseline.db", keyFile, "account-\(middle)"], environment: base,
                expected: Data("secret-\(middle)\n".utf8))
            let (s, b) = try measurer.paired(find, baseline, runs: runs)
            pairs.append(Pair(backend: "file", baseline: "sqlite3+libcrypto C", target: 1.5, subject: s, base: b, items: items))
        }

        if options.wants("cli/secret-service") {
            if let reason = secretServiceUnavailable() {
                let line = "cli/secret-service: SKIPPED, NO SECRET SERVICE: \(reason); its rows (find -w against secret-tool and the C floor) are missing (run under scripts/with-secret-service)"
                print(line)
                FileHandle.standardError.write(Data((line + "\n").utf8))
                extra.append(["group": "cli", "backend": "secret-service", "op": "find -w", "skipped": reason])
            } else {
                let (measured, talks) = try secretService(
                    secitem: secitem, sources: sources, work: work, base: base, items: items, seed: seed, runs: runs, measurer: measurer)
                pairs += measured
                conversations = talks
            }
        }

        let floor = Summary(try (0..<runs).map { _ in try measurer.run(Program(argv: ["/bin/true"], environment: base, expected: nil)) })
        var load = [Double](repeating: 0, count: 3)
        _ = getloadavg(&load, 3)
        print(String(format: "\nload average %.2f %.2f %.2f; CPU = user + system time of the process, the ratio that decides; wall = fork to exit",
                     load[0], load[1], load[2]))
        print(String(format: "process floor (/bin/true): CPU %.2f ms, wall %.2f ms, peak %.1f MiB", floor.cpuMs, floor.wallMs, floor.peakMiB))
        extra.append(["group": "cli", "op": "process floor", "baseline": "/bin/true", "subject": floor.json, "runs": runs, "load_average": load])
        for program in options.cliFloors {
            let alone = Summary(try (0..<runs).map { _ in try measurer.run(Program(argv: [program], environment: base, expected: nil)) })
            print(String(format: "floor %@: CPU %.2f ms, wall %.2f ms, peak %.1f MiB", program, alone.cpuMs, alone.wallMs, alone.peakMiB))
            extra.append(["group": "cli", "op": "floor", "baseline": program, "subject": alone.json, "runs": runs])
        }
        print(table(pairs, runs: runs, results: &results, extra: &extra))
        for (name, talk) in conversations {
            print("\(name): \(talk.connections) connection(s), \(talk.calls.count) method calls (\(talk.busCalls) to the bus, "
                + "\(talk.calls.count - talk.busCalls) to the provider), \(talk.exchanges) round trips: \(talk.calls.joined(separator: " "))")
            extra.append(["group": "cli", "op": "conversation", "program": name, "connections": talk.connections,
                          "calls": talk.calls.count, "bus_calls": talk.busCalls, "provider_calls": talk.calls.count - talk.busCalls,
                          "exchanges": talk.exchanges, "sequence": talk.calls])
        }
        for pair in pairs where pair.target != nil {
            let peak = Summary(pair.subject).peakMiB
            print(String(format: "peak memory of find -w on %@: %.1f MiB (target ≤ 16 MiB)%@", pair.backend, peak, peak <= 16 ? "" : "  MISSED"))
        }
    }

    /// The printed table; a row per pair in `results` (CPU time: samples in ns, the ratio
    /// that decides) and an entry per pair in the JSON.
    static func table(_ pairs: [Pair], runs: Int, results: inout [Measurement], extra: inout [[String: Any]]) -> String {
        func pad(_ s: String, _ n: Int) -> String { s.padding(toLength: max(n, s.count), withPad: " ", startingAt: 0) }
        let header = pad("operation", 10) + " " + pad("backend", 15) + " " + "CPU".leftPad(8) + " " + "wall".leftPad(8) + " "
            + "p90".leftPad(8) + " " + "peak RSS".leftPad(9) + "   " + pad("baseline", 22) + " " + "CPU".leftPad(8) + " "
            + "wall".leftPad(8) + " " + "peak RSS".leftPad(9) + " " + "CPU ratio".leftPad(9) + " " + "wall ratio".leftPad(10) + " "
            + "target".leftPad(7)
        var lines = [header, String(repeating: "-", count: header.count)]
        for pair in pairs {
            let s = Summary(pair.subject), b = Summary(pair.base)
            let ratio = s.cpuMs / b.cpuMs, wallRatio = s.wallMs / b.wallMs
            let target = pair.target.map { "≤\($0)×" } ?? "floor"
            let missed = pair.target.map { ratio > $0 ? "  MISSED" : "" } ?? ""
            lines.append(
                pad("find -w", 10) + " " + pad(pair.backend, 15) + " "
                    + String(format: "%6.2fms %6.2fms %6.2fms %6.1fMiB   ", s.cpuMs, s.wallMs, s.p90Ms, s.peakMiB) + pad(pair.baseline, 22)
                    + String(format: " %6.2fms %6.2fms %6.1fMiB %8.2f× %9.2f× ", b.cpuMs, b.wallMs, b.peakMiB, ratio, wallRatio)
                    + target.leftPad(7) + missed)
            results.append(Measurement(
                backend: pair.backend, op: "cli find -w cpu", items: pair.items, samples: pair.subject.map { $0.cpuMicroseconds * 1_000 },
                baseline: pair.baseline, baselineSamples: pair.base.map { $0.cpuMicroseconds * 1_000 }))
            extra.append(["group": "cli", "op": "find -w", "backend": pair.backend, "baseline": pair.baseline, "subject": s.json,
                          "baseline_result": b.json, "ratio": ratio, "wall_ratio": wallRatio, "target": pair.target.map { $0 as Any } ?? NSNull(),
                          "runs": runs, "items": pair.items])
        }
        return lines.joined(separator: "\n")
    }

    // MARK: Secret Service

    /// Why no Secret Service pair can run, or nil when a provider answers.
    static func secretServiceUnavailable() -> String? {
        guard let bus = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"], !bus.isEmpty else {
            return "DBUS_SESSION_BUS_ADDRESS is not set"
        }
        let probe = SecretServiceBackend.probe(timeout: .seconds(5))
        guard probe.isUnlocked else { return "no usable Secret Service on the session bus (\(probe))" }
        return nil
    }

    static func secretService(
        secitem: String, sources: String, work: String, base: [String: String], items: Int, seed: Int, runs: Int, measurer: Measurer
    ) throws -> ([Pair], [(String, Conversation)]) {
        guard let tool = which("secret-tool") else { throw BenchmarkError("secret-tool is missing: apt-get install libsecret-tools") }
        var pairs: [Pair] = []
        let service = "bench-\(UUID().uuidString)"
        var environment = base
        environment["SECITEM_BACKEND"] = "secret-service"
        let count = min(items, 100)
        let export = work + "/items-ss.json"
        try plaintextExport(count: count, service: service, seed: seed).write(to: URL(fileURLWithPath: export))
        try check([secitem, "import", "--plaintext", "--input", export], environment)
        defer { _ = try? check([tool, "clear", "service", service], base) }
        let middle = count / 2
        let expected = Data("secret-\(seed)-\(middle)".utf8)
        let find = Program(
            argv: [secitem, "find-generic-password", "-a", "account-\(middle)", "-s", service, "-w"], environment: environment,
            expected: expected + Data("\n".utf8))
        let lookup = Program(argv: [tool, "lookup", "service", service, "account", "account-\(middle)"], environment: base, expected: expected)
        let (s, b) = try measurer.paired(find, lookup, runs: runs)
        pairs.append(Pair(backend: "secret-service", baseline: "secret-tool lookup", target: 1.0, subject: s, base: b, items: count))
        // The floor: the same lookup with nothing but GDBus and libcrypto (no target).
        let floor = work + "/secret_service_floor"
        do {
            let flags = try output(["pkg-config", "--cflags", "--libs", "gio-2.0"], base).split(separator: " ").map(String.init)
            try compile(sources + "/secret_service_floor.c", to: floor, libraries: flags + ["-lcrypto", "-lgcrypt"])
            let (s, b) = try measurer.paired(
                find, Program(argv: [floor, service, "account-\(middle)"], environment: base, expected: expected), runs: runs)
            pairs.append(Pair(backend: "secret-service", baseline: "GDBus+crypto C floor", target: nil, subject: s, base: b, items: count))
        } catch {
            let line = "cli/secret-service: the GDBus+crypto C floor row is SKIPPED: \(error) (libglib2.0-dev, libssl-dev, libgcrypt20-dev)"
            print(line)
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
        // What each says on the bus, once: connections, calls, round trips.
        var automatic = environment
        automatic["SECITEM_BACKEND"] = nil
        var talks: [(String, Conversation)] = []
        if which("dbus-monitor") == nil {
            print("cli/secret-service: no dbus-monitor (apt-get install dbus): the conversations are not recorded")
        } else {
            for (name, program) in [("secitem find -w", find), ("secret-tool lookup", lookup),
                                    ("secitem find -w (automatic choice)", Program(argv: find.argv, environment: automatic, expected: nil))] {
                talks.append((name, try Conversation.record(program, work: work)))
            }
        }
        return (pairs, talks)
    }

    // MARK: Running programs

    /// Runs programs through spawn_measure.
    struct Measurer {
        var spawn: String
        var report: String

        func run(_ program: Program) throws -> Run {
            try? FileManager.default.removeItem(atPath: report)
            let (status, out) = try launch([spawn, report] + program.argv, program.environment)
            let fields = (try? String(contentsOfFile: report, encoding: .utf8))?.split(separator: " ").compactMap {
                Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
            } ?? []
            guard status == 0, fields.count == 5 else {
                throw BenchmarkError("spawn_measure failed for \(program.argv[0]) (status \(status))")
            }
            guard fields[2] == 0, program.expected.map({ $0 == out }) ?? true else {
                throw BenchmarkError("\(program.argv[0]) failed (status \(fields[2]), or not the expected output)")
            }
            return Run(wall: UInt64(fields[0]), peakKiB: fields[1], cpuMicroseconds: UInt64(fields[3] + fields[4]))
        }

        /// Alternates subject and baseline run by run, after `warmup` runs of each.
        func paired(_ subject: Program, _ baseline: Program, runs: Int, warmup: Int = 3) throws -> ([Run], [Run]) {
            var s: [Run] = [], b: [Run] = []
            for i in 0..<(warmup + runs) {
                let one = try run(subject), other = try run(baseline)
                if i >= warmup {
                    s.append(one)
                    b.append(other)
                }
            }
            return (s, b)
        }
    }

    /// Runs `argv` (looked up on PATH when not a path), stdin and stderr on /dev/null;
    /// returns its exit status and standard output.
    static func launch(_ argv: [String], _ environment: [String: String]) throws -> (Int32, Data) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: argv[0].contains("/") ? argv[0] : "/usr/bin/env")
        process.arguments = argv[0].contains("/") ? Array(argv.dropFirst()) : argv
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, data)
    }

    static func check(_ argv: [String], _ environment: [String: String]) throws {
        let (status, _) = try launch(argv, environment)
        guard status == 0 else { throw BenchmarkError("\(argv.prefix(2).joined(separator: " ")) failed (status \(status))") }
    }

    static func output(_ argv: [String], _ environment: [String: String]) throws -> String {
        let (status, data) = try launch(argv, environment)
        guard status == 0 else { throw BenchmarkError("\(argv[0]) failed (status \(status))") }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Compiles with `cc`, or the toolchain's `clang` where no `cc` is installed.
    static func compile(_ source: String, to binary: String, libraries: [String] = []) throws {
        guard let cc = which("cc") ?? which("clang") else { throw BenchmarkError("no C compiler (cc or clang) on PATH") }
        try check([cc, "-O2", "-Wall", "-Wextra", "-o", binary, source] + libraries, ProcessInfo.processInfo.environment)
    }

    static func which(_ name: String) -> String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Benchmarks/CLIStartup: from this source file's path when it is still there (the
    /// checkout that built the program), else from the working directory.
    static func sourceDirectory() throws -> String {
        let fromSource = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().path + "/CLIStartup"
        for dir in [fromSource, FileManager.default.currentDirectoryPath + "/Benchmarks/CLIStartup"]
        where FileManager.default.fileExists(atPath: dir + "/spawn_measure.c") {
            return dir
        }
        throw BenchmarkError("cannot find Benchmarks/CLIStartup (its C programs): run from the checkout")
    }

    /// A `secitem import --plaintext` file of `count` generic passwords of `service`,
    /// accounts `account-<i>`, secrets `secret-<seed>-<i>`.
    static func plaintextExport(count: Int, service: String, seed: Int) throws -> Data {
        let items: [[String: Any]] = (0..<count).map { i in
            [
                "class": "genp", "id": UUID().uuidString, "data": Data("secret-\(seed)-\(i)".utf8).base64EncodedString(),
                "attributes": [
                    "acct": ["string": "account-\(i)"], "svce": ["string": service], "agrp": ["string": "default"],
                    "sync": ["number": 0], "pdmn": ["string": "ak"], "cdat": ["date": 0], "mdat": ["date": 0],
                ] as [String: Any],
            ]
        }
        let manifest: [String: Any] = [
            "format": "secitem-export", "version": 1, "count": count, "accessGroups": ["default"], "created": 0,
        ]
        return try JSONSerialization.data(withJSONObject: ["manifest": manifest, "items": items])
    }
}

/// What a program says on the session bus, recorded once with `dbus-monitor`: its
/// connections, its method calls (to the bus daemon, to the provider) and its round trips
/// (calls sent while none of its earlier calls, bar AddMatch/RemoveMatch, which GDBus does
/// not wait for, awaited a reply: each is one round trip the program waited for).
struct Conversation {
    var connections = 0
    var calls: [String] = []
    var busCalls = 0
    var exchanges = 0

    struct Message {
        var kind: String
        var fields: [String: String] = [:]
        var args: [String] = []
        subscript(_ key: String) -> String? { fields[key] }
    }

    /// dbus-monitor's text output as messages (kind, sender, destination, serial,
    /// reply_serial, member, string arguments).
    static func parse(_ text: String) -> [Message] {
        var messages: [Message] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.first == " " || line.first == "\t" {
                let trimmed = line.drop { $0 == " " || $0 == "\t" }
                if trimmed.hasPrefix("string \""), trimmed.hasSuffix("\""), trimmed.count >= 9, !messages.isEmpty {
                    messages[messages.count - 1].args.append(String(trimmed.dropFirst(8).dropLast()))
                }
                continue
            }
            guard let kind = ["method call", "method return", "error", "signal"].first(where: { line.hasPrefix($0 + " ") }) else { continue }
            var message = Message(kind: kind)
            for word in line.split(whereSeparator: { $0 == " " || $0 == ";" }) {
                guard let eq = word.firstIndex(of: "=") else { continue }
                let key = String(word[..<eq])
                if ["time", "sender", "destination", "serial", "reply_serial", "member"].contains(key) {
                    message.fields[key] = String(word[word.index(after: eq)...])
                }
            }
            messages.append(message)
        }
        return messages
    }

    static func record(_ program: CLIStartupBenchmarks.Program, work: String, timeout: Double = 20) throws -> Conversation {
        let log = work + "/conversation.log"
        guard FileManager.default.createFile(atPath: log, contents: nil) else { throw BenchmarkError("cannot create \(log)") }
        let monitor = Process()
        monitor.executableURL = URL(fileURLWithPath: CLIStartupBenchmarks.which("dbus-monitor") ?? "/usr/bin/dbus-monitor")
        monitor.arguments = ["--session"]
        monitor.environment = program.environment
        monitor.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        monitor.standardError = FileHandle.nullDevice
        try monitor.run()
        defer {
            monitor.terminate()
            monitor.waitUntilExit()
            try? FileManager.default.removeItem(atPath: log)
        }
        func read() -> [Message] { parse((try? String(contentsOfFile: log, encoding: .utf8)) ?? "") }
        let deadline = Date().addingTimeInterval(timeout)
        while !read().contains(where: { $0["member"] == "NameLost" }) {
            guard Date() < deadline, monitor.isRunning else { throw BenchmarkError("dbus-monitor did not start") }
            usleep(10_000)
        }
        try CLIStartupBenchmarks.check(program.argv, program.environment)
        var messages: [Message] = []
        var opened = Set<String>()
        while true {
            messages = read()
            opened = Set(messages.filter { $0.kind == "method call" && $0["member"] == "Hello" }.compactMap { $0["sender"] })
            let closed = Set(messages.filter { $0["member"] == "NameOwnerChanged" && $0.args.count == 3 && $0.args[2].isEmpty }.map { $0.args[0] })
            if !opened.isEmpty && opened.isSubset(of: closed) { break }
            guard Date() < deadline else { throw BenchmarkError("the program's connections did not close") }
            usleep(10_000)
        }
        var talk = Conversation(connections: opened.count)
        var pending: [String: String] = [:]  // "sender serial" → member
        let unawaited: Set<String> = ["AddMatch", "RemoveMatch"]  // GDBus does not wait for these
        for m in messages {
            if m.kind == "method call", let sender = m["sender"], opened.contains(sender) {
                let member = m["member"] ?? ""
                talk.calls.append(member)
                if m["destination"] == "org.freedesktop.DBus" { talk.busCalls += 1 }
                if !unawaited.contains(member) && !pending.values.contains(where: { !unawaited.contains($0) }) {
                    talk.exchanges += 1
                }
                pending["\(sender) \(m["serial"] ?? "")"] = member
            } else if m.kind == "method return" || m.kind == "error", let destination = m["destination"], opened.contains(destination) {
                pending["\(destination) \(m["reply_serial"] ?? "")"] = nil
            }
        }
        return talk
    }
}

private func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    let mid = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}
