import Foundation
import SecItem
import SecItemConformance
import SecItemCore
import SecItemSQLite
import SecItemTestSupport
import Testing

@Suite("File backend: crashes and many processes", .serialized)
struct ProcessTests {
    @Test("SIGKILL at 30+ random moments: the file opens, integrity ok, every acknowledged add present")
    func crashes() throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = dir.file("k.db")
        let backend = try openBackend(db, .keyFile(key))
        let client = SecItemClient(backend: backend, accessGroups: groups)
        var acknowledged: [String] = []
        // The kill instants are seeded (the child's own timing is not, so a replay
        // reproduces the schedule, not every interleaving).
        var random = SeededRandom()
        let replay = random.replayHint
        for run in 0..<32 {
            let child = try Child(["writer", db, "r\(run)"], keyFile: key)
            // Kill at a random moment: odd runs from the start (during start-up and
            // open, or mid-stream), even runs once writes flow (so acknowledged adds
            // are tested however slow the machine is).
            if run % 2 == 0 {
                try Wait.until("the writer's first acknowledgement", interval: .milliseconds(1)) { !child.lines.isEmpty }
                usleep(UInt32.random(in: 0...60_000, using: &random))
            } else {
                usleep(UInt32.random(in: 5_000...120_000, using: &random))
            }
            child.kill()
            let lines = try child.finish()
            #expect(child.process.terminationReason == .uncaughtSignal, "run \(run) exited on its own: \(lines.suffix(2)); \(replay)")
            acknowledged += lines.map { "r\(run)-\($0)" }
        }
        #expect(acknowledged.count >= 16, "\(replay)")
        // This connection stayed open through every crash; a new one must agree.
        let fresh = SecItemClient(backend: try openBackend(db, .keyFile(key)), accessGroups: groups)
        for account in acknowledged {
            let prefix = account.split(separator: "-")[0]
            let i = account.split(separator: "-")[1]
            #expect(try readData(client, account, service: "crash") == "value-\(prefix)-\(i)", "\(account); \(replay)")
            #expect(try readData(fresh, account, service: "crash") == "value-\(prefix)-\(i)", "\(account); \(replay)")
        }
        #expect(try backend.verify().isIntact, "\(replay)")
        #expect(RawDB(db).strings("PRAGMA integrity_check") == ["ok"], "\(replay)")
        // Nothing half-written: every stored item is whole (verify above), and at most
        // one unacknowledged add per run (the one in flight when the child died).
        let stored = try backend.fetch(
            matching: ItemQuery(itemClass: .genericPassword, attributes: ["svce": .string("crash")], accessGroups: ["test"]),
            limit: nil)
        #expect(stored.count >= acknowledged.count, "\(replay)")
        #expect(stored.count <= acknowledged.count + 32, "\(replay)")
    }

    @Test("SIGKILL at random moments of a legacy-file migration: each run left all of its secrets or none, and the file unless all arrived")
    func legacyMigrationCrashes() throws {
        var random = SeededRandom()
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = dir.file("k.db")
        let backend = try openBackend(db, .keyFile(key))
        let services = 4, accounts = 100
        // One legacy JSON file per run, its services named after the run.
        func legacy(_ run: Int) throws -> String {
            var object: [String: [String: String]] = [:]
            for s in 0..<services {
                object["run\(run)-s\(s)"] = Dictionary(uniqueKeysWithValues: (0..<accounts).map { ("a\($0)", "secret-\(run)-\(s)-\($0)") })
            }
            let path = dir.file("legacy-\(run).json")
            try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
            return path
        }
        func stored(_ run: Int) throws -> Int {
            try (0..<services).map { s in
                try backend.fetch(
                    matching: ItemQuery(
                        itemClass: .genericPassword, attributes: [SecConstant.kSecAttrService: .string("run\(run)-s\(s)")],
                        accessGroups: ["test"]),
                    limit: nil
                ).count
            }.reduce(0, +)
        }
        let total = services * accounts
        // One run uninterrupted: how long a whole migration takes here.
        let started = Date()
        let whole = try runHelper(["migrate-legacy", db, try legacy(0)], keyFile: key)
        let duration = Date().timeIntervalSince(started)
        #expect(whole.status == 0 && whole.lines.last == "migrated \(total)", "\(whole.lines)")
        #expect(try stored(0) == total)
        var outcomes: [String] = []
        for run in 1...16 {
            let file = try legacy(run)
            let child = try Child(["migrate-legacy", db, file], keyFile: key)
            try Wait.until("the migration's first line", interval: .milliseconds(1)) { !child.lines.isEmpty }
            usleep(UInt32.random(in: 0...UInt32(max(duration, 0.05) * 1_000_000), using: &random))
            child.kill()
            let lines = try child.finish()
            let count = try stored(run)
            outcomes.append("\(count)")
            #expect(count == 0 || count == total, "run \(run): \(count) of \(total) secrets stored; \(random.replayHint)")
            if count < total {
                #expect(FileManager.default.fileExists(atPath: file), "run \(run): the file is kept when secrets are missing")
                let retry = try runHelper(["migrate-legacy", db, file], keyFile: key)
                #expect(retry.lines.last == "migrated \(total)", "run \(run): a retry moves everything: \(retry.lines)")
                #expect(try stored(run) == total)
            }
            if lines.last?.hasPrefix("migrated") == true {
                #expect(!FileManager.default.fileExists(atPath: file), "run \(run) finished: the file is gone")
            }
        }
        print("legacy migration crash runs (secrets stored when killed): \(outcomes); \(random.replayHint)")
        #expect(try backend.verify().isIntact)
    }

    @Test("4 processes × 500 mixed operations on overlapping keys: no unexpected status, no lost write")
    func manyProcesses() throws {
        let dir = TempDir()
        let key = try makeKeyFile(dir.file("key"))
        let db = dir.file("k.db")
        let backend = try openBackend(db, .keyFile(key))
        // Each child's operations come from a seed derived from one (SECITEM_TEST_SEED replays them).
        let random = SeededRandom()
        let children = try (0..<4).map { p in
            try Child(["mixed", db, "\(p)", "500", "\(random.derived(p).seed)"], keyFile: key)
        }
        let outputs = try children.map { try $0.finish() }
        for (p, (child, lines)) in zip(children, outputs).enumerated() {
            #expect(child.process.terminationStatus == 0, "process \(p); \(random.replayHint)")
            #expect(lines.last == "done", "process \(p) did not finish; \(random.replayHint)")
            #expect(lines.filter { $0.hasPrefix("unexpected") || $0.hasPrefix("inconsistent") }.isEmpty,
                    "process \(p): \(lines.filter { $0.hasPrefix("unexpected") || $0.hasPrefix("inconsistent") }); \(random.replayHint)")
        }
        let client = SecItemClient(backend: backend, accessGroups: groups)
        let everything = try backend.fetch(
            matching: ItemQuery(itemClass: .genericPassword, attributes: ["svce": .string("mp")], accessGroups: ["test"]),
            limit: nil)
        var stored: [String: String] = [:]
        for item in everything {
            let account = try #require(item.attributes["acct"]?.stringValue)
            #expect(stored[account] == nil, "two items for \(account)")
            stored[account] = item.data.flatMap { String(bytes: $0, encoding: .utf8) }
        }
        // Own keys: exactly what each process's acknowledged history says.
        var written: [String: Set<String>] = [:]
        for (p, lines) in outputs.enumerated() {
            var expectedOwn: [String: String] = [:]
            for line in lines {
                let parts = line.split(separator: " ").map(String.init)
                if parts[0] == "final" { expectedOwn[parts[1]] = parts[2] }
                if parts[0] == "ack", parts[1] != "del" { written[parts[2], default: []].insert(parts[3]) }
            }
            let actualOwn = stored.filter { $0.key.hasPrefix("p\(p)-") }
            #expect(actualOwn == expectedOwn, "process \(p)'s own keys")
        }
        // Shared keys: whatever is stored was acknowledged to some process; every read saw such a value.
        for (account, value) in stored where account.hasPrefix("shared-") {
            #expect(written[account]?.contains(value) == true, "\(account) = \(value) was never acknowledged")
        }
        for line in outputs.joined() where line.hasPrefix("read shared-") {
            let parts = line.split(separator: " ").map(String.init)
            #expect(written[parts[1]]?.contains(parts[2]) == true, "read \(parts[1]) saw \(parts[2])")
        }
        #expect(try backend.verify().isIntact)
        #expect(RawDB(db).strings("PRAGMA integrity_check") == ["ok"])
        _ = client
    }
}
