import Foundation
import SecItemCore
@testable import SecItemPostgreSQL
import SecItemSQLite
import SecItemTestSupport
import Testing
import SecItemSealedStore

/// What happens when the server goes away, comes back, or will not take writes.
@Suite("PostgreSQL faults")
struct FaultTests {
    @Test("server stopped (-m immediate) during writes: every acknowledged write survives, calls meanwhile fail fast, then work again")
    func crashDuringWrites() throws {
        let server = try PrivateServer()
        let keys = try KeyDirectory()
        let schema = freshSchema("crash")
        let bound = 2.0  // connect_timeout below; statement bound 2 s (+2 s client margin)
        var env = server.environment
        env["PGCONNECT_TIMEOUT"] = "2"
        env["SECITEM_POSTGRESQL_STATEMENT_TIMEOUT"] = "2"
        // It writes until 150 adds were acknowledged, however long the server is down.
        let writer = try helper(["writer", schema, "c", "150", "10"], keyFile: keys.keyFile, env)
        // Let it write, stop the server as a crash would, keep it down, start it again.
        try Wait.until("the writer's 40th acknowledgement", interval: .milliseconds(20)) {
            writer.lines.filter({ $0.hasPrefix("ack") }).count >= 40
        }
        try server.crash()
        // Down until the writer has seen the outage (a failed add).
        try Wait.until("the writer to see the outage (a failed add)", interval: .milliseconds(20)) {
            writer.lines.contains(where: { $0.hasPrefix("fail ") })
        }
        try server.restart()
        let (lines, status) = try finish(writer)
        #expect(status == 0)
        let acked = lines.filter { $0.hasPrefix("ack ") }.map { Int($0.dropFirst(4))! }
        let failed = lines.filter { $0.hasPrefix("fail ") }
        #expect(!failed.isEmpty, "no call failed while the server was down: the test did not test anything")
        #expect(acked.count == 150)
        for line in failed {
            let parts = line.split(separator: " ")
            #expect(parts[2] == "\(errSecNotAvailable)", "\(line)")
            let ms = Double(parts[3])!
            #expect(ms <= (bound + 2 + 1.5) * 1000, "a call took \(ms) ms while the server was down: \(line)")
        }
        // The same process went on after the restart without reopening anything.
        let lastFailure = failed.compactMap { Int($0.split(separator: " ")[1]) }.max() ?? 0
        #expect(acked.contains { $0 > lastFailure }, "no write was acknowledged after the restart")
        // Every acknowledged write is there.
        let backend = try PostgreSQLBackend(configuration: .init(
            connection: "host=\(server.directory) port=5432 dbname=secitem user=secitem passfile=\(server.directory)/pgpass",
            keySource: .keyFile(keys.keyFile), schema: schema))
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["fleet"]))
        for i in acked {
            let value = try client.copyMatchingItems(["class": "genp", "svce": "fleet", "acct": "c-\(i)", "r_Data": true])
            #expect((value as? Data) == Data("value-c-\(i)".utf8), "acknowledged write c-\(i) is missing after the crash")
        }
        #expect(try backend.verify() == [])
    }

    @Test("a call after the server closed the connection reconnects by itself")
    func reconnects() throws {
        _ = try TestServer.directory()
        let keys = try KeyDirectory()
        let schema = freshSchema("reconnect")
        let tag = "victim_\(UUID().uuidString.prefix(8).lowercased())"
        let backend = try PostgreSQLBackend(configuration: .init(
            connection: "application_name=\(tag)", keySource: .keyFile(keys.keyFile), schema: schema))
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["fleet"]))
        try client.addItem(["class": "genp", "svce": "fleet", "acct": "a", "v_Data": Data("1".utf8)])
        let admin = try adminConnection()
        let r = try admin.execute(
            "SELECT count(pg_terminate_backend(pid))::bigint FROM pg_stat_activity WHERE application_name = $1::text",
            [.text(tag)], prepare: false, timeout: .seconds(5))
        #expect(r.int64(0, 0) == 1)
        // Until the server has let the session go.
        try Wait.until("the server to let the session go", interval: .milliseconds(10)) {
            let left = try admin.execute(
                "SELECT count(*)::bigint FROM pg_stat_activity WHERE application_name = $1::text",
                [.text(tag)], prepare: false, timeout: .seconds(5))
            return left.int64(0, 0) == 0
        }
        // No reopen: the next call finds the connection closed and makes a new one.
        try client.addItem(["class": "genp", "svce": "fleet", "acct": "b", "v_Data": Data("2".utf8)])
        let value = try client.copyMatchingItems(["class": "genp", "svce": "fleet", "acct": "a", "r_Data": true])
        #expect((value as? Data) == Data("1".utf8))
    }

    @Test("a read-only server: writes fail with errSecReadOnly and change nothing, reads work")
    func readOnly() throws {
        let dir = try TestServer.directory()
        let keys = try KeyDirectory()
        let schema = freshSchema("readonly")
        let writable = try PostgreSQLBackend(configuration: .init(keySource: .keyFile(keys.keyFile), schema: schema))
        let writer = SecItemClient(backend: writable, accessGroups: AccessGroups(["fleet"]))
        try writer.addItem(["class": "genp", "svce": "fleet", "acct": "a", "v_Data": Data("1".utf8)])
        // A role whose sessions are read-only answers writes as a hot standby does (SQLSTATE 25006).
        let role = "ro_\(UUID().uuidString.prefix(8).lowercased())"
        let password = UUID().uuidString
        let admin = try adminConnection()
        _ = try admin.run(
            """
            CREATE ROLE \(role) LOGIN PASSWORD '\(password)';
            ALTER ROLE \(role) SET default_transaction_read_only = on;
            GRANT USAGE ON SCHEMA \(schema) TO \(role);
            GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA \(schema) TO \(role);
            GRANT USAGE ON ALL SEQUENCES IN SCHEMA \(schema) TO \(role);
            """, timeout: .seconds(5))
        let readOnly = try PostgreSQLBackend(configuration: .init(
            connection: "host=\(dir) dbname=secitem user=\(role) password=\(password)", keySource: .keyFile(keys.keyFile),
            schema: schema))
        let reader = SecItemClient(backend: readOnly, accessGroups: AccessGroups(["fleet"]))
        let value = try reader.copyMatchingItems(["class": "genp", "svce": "fleet", "acct": "a", "r_Data": true])
        #expect((value as? Data) == Data("1".utf8))
        for attempt in ["add", "update", "delete"] {
            do {
                switch attempt {
                case "add": try reader.addItem(["class": "genp", "svce": "fleet", "acct": "b", "v_Data": Data("2".utf8)])
                case "update": _ = try reader.updateItems(["class": "genp", "svce": "fleet", "acct": "a"], ["v_Data": Data("3".utf8)])
                default: _ = try reader.deleteItems(["class": "genp", "svce": "fleet", "acct": "a"])
                }
                Issue.record("\(attempt) succeeded on a read-only server")
            } catch {
                #expect(error.status == errSecReadOnly, "\(attempt): \(error)")
                #expect(!error.description.contains(password))
            }
        }
        let after = try writer.copyMatchingItems(["class": "genp", "svce": "fleet", "m_Limit": "m_LimitAll", "r_Data": true])
        #expect((after as? [Data]) == [Data("1".utf8)])
    }

    @Test("an unreachable server: errSecNotAvailable within the connect bound, with the reason and no password")
    func unreachable() throws {
        let silent = try SilentSocket()
        let keys = try KeyDirectory()
        let password = "pw-\(UUID().uuidString)"
        let start = ContinuousClock.now
        do {
            _ = try PostgreSQLBackend(configuration: .init(
                connection: "postgresql://secitem:\(password)@/secitem?host=\(silent.directory)&connect_timeout=2",
                keySource: .keyFile(keys.keyFile)))
            Issue.record("opened a keychain on a server that never answers")
        } catch {
            #expect(error.status == errSecNotAvailable)
            #expect(error.description.contains("timeout"), "\(error)")
            #expect(!error.description.contains(password))
        }
        #expect(seconds(since: start) < 4.5)
        // A socket directory with no server: at once.
        let start2 = ContinuousClock.now
        do {
            _ = try PostgreSQLBackend(configuration: .init(
                connection: "host=/nonexistent-\(UUID().uuidString) dbname=x", keySource: .keyFile(keys.keyFile)))
            Issue.record("opened a keychain with no server")
        } catch {
            #expect(error.status == errSecNotAvailable)
        }
        #expect(seconds(since: start2) < 2)
    }
}

/// A superuser connection to the shared test server, for setting up scenarios.
func adminConnection() throws -> PQConnection {
    _ = try TestServer.directory()
    let env = ProcessInfo.processInfo.environment
    return try PQConnection.connect(
        try ConnectionString.parameters(nil, connectTimeout: .seconds(5), environment: env), redactions: [])
}
