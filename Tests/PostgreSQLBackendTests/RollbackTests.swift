import Foundation
import SecItemCore
import SecItemPostgreSQL
import SecItemSealedStore
import SecItemTestSupport
import Testing

/// Rollback evidence on PostgreSQL (docs/postgresql.md, "Rollback evidence"): an older
/// `pg_dump` restored under running hosts is consistent in itself; each host that saw
/// a newer state refuses it; a host that never did cannot tell.
@Suite("Rollback evidence: PostgreSQL")
struct PostgreSQLRollbackTests {
    /// One "host": its own state directory, so its own high-water marks.
    struct Host {
        let stateHome: String
        var witness: StateDirectoryWitness { StateDirectoryWitness(directory: stateHome + "/secitem/high-water") }

        init(_ base: String, _ name: String) { stateHome = base + "/" + name }

        func open(_ schema: String, _ keys: KeyDirectory, _ mode: RollbackCheckMode = .enforce) throws -> PostgreSQLBackend {
            try PostgreSQLBackend(
                configuration: .init(keySource: .keyFile(keys.keyFile), schema: schema, rollbackCheck: mode, rollbackWitness: witness))
        }
    }

    static func item(_ account: String, _ value: String) -> [String: Any] {
        ["class": "genp", "svce": "fleet", "acct": account, "v_Data": Data(value.utf8)]
    }

    static func read(_ client: SecItemClient, _ account: String) throws(SecItemError) -> String? {
        let data = try client.copyMatchingItems(["class": "genp", "svce": "fleet", "acct": account, "r_Data": true]) as? Data
        return data.map { String(decoding: $0, as: UTF8.self) }
    }

    static func failure(_ body: () throws(SecItemError) -> Void) -> SecItemError? {
        do {
            try body()
            return nil
        } catch {
            return error
        }
    }

    @Test("an older pg_dump restored under two running hosts: each refuses it (reads and writes, errSecDecode naming both states), a new process on either too; a host that never saw the newer state reads the old rows; accept-restore clears it per host")
    func olderDumpRestored() throws {
        _ = try TestServer.directory()
        let keys = try KeyDirectory()
        let schema = freshSchema("rollback")
        let base = keys.path + "/hosts"
        let a = Host(base, "a"), b = Host(base, "b"), c = Host(base, "c")
        let hostA = try a.open(schema, keys)
        let clientA = SecItemClient(backend: hostA, accessGroups: AccessGroups(["fleet"]))
        try clientA.addItem(Self.item("alice", "v1"))
        let hostB = try b.open(schema, keys)
        let clientB = SecItemClient(backend: hostB, accessGroups: AccessGroups(["fleet"]))
        #expect(try Self.read(clientB, "alice") == "v1")

        let dumpFile = keys.path + "/old.sql"
        let dump = try ChildProcess.run(
            try TestServer.bin("pg_dump"), ["--schema=\(schema)", "--no-owner", "--clean", "--if-exists", "-f", dumpFile])
        #expect(dump.status == 0, "pg_dump: \(dump.stderr)")

        try clientA.updateItems(["class": "genp", "svce": "fleet", "acct": "alice"], ["v_Data": Data("v2".utf8)])
        try clientA.addItem(Self.item("bob", "b"))
        #expect(try Self.read(clientB, "alice") == "v2", "host b sees the newer state")
        let newer = try hostA.verifyStore().commitment

        let restore = try ChildProcess.run(try TestServer.bin("psql"), ["-q", "-v", "ON_ERROR_STOP=1", "-f", dumpFile])
        #expect(restore.status == 0, "psql: \(restore.stderr)")

        for (name, client) in [("a", clientA), ("b", clientB)] {
            let read = Self.failure { () throws(SecItemError) in _ = try Self.read(client, "alice") }
            #expect(read?.status == errSecDecode, "host \(name): \(String(describing: read))")
            // Host a wrote the newer state (its mark is it, digest and all); host b only read
            // it, which proves its predecessor (generation alone: a failover may lose the newest).
            let expected = name == "a" ? newer : "\((Int64(newer.prefix { $0 != ":" }) ?? 0) - 1):*"
            #expect(read?.detail?.contains("rolled back") == true && read?.detail?.contains(expected) == true,
                    "host \(name): \(String(describing: read?.detail))")
            let write = Self.failure { () throws(SecItemError) in try client.addItem(Self.item("carol-\(name)", "c")) }
            #expect(write?.status == errSecDecode, "host \(name): \(String(describing: write))")
        }
        // A new process on host a (same state directory) refuses it at open.
        let process = try ChildProcess.run(
            try Executables.built("SecItemPostgreSQLHelper"), ["read", schema, "alice"],
            environment: hostEnvironment(keyFile: keys.keyFile, ["XDG_STATE_HOME": a.stateHome]))
        #expect(process.status != 0 && process.stderr.contains("rolled back"), "\(process.stdout) \(process.stderr)")
        // Host c never saw the newer state: nothing to compare with (the documented limit).
        let hostC = try c.open(schema, keys)
        #expect(try Self.read(SecItemClient(backend: hostC, accessGroups: AccessGroups(["fleet"])), "alice") == "v1")
        // verify reports it on a host that saw the newer state, not on c.
        let reportA = try a.open(schema, keys, .report).verifyStore()
        #expect(reportA.problems.contains { $0.contains("rolled back") }, "\(reportA.problems)")
        #expect(try c.open(schema, keys, .report).verifyStore().problems.isEmpty)

        // Host a's operator accepts the restore: host a goes on, its running backend included; b still refuses.
        let accepted = try a.open(schema, keys, .report).acceptRestore(note: "restored dump on purpose (test)")
        #expect(accepted.before == newer)
        #expect(try Self.read(clientA, "alice") == "v1")
        #expect(Self.failure { () throws(SecItemError) in _ = try Self.read(clientB, "alice") }?.status == errSecDecode)
        try clientA.addItem(Self.item("carol", "c"))
        // Host b only read the newer state: that proves its predecessor's generation alone
        // (a failover may lose the newest commit a reader saw), so once the accepted store
        // is written up to that generation, b cannot tell it from a failover (the documented
        // limit, docs/postgresql.md "Rollback evidence").
        #expect(try Self.read(clientB, "carol") == "c")
        let log = try String(contentsOfFile: a.witness.logPath, encoding: .utf8)
        #expect(log.contains("restored dump on purpose (test)"), "\(log)")
        // Host c saw the store move on after the restore: its reads go on too.
        #expect(try Self.read(SecItemClient(backend: hostC, accessGroups: AccessGroups(["fleet"])), "carol") == "c")
    }

    @Test("three writer processes of one host and this process reading: no false alarm")
    func concurrentWritersNoFalseAlarm() throws {
        _ = try TestServer.directory()
        let keys = try KeyDirectory()
        let schema = freshSchema("rbwriters")
        let host = Host(keys.path + "/hosts", "one")
        let backend = try host.open(schema, keys)
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["fleet"]))
        try client.addItem(Self.item("seed", "s"))
        let children = try (0..<3).map { w in
            try helper(["distinct", schema, "\(w)", "40"], keyFile: keys.keyFile, ["XDG_STATE_HOME": host.stateHome])
        }
        var failures: [String] = []
        var reads = 0
        while children.contains(where: { $0.process.isRunning }) {
            do {
                _ = try Self.read(client, "seed")
                reads += 1
            } catch {
                failures.append("\(error)")
            }
        }
        for (w, child) in children.enumerated() {
            let (lines, status) = try finish(child)
            #expect(status == 0 && lines.last == "added 40", "writer \(w): \(lines.suffix(3))")
            #expect(!lines.contains { $0.hasPrefix("error") }, "writer \(w): \(lines.filter { $0.hasPrefix("error") }.prefix(3))")
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        #expect(reads > 0)
        let generation = try #require(Int64(try backend.verifyStore().commitment.split(separator: ":")[0]))
        let store = try #require(try FileManager.default.contentsOfDirectory(atPath: host.witness.directory).first { $0.hasSuffix(".mark") })
        let mark = try String(contentsOfFile: host.witness.directory + "/" + store, encoding: .utf8)
        #expect(mark.contains("generation \(generation)\n"), "\(mark)")
    }
}
