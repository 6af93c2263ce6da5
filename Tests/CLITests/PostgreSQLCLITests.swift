import Foundation
import SecItemTestSupport
import Testing

/// `secitem` on the shared PostgreSQL keychain (the server of scripts/with-postgresql).
@Suite("secitem on PostgreSQL")
struct PostgreSQLCLITests {
    static func requireServer() throws {
        try TestService.postgresql.require()
    }

    /// A shared key file (0600) in `cli`'s directory.
    static func keyFile(_ cli: CLI) throws -> String {
        let path = cli.root.appendingPathComponent("fleet.key").path
        let hex = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        _ = FileManager.default.createFile(atPath: path, contents: Data(hex.utf8), attributes: [.posixPermissions: 0o600])
        return path
    }

    @Test("migrate --from file --to postgresql moves a machine's items into the shared store, verified from another host")
    func migrateFileToPostgreSQL() throws {
        try Self.requireServer()
        var cli = try CLI(backend: "file")
        defer { cli.remove() }
        let key = try Self.keyFile(cli)
        // This machine's file keychain and the fleet share one key file.
        cli.environment["SECITEM_KEY_FILE"] = key
        let schema = "cli_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        let shared: [String: String?] = ["SECITEM_KEY_FILE": key, "SECITEM_POSTGRESQL_SCHEMA": schema]
        try TransferTests.fill(cli)
        #expect(try cli.run(["add-generic-password", "-a", "carol", "-s", "svc2", "-w", "-"], stdin: "carol-secret", environment: shared).status == 0)
        let original = try TransferTests.contents(cli, environment: shared)
        let moved = try cli.run(["migrate", "--from", "file", "--to", "postgresql"], environment: shared)
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(moved.stderr.contains("3 items"), "\(moved.stderr)")
        // Another host: its own home, the same URL (the PG* variables) and key file.
        let other = try CLI(backend: "postgresql")
        defer { other.remove() }
        var postgres = shared
        postgres["SECITEM_BACKEND"] = "postgresql"
        #expect(try TransferTests.contents(other, environment: postgres) == original)
        let found = try other.run(["find-generic-password", "-a", "carol", "-s", "svc2", "-w"], environment: postgres)
        #expect(found.stdout == "carol-secret\n")
        // Copying again collides, item by item, and changes nothing.
        let again = try cli.run(["migrate", "--from", "file", "--to", "postgresql"], environment: shared)
        #expect(again.status != 0)
        #expect(try TransferTests.contents(other, environment: postgres) == original)
    }

    @Test("diagnose reports the PostgreSQL keychain without the password; never chosen automatically")
    func diagnose() throws {
        try Self.requireServer()
        let cli = try CLI(backend: nil, bus: false)
        defer { cli.remove() }
        let key = try Self.keyFile(cli)
        let env = ProcessInfo.processInfo.environment
        let password = "pw-\(UUID().uuidString)"
        let url = "host=\(env["PGHOST"]!) dbname=secitem user=secitem password=\(password)"
        let automatic = try cli.run(["diagnose"], environment: ["SECITEM_KEY_FILE": key, "SECITEM_POSTGRESQL_URL": url])
        #expect(!automatic.stdout.contains(password) && !automatic.stderr.contains(password))
        #expect(automatic.stdout.contains("postgresql"), "\(automatic.stdout)")
        #expect(!automatic.stdout.contains("backend: postgresql"), "\(automatic.stdout)")
        let chosen = try cli.run(["diagnose"], environment: ["SECITEM_BACKEND": "postgresql", "SECITEM_KEY_FILE": key])
        #expect(chosen.stdout.contains("PostgreSQL 15"), "\(chosen.stdout)")
        #expect(chosen.stdout.contains("no keychain in schema secitem yet") || chosen.stdout.contains("unlocked"), "\(chosen.stdout)")
    }

    // MARK: Every verb on the selected backend (issue 27, findings 7 and 12)

    /// A CLI on a fresh PostgreSQL schema with a shared key file, and three items.
    struct Fleet {
        var cli: CLI
        let schema: String
        var env: [String: String?] { ["SECITEM_POSTGRESQL_SCHEMA": schema] }

        init() throws {
            try PostgreSQLCLITests.requireServer()
            cli = try CLI(backend: "postgresql", bus: false)
            cli.environment["SECITEM_KEY_FILE"] = try PostgreSQLCLITests.keyFile(cli)
            schema = "cli_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
            for name in ["alice", "bob", "carol"] {
                let added = try cli.run(["add-generic-password", "-a", name, "-s", "fleet", "-w", "-"], stdin: "v1-\(name)", environment: env)
                #expect(added.status == 0, "\(added.stderr)")
            }
        }

        func run(_ arguments: [String], stdin: String? = nil) throws -> CLI.Result {
            try cli.run(arguments, stdin: stdin, environment: env)
        }

        /// Runs SQL as the server's superuser (psql over the test server's socket).
        func sql(_ statement: String) throws {
            let bin = try #require(ProcessInfo.processInfo.environment["SECITEM_TEST_POSTGRESQL_BIN"])
            let out = try ChildProcess.run(bin + "/psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", statement])
            #expect(out.status == 0, "psql: \(out.stderr)")
        }

        /// No file keychain was made in this CLI's home.
        var madeFileKeychain: Bool {
            FileManager.default.fileExists(atPath: cli.root.appendingPathComponent("data/secitem").path)
        }

        func remove() {
            try? sql("DROP SCHEMA IF EXISTS \(schema) CASCADE")
            cli.remove()
        }
    }

    @Test("verify on PostgreSQL checks the PostgreSQL keychain (no file keychain appears); a row deleted server-side is named")
    func verifyChecksPostgreSQL() throws {
        let fleet = try Fleet()
        defer { fleet.remove() }
        let ok = try fleet.run(["verify"])
        #expect(ok.status == 0, "\(ok.stdout)\(ok.stderr)")
        #expect(ok.stdout.contains(fleet.schema), "\(ok.stdout)")
        #expect(ok.stdout.contains("commitment "), "\(ok.stdout)")
        #expect(!fleet.madeFileKeychain, "verify created a file keychain")
        try fleet.sql("DELETE FROM \(fleet.schema).items WHERE seq = (SELECT min(seq) FROM \(fleet.schema).items)")
        let damaged = try fleet.run(["verify"])
        #expect(damaged.status == 1, "\(damaged.stdout)\(damaged.stderr)")
        #expect(damaged.stdout.contains("missing"), "\(damaged.stdout)")
        #expect(!fleet.madeFileKeychain)
    }

    @Test("after a row is deleted server-side, dump-keychain, export and migrate fail naming the mismatch (--skip-damaged goes on)")
    func readsReportDeletedRows() throws {
        let fleet = try Fleet()
        defer { fleet.remove() }
        try fleet.sql("DELETE FROM \(fleet.schema).items WHERE seq = (SELECT min(seq) FROM \(fleet.schema).items)")
        let dump = try fleet.run(["dump-keychain"])
        #expect(dump.status == 1, "dump: \(dump.stderr)")
        #expect(dump.stderr.contains("missing"), "\(dump.stderr)")
        let file = fleet.cli.root.appendingPathComponent("out.secitem").path
        let export = try fleet.cli.run(["export", "--output", file], environment: fleet.env.merging(["SECITEM_EXPORT_PASSPHRASE": "export-pass-1-long"]) { $1 })
        #expect(export.status == 1, "export: \(export.stderr)")
        #expect(!FileManager.default.fileExists(atPath: file), "export wrote a file missing an item")
        let migrate = try fleet.run(["migrate", "--from", "postgresql", "--to", "memory"])
        #expect(migrate.status == 1, "migrate: \(migrate.stderr)")
        #expect(migrate.stderr.contains("missing"), "\(migrate.stderr)")
        let skipping = try fleet.cli.run(
            ["export", "--output", file + ".skipping", "--skip-damaged"], environment: fleet.env.merging(["SECITEM_EXPORT_PASSPHRASE": "export-pass-1-long"]) { $1 })
        #expect(skipping.status == 0, "\(skipping.stderr)")
        #expect(skipping.stderr.contains("exported 2 items"), "\(skipping.stderr)")
    }

    @Test("a replayed old row (an item's earlier box put back) is named by verify, dump-keychain and export")
    func replayedRow() throws {
        let fleet = try Fleet()
        defer { fleet.remove() }
        try fleet.sql("CREATE TABLE \(fleet.schema).saved AS SELECT * FROM \(fleet.schema).items")
        #expect(try fleet.run(["add-generic-password", "-U", "-a", "bob", "-s", "fleet", "-w", "-"], stdin: "v2-bob").status == 0)
        try fleet.sql(
            "UPDATE \(fleet.schema).items i SET ct = s.ct, version = s.version FROM \(fleet.schema).saved s WHERE i.uuid = s.uuid AND i.ct <> s.ct")
        let verify = try fleet.run(["verify"])
        #expect(verify.status == 1, "\(verify.stdout)")
        #expect(verify.stdout.contains("older") || verify.stdout.contains("rolled back"), "\(verify.stdout)")
        let dump = try fleet.run(["dump-keychain"])
        #expect(dump.status == 1, "\(dump.stderr)")
        let file = fleet.cli.root.appendingPathComponent("replayed.secitem").path
        let export = try fleet.cli.run(["export", "--output", file], environment: fleet.env.merging(["SECITEM_EXPORT_PASSPHRASE": "export-pass-1-long"]) { $1 })
        #expect(export.status == 1, "\(export.stderr)")
    }

    @Test("verify --expect-commitment on PostgreSQL: the value verify printed detects a rollback of the whole schema to an older copy")
    func expectCommitment() throws {
        let fleet = try Fleet()
        defer { fleet.remove() }
        let first = try fleet.run(["verify"])
        let line = try #require(first.stdout.split(separator: "\n").first { $0.contains("commitment ") })
        let old = String(line.split(separator: " ").last ?? "")
        #expect(try fleet.run(["verify", "--expect-commitment", old]).status == 0)
        // A consistent copy of every table, then a write, then the copy put back (an operator restoring an old dump).
        for table in ["meta", "items", "state"] {
            try fleet.sql("CREATE TABLE \(fleet.schema).old_\(table) AS SELECT * FROM \(fleet.schema).\(table)")
        }
        #expect(try fleet.run(["add-generic-password", "-U", "-a", "alice", "-s", "fleet", "-w", "-"], stdin: "v2-alice").status == 0)
        let second = try fleet.run(["verify"])
        let newLine = try #require(second.stdout.split(separator: "\n").first { $0.contains("commitment ") })
        let new = String(newLine.split(separator: " ").last ?? "")
        #expect(new != old)
        try fleet.sql(
            ["meta", "items", "state"].map { "DELETE FROM \(fleet.schema).\($0); INSERT INTO \(fleet.schema).\($0) SELECT * FROM \(fleet.schema).old_\($0);" }
                .joined(separator: " "))
        // This host saw the newer state: its high-water mark refuses the restored store.
        let refused = try fleet.run(["find-generic-password", "-a", "alice", "-s", "fleet", "-w"])
        #expect(refused.status == 1 && refused.stdout.isEmpty, "\(refused.stdout)")
        #expect(refused.stderr.contains("rolled back") && refused.stderr.contains(new), "\(refused.stderr)")
        let flagged = try fleet.run(["verify"])
        #expect(flagged.status == 1 && flagged.stdout.contains("rolled back"), "\(flagged.stdout)")
        // A host that never saw it (a state directory of its own): the rolled-back store is
        // consistent in itself, and only the expected value reveals it.
        var stranger = fleet.env
        stranger["XDG_STATE_HOME"] = fleet.cli.root.appendingPathComponent("other-host").path
        #expect(try fleet.cli.run(["find-generic-password", "-a", "alice", "-s", "fleet", "-w"], environment: stranger).stdout
            == "v1-alice\n")
        #expect(try fleet.cli.run(["verify"], environment: stranger).status == 0)
        let rolledBack = try fleet.cli.run(["verify", "--expect-commitment", new], environment: stranger)
        #expect(rolledBack.status == 1, "\(rolledBack.stdout)")
        #expect(rolledBack.stdout.contains("rolled back"), "\(rolledBack.stdout)")
        // This host's operator accepts the restore, with a reason; the log says so.
        let accepted = try fleet.run(["accept-restore", "--reason", "restored the dump of last night"])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(accepted.stdout.contains("high-water mark \(new) -> \(old)"), "\(accepted.stdout)")
        #expect(accepted.stderr.contains("restored the dump of last night"), "\(accepted.stderr)")
        let log = try String(
            contentsOf: fleet.cli.root.appendingPathComponent("state/secitem/high-water/accepted.log"), encoding: .utf8)
        #expect(log.contains(fleet.schema) && log.contains("restored the dump of last night"), "\(log)")
        #expect(try fleet.run(["find-generic-password", "-a", "alice", "-s", "fleet", "-w"]).stdout == "v1-alice\n")
        #expect(try fleet.run(["verify"]).status == 0)
    }

    @Test("rekey --rotate and upgrade act on the PostgreSQL keychain; verify on a store without a commitment is refused clearly")
    func maintenanceVerbs() throws {
        let fleet = try Fleet()
        defer { fleet.remove() }
        let before = try fleet.run(["verify"]).stdout
        let rotated = try fleet.run(["rekey", "--rotate"])
        #expect(rotated.status == 0, "\(rotated.stderr)")
        #expect(rotated.stderr.contains(fleet.schema), "\(rotated.stderr)")
        #expect(!fleet.madeFileKeychain, "rekey touched a file keychain")
        let after = try fleet.run(["verify"])
        #expect(after.status == 0 && after.stdout != before, "\(after.stdout)")
        #expect(try fleet.run(["find-generic-password", "-a", "carol", "-s", "fleet", "-w"]).stdout == "v1-carol\n")
        let upgrade = try fleet.run(["upgrade"])
        #expect(upgrade.status == 0, "\(upgrade.stderr)")
        #expect(upgrade.stdout.contains("already in the current format"), "\(upgrade.stdout)")
        #expect(!fleet.madeFileKeychain)
        let memory = try fleet.cli.run(["verify", "--backend", "memory"])
        #expect(memory.status != 0, "\(memory.stdout)")
        #expect(memory.stderr.contains("memory"), "\(memory.stderr)")
        #expect(!fleet.madeFileKeychain)
    }
}
