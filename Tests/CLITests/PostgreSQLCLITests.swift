import Foundation
import SecItemTestSupport
import Testing

/// `secitem` on the shared PostgreSQL keychain (the server of scripts/with-postgresql).
@Suite("secitem on PostgreSQL")
struct PostgreSQLCLITests {
    static func requireServer() throws {
        guard let dir = ProcessInfo.processInfo.environment["SECITEM_TEST_POSTGRESQL_DIR"], !dir.isEmpty else {
            Issue.record("no test PostgreSQL server: run the tests with scripts/test (scripts/with-postgresql)")
            throw CLI.CLIError.noSecretService
        }
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
}
