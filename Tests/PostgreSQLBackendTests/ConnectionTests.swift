import Foundation
import SecItemCore
@testable import SecItemPostgreSQL
import SecItemTestSupport
import Testing

/// Connections by libpq's own conventions, bounded in time, never showing a password.
@Suite("PostgreSQL connections")
struct ConnectionTests {
    private func connect(_ connection: String?, timeout: Duration = .seconds(5)) throws -> PQConnection {
        let env = ProcessInfo.processInfo.environment
        let parameters = try ConnectionString.parameters(connection, connectTimeout: timeout, environment: env)
        return try PQConnection.connect(parameters, redactions: ConnectionString.secrets(connection, environment: env))
    }

    @Test("the PG* environment and the password file are enough")
    func environmentOnly() throws {
        _ = try TestServer.directory()
        let pq = try connect(nil)
        let r = try pq.execute("SELECT current_user::text, current_setting('application_name')", timeout: .seconds(5))
        #expect(r.text(0, 0) == "secitem")
        #expect(r.text(0, 1) == "secitem")
        #expect(pq.endpoint.contains("secitem"))
        #expect(pq.serverVersion.hasPrefix("15"))
    }

    @Test("a key=value string and a URI name the same server; the password file supplies the password")
    func explicitStrings() throws {
        let dir = try TestServer.directory()
        let keyValue = try connect("host=\(dir) port=5432 dbname=secitem user=secitem application_name=tests")
        #expect(try keyValue.execute("SELECT current_setting('application_name')", timeout: .seconds(5)).text(0, 0) == "tests")
        let encoded = dir.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let uri = try connect("postgresql://secitem@\(encoded):5432/secitem?connect_timeout=3")
        #expect(try uri.execute("SELECT 1::bigint", timeout: .seconds(5)).int64(0, 0) == 1)
    }

    @Test("a wrong password fails to connect and appears in no message or description")
    func wrongPassword() throws {
        let dir = try TestServer.directory()
        let password = "Hunter2-\(UUID().uuidString)"
        let connection = "host=\(dir) dbname=secitem user=secitem password=\(password)"
        do {
            _ = try connect(connection)
            Issue.record("a wrong password connected")
        } catch let failure as PQFailure {
            #expect(failure.message.contains("password authentication failed"), "\(failure.message)")
            #expect(!failure.message.contains(password))
        }
        #expect(!ConnectionString.redacted(connection).contains(password))
        #expect(ConnectionString.redacted(connection).contains("password=(redacted)"))
        // A URI libpq cannot parse: its text (password included) is not repeated.
        let broken = "postgresql://secitem:\(password)%zz@\(dir)/secitem"
        do {
            _ = try ConnectionString.parameters(broken, connectTimeout: .seconds(2), environment: [:])
            Issue.record("an unparsable URI was accepted")
        } catch {
            #expect(error.status == errSecParam)
            #expect(!error.description.contains(password))
        }
    }

    @Test("a server that never answers costs at most the connect timeout")
    func silentServer() throws {
        let silent = try SilentSocket()
        let start = ContinuousClock.now
        do {
            _ = try connect("host=\(silent.directory) port=\(silent.port) dbname=x user=x", timeout: .seconds(2))
            Issue.record("connected to a socket that never answers")
        } catch let failure as PQFailure {
            #expect(failure.connectionLost)
            #expect(failure.message.contains("timeout"), "\(failure.message)")
        }
        let elapsed = seconds(since: start)
        #expect(elapsed < 4.5, "connecting took \(elapsed) s against a bound of 2 s")
    }

    @Test("a statement that outlives the client's bound drops the connection within the bound")
    func statementBound() throws {
        _ = try TestServer.directory()
        let pq = try connect(nil)
        let start = ContinuousClock.now
        do {
            _ = try pq.execute("SELECT pg_sleep(20)", timeout: .seconds(1))
            Issue.record("a 20 s statement finished within 1 s")
        } catch {
            #expect(error.connectionLost)
        }
        let elapsed = seconds(since: start)
        #expect(elapsed < 3, "the statement bound took \(elapsed) s")
    }

    @Test("the server's statement_timeout ends a statement with SQLSTATE 57014 and keeps the connection")
    func serverStatementTimeout() throws {
        _ = try TestServer.directory()
        let pq = try connect(nil)
        _ = try pq.run("SET statement_timeout = 300", timeout: .seconds(5))
        do {
            _ = try pq.execute("SELECT pg_sleep(5)", timeout: .seconds(10))
            Issue.record("pg_sleep(5) outlived statement_timeout = 300 ms")
        } catch {
            #expect(error.sqlState == "57014")
            #expect(!error.connectionLost)
        }
        #expect(pq.isAlive)
        #expect(try pq.execute("SELECT 2::bigint", timeout: .seconds(5)).int64(0, 0) == 2)
    }

    @Test("a connection the server closed is noticed without a round trip")
    func closedByServer() throws {
        _ = try TestServer.directory()
        let victim = try connect(nil)
        let pid = try victim.execute("SELECT pg_backend_pid()::bigint", timeout: .seconds(5)).int64(0, 0)!
        let killer = try connect(nil)
        _ = try killer.execute("SELECT pg_terminate_backend(\(pid)::int)", prepare: false, timeout: .seconds(5))
        try Wait.until("the connection to notice the server closed it", timeout: .seconds(10), interval: .milliseconds(20)) {
            !victim.isAlive
        }
    }
}
