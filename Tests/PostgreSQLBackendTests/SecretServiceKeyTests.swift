import Foundation
import SecItemCore
import SecItemPostgreSQL
import SecItemSealedStore
import SecItemSecretService
import SecItemTestSupport
import Testing

/// A PostgreSQL keychain whose key is an item in the login keyring (key source
/// `secret-service`, scripts/test's gnome-keyring): the bootstrap's cleanup of the key
/// item when the store is not created, and the rollback mark kept in the keyring.
@Suite("PostgreSQL with the Secret Service key source")
struct PostgreSQLSecretServiceKeyTests {
    /// The key items whose label names `schema` (`secret-tool search` prints each item:
    /// its output is counted, never shown).
    static func keyItems(_ schema: String) throws -> Int {
        try items("org.secitem.KeychainKey", labelled: "PostgreSQL schema \(schema) ")
    }

    static func items(_ itemSchema: String, labelled text: String) throws -> Int {
        let out = try ChildProcess.run(try Executables.which("secret-tool"), ["search", "--all", "xdg:schema", itemSchema], timeout: .seconds(30))
        return out.stdout.split(separator: "\n").filter { $0.hasPrefix("label = ") && $0.contains(text) }.count
    }

    static func clear(_ schema: String) {
        // Only this test's items: found by label, cleared by their store id.
        let out = try? ChildProcess.run(
            try Executables.which("secret-tool"), ["search", "--all", "xdg:schema", "org.secitem.KeychainKey"], timeout: .seconds(30))
        var ours = false
        for line in (out?.stdout ?? "").split(separator: "\n") {
            if line.hasPrefix("label = ") { ours = line.contains("PostgreSQL schema \(schema) ") }
            if ours, line.hasPrefix("attribute.store = ") {
                _ = try? ChildProcess.run(
                    try Executables.which("secret-tool"),
                    ["clear", "xdg:schema", "org.secitem.KeychainKey", "store", String(line.dropFirst("attribute.store = ".count))],
                    timeout: .seconds(30))
            }
        }
    }

    static func psql(_ sql: String) throws {
        let out = try ChildProcess.run(try TestServer.bin("psql"), ["-q", "-v", "ON_ERROR_STOP=1", "-c", sql])
        guard out.status == 0 else { throw TestSetupError("psql: \(out.stderr)") }
    }

    func open(_ schema: String, stateHome: String, _ mode: RollbackCheckMode = .enforce) throws(SecItemError) -> PostgreSQLBackend {
        var configuration = PostgreSQLBackend.Configuration(keySource: .secretServiceItem(), schema: schema, rollbackCheck: mode)
        configuration.environment = ["XDG_STATE_HOME": stateHome]
        return try PostgreSQLBackend(configuration: configuration)
    }

    @Test("a keychain whose creation fails after its key item was stored leaves no key item (KeySource.discardNewKey); one created keeps exactly one")
    func failedCreationLeavesNoKeyItem() throws {
        _ = try TestServer.directory()
        try TestService.secretService.require()
        let state = NSTemporaryDirectory() + "pg-ss-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: state) }
        // The control: a creation that succeeds stores one key item, found by this search.
        let created = freshSchema("sskey")
        defer { Self.clear(created) }
        try open(created, stateHome: state).close()
        #expect(try Self.keyItems(created) == 1, "a created keychain's key item")

        // The schema exists with a meta table that has no key: the creation's first
        // INSERT … ON CONFLICT (key) fails after the key item was stored.
        let failing = freshSchema("sskeyfail")
        defer { Self.clear(failing) }
        try Self.psql("CREATE SCHEMA \(failing); CREATE TABLE \(failing).meta(key TEXT, number BIGINT, bytes BYTEA, text TEXT)")
        do {
            _ = try open(failing, stateHome: state)
            Issue.record("a keychain was created over a meta table without a key")
        } catch {
            #expect(error.status != errSecSuccess)
        }
        #expect(try Self.keyItems(failing) == 0, "the failed creation left its key item in the login keyring")
    }

    @Test("an older pg_dump restored after the state directory was deleted is refused (a new process too: the login keyring keeps the mark); accept-restore resets it")
    func olderDumpWithoutStateDirectory() throws {
        _ = try TestServer.directory()
        try TestService.secretService.require()
        let schema = freshSchema("ssroll")
        defer { Self.clear(schema) }
        let state = NSTemporaryDirectory() + "pg-ss-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: state) }
        let backend = try open(schema, stateHome: state)
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["fleet"]))
        try client.addItem(PostgreSQLRollbackTests.item("alice", "v1"))
        let dumpFile = state + "/old.sql"
        let dump = try ChildProcess.run(
            try TestServer.bin("pg_dump"), ["--schema=\(schema)", "--no-owner", "--clean", "--if-exists", "-f", dumpFile])
        #expect(dump.status == 0, "pg_dump: \(dump.stderr)")
        try client.updateItems(["class": "genp", "svce": "fleet", "acct": "alice"], ["v_Data": Data("v2".utf8)])
        try client.addItem(PostgreSQLRollbackTests.item("bob", "b"))
        let newer = try backend.verifyStore().commitment
        backend.close()
        #expect(try Self.items("org.secitem.RollbackMark", labelled: "PostgreSQL schema \(schema) ") == 1, "the keyring's mark item")

        try FileManager.default.removeItem(atPath: state + "/secitem")
        let restore = try ChildProcess.run(try TestServer.bin("psql"), ["-q", "-v", "ON_ERROR_STOP=1", "-f", dumpFile])
        #expect(restore.status == 0, "psql: \(restore.stderr)")
        // A new process (never read the keyring's mark before) with no state directory: the keyring's mark refuses it.
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SECITEM_") }
        env["SECITEM_BACKEND"] = "postgresql"
        env["SECITEM_POSTGRESQL_SCHEMA"] = schema
        env["SECITEM_KEY_SOURCE"] = "secret-service"
        env["XDG_STATE_HOME"] = state
        let verify = try ChildProcess.run(try Executables.built("secitem"), ["verify"], environment: env, timeout: .seconds(60))
        #expect(verify.status != 0 && verify.stdout.contains("rolled back") && verify.stdout.contains(newer), "\(verify.stdout) \(verify.stderr)")
        #expect(!FileManager.default.fileExists(atPath: state + "/secitem/high-water/accepted.log"))
        do {
            _ = try open(schema, stateHome: state)
            Issue.record("the older dump opened with the state directory gone")
        } catch {
            #expect(error.status == errSecDecode, "\(error)")
            #expect(error.detail?.contains("login keyring") == true && error.detail?.contains(newer) == true, "\(String(describing: error.detail))")
        }
        let accepted = try open(schema, stateHome: state, .report).acceptRestore(note: "restored dump on purpose (keyring test)")
        #expect(accepted.before == newer)
        try FileManager.default.removeItem(atPath: state + "/secitem")
        let again = try open(schema, stateHome: state)
        #expect(try PostgreSQLRollbackTests.read(SecItemClient(backend: again, accessGroups: AccessGroups(["fleet"])), "alice") == "v1")
        again.close()
    }
}
