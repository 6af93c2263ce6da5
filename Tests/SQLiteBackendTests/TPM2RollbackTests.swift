import Foundation
import SecItemCore
import SecItemSQLite
import SecItemSealedStore
import SecItemTestSupport
import Testing

/// Rollback evidence of a TPM-keyed file store (docs/file-format.md, "Rollback evidence";
/// docs/key-sources.md, tpm2): the generation is also kept in a TPM NV counter (swtpm),
/// so deleting the state directory does not lose it.
@Suite("Rollback evidence: TPM counter", .requires(.softwareTPM), .serialized)
struct TPM2RollbackTests {
    /// A TPM-keyed keychain whose state directory is the host's own; the witness is the
    /// one the key source chooses (no witness in the configuration).
    struct Host {
        let dir = TempDir()
        let tpm: SoftwareTPM
        var db: String { dir.file("k.db") }
        var stateHome: String { dir.file("state") }
        var stateDirectory: String { stateHome + "/secitem/high-water" }
        var witness: TPM2CounterWitness { TPM2CounterWitness(tcti: tpm.tcti, directory: stateDirectory) }

        init() throws { tpm = try SoftwareTPM() }

        func open(_ mode: RollbackCheckMode = .enforce) throws -> SQLiteBackend {
            var configuration = SQLiteBackend.Configuration(path: db, keySource: try .tpm2(tcti: tpm.tcti), rollbackCheck: mode)
            configuration.environment = ["XDG_STATE_HOME": stateHome]
            return try SQLiteBackend(configuration: configuration)
        }

        var store: WitnessedStore {
            get throws { WitnessedStore(identity: "file " + (try RollbackTests.realpathOfImpl(db)), location: db) }
        }

        /// The generation the TPM counter alone vouches for (the state directory set aside).
        func counterGeneration() throws -> Int64? {
            let aside = dir.file("aside")
            let fm = FileManager.default
            if fm.fileExists(atPath: stateHome) { try fm.moveItem(atPath: stateHome, toPath: aside) }
            defer { if fm.fileExists(atPath: aside) { try? fm.removeItem(atPath: stateHome); try? fm.moveItem(atPath: aside, toPath: stateHome) } }
            // Another process's view: this process caches the counter once read.
            let child = try runHelper(["tpm-mark", db, stateDirectory, tpm.tcti], keyFile: "-")
            guard child.status == 0, let line = child.lines.last else { throw TestSetupError("tpm-mark: \(child.lines)") }
            return line == "none" ? nil : Int64(line.split(separator: ":")[0])
        }

        func generation(_ backend: SQLiteBackend) throws -> Int64 {
            try #require(Int64(try backend.verify().commitment.split(separator: ":")[0]))
        }

        /// Deletes the state directory (none there is fine).
        func deleteState() {
            try? FileManager.default.removeItem(atPath: stateHome)
        }

        func replace(with copy: String) throws {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: db + suffix) }
            try FileManager.default.copyItem(atPath: copy, toPath: db)
        }
    }

    @Test("an older copy put back after the state directory was deleted is refused (the TPM counter); the newest state is not; accept-restore clears it")
    func stateDirectoryDeleted() throws {
        let host = try Host()
        defer { host.tpm.stop() }
        do {
            let backend = try host.open()
            try SecItemClient(backend: backend, accessGroups: groups).addItem(genp("alice", data: "v1"))
            backend.close()
        }
        let old = host.dir.file("old.db")
        try FileManager.default.copyItem(atPath: host.db, toPath: old)
        let newest: Int64
        do {
            let backend = try host.open()
            let client = SecItemClient(backend: backend, accessGroups: groups)
            try client.updateItems(genp("alice"), [kSecValueData as String: Data("v2".utf8)])
            try client.addItem(genp("bob", data: "bob"))
            newest = try host.generation(backend)
            backend.close()
        }
        #expect(try host.counterGeneration() == newest, "the counter follows each commit")

        // The state directory deleted: the newest state still opens (no false alarm).
        host.deleteState()
        do {
            let backend = try host.open()
            #expect(try readData(SecItemClient(backend: backend, accessGroups: groups), "alice") == "v2")
            backend.close()
        }

        // Deleted again, and the older copy put back: refused, the file unchanged.
        host.deleteState()
        try host.replace(with: old)
        let before = fileBytes(host.db)
        let error = thrownSecItemError { _ = try host.open() }
        #expect(error?.status == errSecDecode, "\(String(describing: error))")
        #expect(error?.detail?.contains("an older generation") == true, "\(String(describing: error?.detail))")
        #expect(error?.detail?.contains("TPM") == true, "the message names the TPM counter: \(String(describing: error?.detail))")
        #expect(error?.detail?.contains("\(newest):*") == true, "\(String(describing: error?.detail))")
        #expect(fileBytes(host.db) == before, "a refused open changed the file")
        let report = try host.open(.report).verify()
        #expect(report.rollback?.contains("\(newest):*") == true, "\(report.problems)")

        // The operator accepts it: the counter is set to the restored state, logged.
        let accepting = try host.open(.report)
        let accepted = try accepting.acceptRestore(note: "restored on purpose (TPM test)")
        accepting.close()
        #expect(accepted.before == "\(newest):*")
        let restored = try #require(Int64(accepted.now.split(separator: ":")[0]))
        #expect(restored < newest)
        #expect(try host.counterGeneration() == restored)
        let log = try String(contentsOfFile: host.stateDirectory + "/accepted.log", encoding: .utf8)
        #expect(log.contains("restored on purpose (TPM test)") && log.contains("TPM counter"), "\(log)")
        do {
            let backend = try host.open()
            let client = SecItemClient(backend: backend, accessGroups: groups)
            #expect(try readData(client, "alice") == "v1")
            try client.addItem(genp("carol", data: "c"))
            #expect(try host.generation(backend) == restored + 1)
            backend.close()
        }
        // And without the state directory again: the accepted history goes on.
        host.deleteState()
        #expect(try readData(SecItemClient(backend: try host.open(), accessGroups: groups), "carol") == "c")
        #expect(try host.counterGeneration() == restored + 1)
    }

    @Test("a process killed between its commit and the counter's increment (and before any mark): no false alarm, with or without the state directory; the counter catches up")
    func crashBeforeIncrement() throws {
        let host = try Host()
        defer { host.tpm.stop() }
        do {
            let backend = try host.open()
            try SecItemClient(backend: backend, accessGroups: groups).addItem(genp("alice", data: "v1"))
            backend.close()
        }
        var committed: Int64 = 0
        for when in ["between", "before"] {
            let counter = try #require(try host.counterGeneration())
            let start = try host.generation(try host.open(.report))
            #expect(counter <= start)
            let child = try runHelper(["die-at-mark", host.db, "bob-\(when)", host.stateDirectory, when, host.tpm.tcti], keyFile: "-")
            #expect(child.lines.last?.hasPrefix("dying") == true, "\(child.lines)")
            #expect(child.status != 0)
            #expect(try host.counterGeneration() == counter, "the counter was not raised (\(when))")
            if when == "before" { host.deleteState() }
            let backend = try host.open()
            committed = try host.generation(backend)
            #expect(committed == start + 1)
            var q = Query.genericPassword("reopen", "bob-\(when)")
            q["r_Data"] = true
            #expect((try SecItemClient(backend: backend, accessGroups: groups).copyMatchingItems(q) as? Data) == Data("value-bob-\(when)".utf8))
            backend.close()
        }
        #expect(try host.counterGeneration() == committed, "opening caught the counter up")
    }

    @Test("commits made with the check off leave the counter behind: no false alarm; it catches up 16 a mark, never past the store")
    func laggingCounter() throws {
        let host = try Host()
        defer { host.tpm.stop() }
        do {
            let backend = try host.open()
            try SecItemClient(backend: backend, accessGroups: groups).addItem(genp("seed", data: "s"))
            backend.close()
        }
        let start = try #require(try host.counterGeneration())
        do {
            let backend = try host.open(.off)
            let client = SecItemClient(backend: backend, accessGroups: groups)
            for i in 0..<40 { try client.addItem(genp("off-\(i)", data: "\(i)")) }
            backend.close()
        }
        #expect(try host.counterGeneration() == start)
        host.deleteState()
        let backend = try host.open()
        let client = SecItemClient(backend: backend, accessGroups: groups)
        #expect(try readData(client, "off-39") == "39")
        let reached = try host.generation(backend)
        #expect(reached == start + 40)
        #expect(try host.counterGeneration() == start + 16, "one mark: 16 increments")
        try client.addItem(genp("on-0", data: "0"))
        #expect(try host.counterGeneration() == start + 32, "the next commit: 16 more")
        try client.addItem(genp("on-1", data: "1"))
        #expect(try host.counterGeneration() == reached + 2, "caught up, and never past the store")
    }
}
