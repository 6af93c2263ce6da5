import Foundation
import Glibc
import SecItemCore
import SecItemTestSupport
import Testing

/// The private PostgreSQL server `scripts/with-postgresql` starts around
/// `swift test`: reached through the standard `PG*` variables. Missing → every
/// test fails with this message (never a skip: CI must run these).
enum TestServer {
    static let environment = ProcessInfo.processInfo.environment

    /// The server's directory (its Unix socket, `pgpass`, `data`).
    static func directory() throws -> String {
        try TestService.postgresql.require()
        guard let dir = environment["SECITEM_TEST_POSTGRESQL_DIR"], !dir.isEmpty,
            let host = environment["PGHOST"], !host.isEmpty
        else {
            throw TestSetupError(
                "no test PostgreSQL server: run the suite through scripts/test, or "
                    + "scripts/with-postgresql swift test --filter PostgreSQLBackendTests")
        }
        return dir
    }

    /// The server programs (`pg_ctl`, `pg_dump`, …).
    static func bin(_ program: String) throws -> String {
        guard let bin = environment["SECITEM_TEST_POSTGRESQL_BIN"], !bin.isEmpty else {
            throw TestSetupError("SECITEM_TEST_POSTGRESQL_BIN is not set: run under scripts/with-postgresql")
        }
        return bin + "/" + program
    }

    /// `scripts/postgresql-server` in this checkout.
    static var serverScript: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/postgresql-server").path
    }
}

/// A Unix socket that accepts connections into its backlog and never answers:
/// a server that hangs, for the timeout tests. Closed (and its file removed) on release.
final class SilentSocket {
    let directory: String
    let port = 5432
    private let fd: Int32

    init() throws {
        directory = NSTemporaryDirectory() + "silent-pg-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSetupError("socket() failed") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array((directory + "/.s.PGSQL.\(port)").utf8CString)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.map { UInt8(bitPattern: $0) }.prefix(raw.count))
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else { throw TestSetupError("cannot listen on \(directory)") }
    }

    deinit {
        close(fd)
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Seconds since `start`.
func seconds(since start: ContinuousClock.Instant) -> Double {
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

// MARK: Keys, stores and processes

/// A fresh schema name: each test has a keychain of its own on the shared server.
func freshSchema(_ tag: String) -> String {
    "t_\(tag)_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
}

/// A private directory with a random key file (0600): the key every "host" of a test holds.
final class KeyDirectory {
    let path: String
    let keyFile: String

    init() throws {
        path = NSTemporaryDirectory() + "pg-keys-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        keyFile = path + "/keychain.key"
        try Self.writeKey(keyFile)
    }

    /// Writes a new random key (64 hex digits) to `path`, 0600, atomically.
    static func writeKey(_ path: String) throws {
        let hex = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let temp = path + ".tmp"
        _ = FileManager.default.createFile(atPath: temp, contents: Data(hex.utf8), attributes: [.posixPermissions: 0o600])
        guard rename(temp, path) == 0 else { throw TestSetupError("cannot write the key file \(path)") }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// The environment of a helper "host": the test's PG* variables (or `overrides`)
/// and the key file.
func hostEnvironment(keyFile: String, _ overrides: [String: String] = [:]) -> [String: String] {
    var env = ProcessInfo.processInfo.environment
    env["SECITEM_KEY_FILE"] = keyFile
    env.removeValue(forKey: "SECITEM_PASSPHRASE")
    for (k, v) in overrides { env[k] = v }
    return env
}

/// Starts a helper "host" (its standard error goes to the test's).
func helper(_ arguments: [String], keyFile: String, _ overrides: [String: String] = [:]) throws -> ChildProcess {
    try ChildProcess(
        try Executables.built("SecItemPostgreSQLHelper"), arguments, environment: hostEnvironment(keyFile: keyFile, overrides),
        inheritStderr: true)
}

/// Waits for a helper and returns its output lines (failing when it had to be killed).
func finish(_ child: ChildProcess, timeout: Duration = .seconds(300)) throws -> (lines: [String], status: Int32) {
    let output = try child.finish(timeout: timeout)
    return (output.stdout.split(separator: "\n").map(String.init), output.status)
}

/// A private server of a test's own (one it may crash), stopped and removed on release.
final class PrivateServer {
    let directory: String

    init() throws {
        let parent = NSTemporaryDirectory() + "pg-private-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        chmod(parent, 0o711)
        directory = parent + "/pg"
        guard Self.script("start", directory) == 0 else { throw TestSetupError("cannot start a private PostgreSQL server") }
    }

    /// Runs scripts/postgresql-server and waits for it with waitpid (the server it
    /// starts lives on; Foundation's Process would wait for it too).
    static func script(_ verb: String, _ directory: String) -> Int32 {
        let command = "'\(TestServer.serverScript)' \(verb) '\(directory)' >&2"
        let status = system(command)
        return status == -1 ? -1 : (status >> 8) & 0xFF
    }

    /// The PG* variables that reach it.
    var environment: [String: String] {
        ["PGHOST": directory, "PGPORT": "5432", "PGUSER": "secitem", "PGDATABASE": "secitem", "PGPASSFILE": directory + "/pgpass"]
    }

    func crash() throws {
        guard Self.script("crash", directory) == 0 else { throw TestSetupError("pg_ctl stop -m immediate failed") }
    }

    func restart() throws {
        guard Self.script("restart", directory) == 0 else { throw TestSetupError("the server did not start again") }
    }

    deinit {
        _ = Self.script("stop", directory)
        try? FileManager.default.removeItem(atPath: (directory as NSString).deletingLastPathComponent)
    }
}

/// A primary and a streaming standby of its own (scripts/postgresql-server
/// `start`, `standby-start`), each on a Unix socket in its own directory; stopped
/// and removed on release. `servers[0]` starts as the primary.
///
/// `@unchecked Sendable`: a pair is driven by one test at a time; another thread
/// of that test only runs ``psql(_:_:)`` on it, which reads constants.
final class ReplicatedPair: @unchecked Sendable {
    let parent: String
    /// The two servers' directories; which one is primary changes with ``failover()``.
    var servers: [String]
    private(set) var primary = 0
    /// A password file reaching both (the same role and password on each).
    let passfile: String

    init(synchronous: Bool = true) throws {
        parent = NSTemporaryDirectory() + "pg-pair-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        chmod(parent, 0o711)
        servers = [parent + "/a", parent + "/b"]
        passfile = parent + "/pgpass"
        guard PrivateServer.script("start", servers[0]) == 0 else { throw TestSetupError("cannot start the primary") }
        guard Self.script("standby-start", servers[1], servers[0]) == 0 else { throw TestSetupError("cannot start the standby") }
        if synchronous {
            guard PrivateServer.script("sync", servers[0]) == 0 else { throw TestSetupError("cannot make the standby synchronous") }
        }
        let line = try String(contentsOfFile: servers[0] + "/pgpass", encoding: .utf8).split(separator: "\n")[0]
        let password = line.split(separator: ":", omittingEmptySubsequences: false)[4]
        let lines = servers.map { "\($0):5432:*:secitem:\(password)\n" }.joined()
        _ = FileManager.default.createFile(atPath: passfile, contents: Data(lines.utf8), attributes: [.posixPermissions: 0o600])
    }

    static func script(_ verb: String, _ directory: String, _ other: String) -> Int32 {
        let status = system("'\(TestServer.serverScript)' \(verb) '\(directory)' '\(other)' >&2")
        return status == -1 ? -1 : (status >> 8) & 0xFF
    }

    var primaryDirectory: String { servers[primary] }
    var standbyDirectory: String { servers[1 - primary] }

    /// A libpq `key=value` string for the servers in `order`, with `attributes`
    /// (`target_session_attrs`).
    func connection(_ order: [String], attributes: String) -> String {
        "host=\(order.joined(separator: ",")) port=\(order.map { _ in "5432" }.joined(separator: ",")) dbname=secitem "
            + "user=secitem passfile=\(passfile) target_session_attrs=\(attributes) connect_timeout=2"
    }

    /// Runs SQL on one server with psql (as the test's superuser); its output.
    func psql(_ directory: String, _ sql: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try TestServer.bin("psql"))
        process.arguments = ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql]
        var env = ProcessInfo.processInfo.environment
        env["PGHOST"] = directory
        env["PGPORT"] = "5432"
        env["PGUSER"] = "secitem"
        env["PGDATABASE"] = "secitem"
        env["PGPASSFILE"] = passfile
        process.environment = env
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestSetupError("psql failed on \(directory): \(sql)") }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// How ``failover(synchronous:kill:)`` loses the primary (scripts/postgresql-server).
    enum Kill: String {
        /// Every process of the server at once, as a machine is lost (`kill`).
        case machine = "kill"
        /// The postmaster alone; its children exit when they notice (`kill-postmaster`).
        case postmaster = "kill-postmaster"
    }

    /// Loses the primary (`kill`), promotes the standby, and makes the old primary the
    /// new standby (pg_rewind, else a fresh base backup), streaming again.
    func failover(synchronous: Bool = true, kill: Kill = .machine) throws {
        let old = primary
        guard PrivateServer.script(kill.rawValue, servers[old]) == 0 else { throw TestSetupError("cannot kill the primary") }
        try promote(servers[1 - old])
        if synchronous {
            guard PrivateServer.script("sync", servers[primary]) == 0 else { throw TestSetupError("cannot make the standby synchronous") }
        }
        guard Self.script("rewind", servers[old], servers[primary]) == 0 else { throw TestSetupError("cannot re-attach the old primary") }
    }

    /// Promotes the standby in `directory` (which becomes ``primaryDirectory``).
    func promote(_ directory: String) throws {
        guard let index = servers.firstIndex(of: directory) else { throw TestSetupError("\(directory) is not of this pair") }
        guard PrivateServer.script("promote", directory) == 0 else { throw TestSetupError("cannot promote \(directory)") }
        primary = index
    }

    deinit {
        for server in servers { _ = PrivateServer.script("stop", server) }
        try? FileManager.default.removeItem(atPath: parent)
    }
}
