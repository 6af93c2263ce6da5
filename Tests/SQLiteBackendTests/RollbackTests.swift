import CSecItemSQLite3
import Foundation
import SecItemConformance
import SecItemCore
import SecItemSQLite
import SecItemSealedStore
import SecItemTestSupport
import Synchronization
import Testing

/// Rollback evidence (docs/file-format.md, "Rollback evidence"): an older copy of the
/// whole file put back is consistent in itself; only a high-water mark kept outside it,
/// by a host that saw a newer state, reveals it.
@Suite("Rollback evidence: file")
struct RollbackTests {
    /// A keychain whose marks are kept in the directory's `state` (a "host" of its own).
    struct Host {
        let dir: TempDir
        let key: String
        let db: String
        var stateHome: String { dir.file("state") }
        var witness: StateDirectoryWitness { StateDirectoryWitness(directory: stateHome + "/secitem/high-water") }

        init() throws {
            dir = TempDir()
            key = try makeKeyFile(dir.file("key"))
            db = dir.file("k.db")
        }

        func open(_ mode: RollbackCheckMode = .enforce) throws -> SQLiteBackend {
            try SQLiteBackend(
                configuration: .init(path: db, keySource: .keyFile(key), rollbackCheck: mode, rollbackWitness: witness))
        }

        /// The mark file's generation, or nil.
        func markGeneration() throws -> Int64? {
            let store = WitnessedStore(identity: "file " + (try realpathOf(db)), location: db)
            return try witness.mark(for: store)?.generation
        }
    }

    static func realpathOfImpl(_ path: String) throws -> String {
        guard let p = realpath(path, nil) else { throw TestSetupError("realpath \(path)") }
        defer { free(p) }
        return String(cString: p)
    }

    /// A consistent copy of a live keychain (`VACUUM INTO`), as a backup tool makes it.
    static func snapshot(_ db: String, to copy: String) {
        let raw = RawDB(db)
        raw.exec("VACUUM INTO '\(copy)'")
    }

    /// Puts `copy` back into `db` through SQLite's backup API (what `sqlite3 db ".restore copy"`
    /// does): under SQLite's locks, so a program with the file open sees it on its next call.
    static func restore(_ copy: String, into db: String) throws {
        let target = RawDB(db)
        let source = RawDB(copy)
        guard let backup = sqlite3_backup_init(target.db, "main", source.db, "main") else {
            throw TestSetupError("sqlite3_backup_init: \(String(cString: sqlite3_errmsg(target.db)))")
        }
        let step = sqlite3_backup_step(backup, -1)
        sqlite3_backup_finish(backup)
        guard step == SQLITE_DONE else { throw TestSetupError("sqlite3_backup_step: \(step)") }
    }

    @Test("an older copy put back under a running program: that program, a new process and verify all refuse it, nothing is rewritten; accept-restore clears it")
    func restoredUnderRunningProgram() throws {
        let host = try Host()
        let running = try host.open()
        let client = SecItemClient(backend: running, accessGroups: groups)
        try client.addItem(genp("alice", data: "v1"))
        let old = host.dir.file("old.db")
        Self.snapshot(host.db, to: old)
        try client.updateItems(genp("alice"), [kSecValueData as String: Data("v2".utf8)])
        try client.addItem(genp("bob", data: "bob"))
        #expect(try readData(client, "alice") == "v2")
        let newer = try running.verify().commitment

        try Self.restore(old, into: host.db)
        let before = try #require(fileBytes(host.db))
        // The running program: reads, writes and deletes all refused, naming both states.
        let read = thrownSecItemError { _ = try readData(client, "alice") }
        #expect(read?.status == errSecDecode, "\(String(describing: read))")
        #expect(read?.detail?.contains("rolled back") == true, "\(String(describing: read?.detail))")
        #expect(read?.detail?.contains(newer) == true, "the message names the state seen: \(String(describing: read?.detail))")
        #expect(status { try client.addItem(genp("carol", data: "c")) } == errSecDecode)
        #expect(status { try client.deleteItems(genp("alice")) } == errSecDecode)
        #expect(fileBytes(host.db) == before, "a refused call changed the file")

        // A new process with the same state directory (the same host).
        let child = try runHelper(["get", host.db, "alice"], keyFile: host.key, environment: ["XDG_STATE_HOME": host.stateHome])
        #expect(child.status != 0)
        // A new backend in this process, and verify (which reports instead of refusing).
        #expect(status { _ = try host.open() } == errSecDecode)
        let report = try host.open(.report).verify()
        #expect(!report.isIntact)
        #expect(report.rollback?.contains(newer) == true, "\(report.problems)")

        // The operator accepts it: the running program, new backends and verify go on.
        let accepting = try host.open(.report)
        let accepted = try accepting.acceptRestore(note: "restored on purpose (test)")
        #expect(accepted.before == newer)
        #expect(accepted.now != newer)
        accepting.close()
        #expect(try readData(client, "alice") == "v1")
        #expect(try host.open().verify().isIntact)
        let log = try String(contentsOfFile: host.witness.logPath, encoding: .utf8)
        #expect(log.contains("restored on purpose (test)") && log.contains(newer), "\(log)")
        try client.addItem(genp("carol", data: "c"))
        #expect(try readData(client, "carol") == "c")
    }

    @Test("the file copied back while no program runs: the next process of the host refuses it; another host's state directory does not (it never saw the newer state)")
    func copiedBackBetweenRuns() throws {
        let host = try Host()
        do {
            let backend = try host.open()
            try SecItemClient(backend: backend, accessGroups: groups).addItem(genp("alice", data: "v1"))
            backend.close()
        }
        let old = host.dir.file("old.db")
        try FileManager.default.copyItem(atPath: host.db, toPath: old)
        do {
            let backend = try host.open()
            try SecItemClient(backend: backend, accessGroups: groups).addItem(genp("bob", data: "bob"))
            backend.close()
        }
        try FileManager.default.removeItem(atPath: host.db)
        try FileManager.default.copyItem(atPath: old, toPath: host.db)
        let child = try runHelper(["get", host.db, "alice"], keyFile: host.key, environment: ["XDG_STATE_HOME": host.stateHome])
        #expect(child.status != 0, "\(child.lines)")
        let error = thrownSecItemError { _ = try host.open() }
        #expect(error?.status == errSecDecode)
        #expect(error?.detail?.contains("an older generation") == true, "\(String(describing: error?.detail))")
        // A host that never saw the newer state has nothing to compare with: the documented limit.
        let stranger = try runHelper(
            ["get", host.db, "alice"], keyFile: host.key, environment: ["XDG_STATE_HOME": host.dir.file("other-host")])
        #expect(stranger.status == 0 && stranger.lines == ["not-found"], "\(stranger.lines)")
    }

    @Test("a diverging copy at the same generation, and another keychain at the same path, are refused too")
    func divergingAndReplaced() throws {
        let host = try Host()
        let backend = try host.open()
        let client = SecItemClient(backend: backend, accessGroups: groups)
        try client.addItem(genp("alice", data: "v1"))
        let base = host.dir.file("base.db")
        Self.snapshot(host.db, to: base)
        try client.addItem(genp("bob", data: "bob"))
        // Someone else's history from the same base: one write, the same generation, other rows.
        let fork = host.dir.file("fork.db")
        try FileManager.default.copyItem(atPath: base, toPath: fork)
        do {
            let other = try SQLiteBackend(configuration: .init(path: fork, keySource: .keyFile(host.key), rollbackCheck: .off))
            try SecItemClient(backend: other, accessGroups: groups).addItem(genp("mallory", data: "m"))
            other.close()
        }
        try Self.restore(fork, into: host.db)
        let diverged = thrownSecItemError { _ = try readData(client, "alice") }
        #expect(diverged?.status == errSecDecode)
        #expect(diverged?.detail?.contains("same generation") == true, "\(String(describing: diverged?.detail))")
        backend.close()
        // A different keychain (its own store id) put at the path.
        let stranger = host.dir.file("stranger.db")
        do {
            let other = try SQLiteBackend(configuration: .init(path: stranger, keySource: .keyFile(host.key), rollbackCheck: .off))
            let c = SecItemClient(backend: other, accessGroups: groups)
            for i in 0..<5 { try c.addItem(genp("x\(i)", data: "x")) }
            other.close()
        }
        try FileManager.default.removeItem(atPath: host.db)
        try FileManager.default.copyItem(atPath: stranger, toPath: host.db)
        let replaced = thrownSecItemError { _ = try host.open() }
        #expect(replaced?.status == errSecDecode)
        #expect(replaced?.detail?.contains("another keychain") == true, "\(String(describing: replaced?.detail))")
    }

    @Test("a crash between the store's commit and the mark's update: no false alarm; the mark is never ahead of the store")
    func crashBetweenCommitAndMark() throws {
        for recordFirst in [false, true] {
            let host = try Host()
            do {
                let backend = try host.open()
                try SecItemClient(backend: backend, accessGroups: groups).addItem(genp("alice", data: "v1"))
                backend.close()
            }
            let start = try #require(try host.markGeneration())
            let child = try runHelper(
                ["die-at-mark", host.db, "bob", host.witness.directory, recordFirst ? "after" : "before"], keyFile: host.key)
            #expect(child.lines.last?.hasPrefix("dying") == true, "\(child.lines)")
            #expect(child.status != 0)
            // The add committed before the mark was touched: the mark lags (or just caught up).
            let mark = try #require(try host.markGeneration())
            #expect(mark == (recordFirst ? start + 1 : start), "mark \(mark), start \(start)")
            let backend = try host.open()
            let committed = try #require(Int64(try backend.verify().commitment.split(separator: ":")[0]))
            #expect(committed == start + 1)
            #expect(mark <= committed, "the mark is ahead of the store")
            let client = SecItemClient(backend: backend, accessGroups: groups)
            var q = Query.genericPassword("reopen", "bob")
            q["r_Data"] = true
            #expect((try client.copyMatchingItems(q) as? Data) == Data("value-bob".utf8))
            #expect(try host.markGeneration() == committed, "opening brings the lagging mark up to date")
        }
    }

    @Test("4 processes writing and this one reading, seeded: no false alarm, and the mark ends at the store's generation")
    func concurrentWritersNoFalseAlarm() throws {
        let host = try Host()
        let backend = try host.open()
        let client = SecItemClient(backend: backend, accessGroups: groups)
        try client.addItem(genp("seed", data: "s"))
        let random = SeededRandom()
        print("RollbackTests.concurrentWritersNoFalseAlarm: \(random.replayHint)")
        let children = try (0..<4).map { p in
            try Child(
                ["mixed", host.db, "\(p)", "150", "\(random.derived(p).seed)"], keyFile: host.key,
                environment: ["XDG_STATE_HOME": host.stateHome])
        }
        var readerFailures: [String] = []
        var reads = 0
        while children.contains(where: { $0.process.isRunning }) {
            do {
                _ = try readData(client, "seed")
                _ = try backend.fetch(
                    matching: ItemQuery(itemClass: .genericPassword, attributes: ["svce": .string("mp")], accessGroups: ["test"]),
                    limit: nil)
                reads += 1
            } catch {
                readerFailures.append("\(error)")
            }
        }
        let outputs = try children.map { try $0.finish() }
        for (p, (child, lines)) in zip(children, outputs).enumerated() {
            #expect(child.process.terminationStatus == 0, "process \(p); \(random.replayHint)")
            #expect(lines.last == "done", "process \(p) did not finish; \(random.replayHint)")
            let bad = lines.filter { $0.hasPrefix("unexpected") || $0.hasPrefix("inconsistent") }
            #expect(bad.isEmpty, "process \(p): \(bad); \(random.replayHint)")
        }
        #expect(readerFailures.isEmpty, "\(readerFailures.prefix(3)); \(random.replayHint)")
        #expect(reads > 0)
        let generation = try #require(Int64(try backend.verify().commitment.split(separator: ":")[0]))
        #expect(try host.markGeneration() == generation)
    }

    @Test("the state directory: 0700, marks 0600; concurrent advances from many threads keep the maximum, seeded")
    func witnessKeepsTheMaximum() throws {
        let dir = TempDir()
        let witness = StateDirectoryWitness(directory: dir.file("state/secitem/high-water"))
        let store = WitnessedStore(identity: "test store", location: "test store")
        let random = SeededRandom()
        print("RollbackTests.witnessKeepsTheMaximum: \(random.replayHint)")
        let plans = (0..<8).map { t in
            var r = random.derived(t)
            return (0..<40).map { _ in Int64(r.next() % 10_000) }
        }
        let lowered = Atomic<Bool>(false)
        DispatchQueue.concurrentPerform(iterations: plans.count) { t in
            let mine = StateDirectoryWitness(directory: witness.directory)
            var highest: Int64 = -1
            for g in plans[t] {
                guard let after = try? mine.advance(store, to: HighWaterMark(generation: g, digest: [UInt8](repeating: 1, count: 16)))
                else { lowered.store(true, ordering: .relaxed); continue }
                // What this thread recorded or saw can only be overtaken, never lost.
                if after.generation < max(g, highest) { lowered.store(true, ordering: .relaxed) }
                highest = max(highest, after.generation)
            }
        }
        let wasLowered = lowered.load(ordering: .relaxed)
        #expect(!wasLowered, "\(random.replayHint)")
        #expect(try witness.mark(for: store)?.generation == plans.flatMap { $0 }.max(), "\(random.replayHint)")
        var st = stat()
        #expect(stat(witness.directory, &st) == 0 && st.st_mode & 0o777 == 0o700)
        #expect(stat(witness.markPath(for: store), &st) == 0 && st.st_mode & 0o777 == 0o600)
        // Down only through reset, which logs.
        try witness.reset(store, to: HighWaterMark(generation: 3, digest: [UInt8](repeating: 2, count: 16)), note: "why")
        #expect(try witness.mark(for: store)?.generation == 3)
        #expect(try String(contentsOfFile: witness.logPath, encoding: .utf8).contains("why"))
        #expect(stat(witness.logPath, &st) == 0 && st.st_mode & 0o777 == 0o600)
    }
}

func realpathOf(_ path: String) throws -> String { try RollbackTests.realpathOfImpl(path) }

