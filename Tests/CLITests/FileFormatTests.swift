import CSecItemSQLite3
import Foundation
import SecItemTestSupport
import Testing

/// `secitem verify`, `rekey` and `upgrade` against format-2 files altered as an attacker without the key would.
@Suite("secitem verify, rekey and upgrade on the file format")
struct FileFormatTests {
    func path(_ cli: CLI) -> String { cli.root.appendingPathComponent("data/secitem/keychain.db").path }

    func sql(_ path: String, _ statement: String) {
        var db: OpaquePointer?
        sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil)
        sqlite3_busy_timeout(db, 10_000)
        sqlite3_exec(db, statement, nil, nil, nil)
        sqlite3_close_v2(db)
    }

    let env: [String: String?] = ["SECITEM_PASSPHRASE": "pass"]

    @Test("verify refuses a file with a planted trigger, naming it")
    func plantedTrigger() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        #expect(try cli.run(["add-generic-password", "-a", "a", "-s", "s", "-w", "-"], stdin: "x", environment: env).status == 0)
        sql(path(cli), "CREATE TRIGGER keep BEFORE UPDATE ON sealed_items BEGIN SELECT RAISE(IGNORE); END")
        let verify = try cli.run(["verify"], environment: env)
        #expect(verify.status == 53, "errSecInvalidKeychain: the file is refused, not opened")
        #expect(verify.stderr.contains("altered outside secitem") && verify.stderr.contains("keep"), "\(verify.stderr)")
        let update = try cli.run(["add-generic-password", "-a", "a", "-s", "s", "-U", "-w", "-"], stdin: "y", environment: env)
        #expect(update.status != 0)
    }

    @Test("verify prints the commitment; --expect-commitment catches a whole-file rollback verify alone cannot")
    func expectCommitment() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        #expect(try cli.run(["add-generic-password", "-a", "a", "-s", "s", "-w", "-"], stdin: "old", environment: env).status == 0)
        let backup = cli.root.appendingPathComponent("backup.db").path
        try FileManager.default.copyItem(atPath: path(cli), toPath: backup)
        #expect(try cli.run(["add-generic-password", "-a", "a", "-s", "s", "-U", "-w", "-"], stdin: "new", environment: env).status == 0)
        let verify = try cli.run(["verify"], environment: env)
        #expect(verify.status == 0)
        let line = try #require(verify.stdout.split(separator: "\n").first { $0.contains("commitment ") })
        let value = String(try #require(line.split(separator: " ").last))
        #expect(try cli.run(["verify", "--expect-commitment", value], environment: env).status == 0)
        // The whole file rolled back to the older, consistent copy.
        try FileManager.default.removeItem(atPath: path(cli))
        try FileManager.default.copyItem(atPath: backup, toPath: path(cli))
        // This host saw the newer state: its high-water mark reveals the rollback by itself.
        let flagged = try cli.run(["verify"], environment: env)
        #expect(flagged.status == 1 && flagged.stdout.contains("rolled back"), "\(flagged.stdout)")
        // A host that never saw it (its own state directory): the file alone is consistent.
        var stranger = env
        stranger["XDG_STATE_HOME"] = cli.root.appendingPathComponent("other-host").path
        #expect(try cli.run(["verify"], environment: stranger).status == 0, "the file alone is consistent")
        let anchored = try cli.run(["verify", "--expect-commitment", value], environment: env)
        #expect(anchored.status == 1)
        #expect(anchored.stdout.contains("rolled back"), "\(anchored.stdout)")
    }

    @Test("rekey --rewrap-only warns; rekey alone rotates; upgrade says what it did")
    func rekeyAndUpgrade() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        #expect(try cli.run(["add-generic-password", "-a", "a", "-s", "s", "-w", "-"], stdin: "kept", environment: env).status == 0)
        let rewrap = try cli.run(["rekey", "--new-passphrase", "--rewrap-only"], stdin: "second\n", environment: env)
        #expect(rewrap.status == 0, "\(rewrap.stderr)")
        #expect(rewrap.stderr.contains("warning") && rewrap.stderr.contains("old copy"), "\(rewrap.stderr)")
        let second: [String: String?] = ["SECITEM_PASSPHRASE": "second"]
        let rotate = try cli.run(["rekey", "--new-passphrase"], stdin: "third\n", environment: second)
        #expect(rotate.status == 0 && !rotate.stderr.contains("warning") && rotate.stderr.contains("re-encrypted"), "\(rotate.stderr)")
        let third: [String: String?] = ["SECITEM_PASSPHRASE": "third"]
        #expect(try cli.run(["find-generic-password", "-s", "s", "-w"], environment: third).stdout == "kept\n")
        #expect(try cli.run(["rekey", "--rotate", "--rewrap-only"], environment: third).status == 2)
        let upgrade = try cli.run(["upgrade"], environment: third)
        #expect(upgrade.status == 0 && upgrade.stdout.contains("already in the current format"), "\(upgrade.stdout)\(upgrade.stderr)")
        // A format-1 fixture copy upgrades.
        var fixture = URL(fileURLWithPath: #filePath)
        for _ in 0..<2 { fixture.deleteLastPathComponent() }
        fixture.appendPathComponent("Fixtures/format1-default-group")
        let old = cli.root.appendingPathComponent("old.db").path
        let key = cli.root.appendingPathComponent("old.key").path
        try FileManager.default.copyItem(atPath: fixture.appendingPathComponent("keychain.db").path, toPath: old)
        try FileManager.default.copyItem(atPath: fixture.appendingPathComponent("keychain.key").path, toPath: key)
        chmod(key, 0o600)
        let oldEnv: [String: String?] = ["SECITEM_FILE": old, "SECITEM_KEY_FILE": key, "SECITEM_KEY_SOURCE": "key-file"]
        let first = try cli.run(["upgrade"], environment: oldEnv)
        #expect(first.status == 0 && first.stdout.contains("upgraded to format 3"), "\(first.stdout)\(first.stderr)")
        #expect(try cli.run(["find-generic-password", "-a", "alice", "-s", "com.example.api", "-w"], environment: oldEnv).stdout
                == "s3cret-alice\n")
    }
}
