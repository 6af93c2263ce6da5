import Foundation
import Glibc
import SecItemCore
import Testing

/// A test precondition that failed: the message says what to do.
struct SetupError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The private PostgreSQL server `scripts/with-postgresql` starts around
/// `swift test`: reached through the standard `PG*` variables. Missing → every
/// test fails with this message (never a skip: CI must run these).
enum TestServer {
    static let environment = ProcessInfo.processInfo.environment

    /// The server's directory (its Unix socket, `pgpass`, `data`).
    static func directory() throws -> String {
        guard let dir = environment["SECITEM_TEST_POSTGRESQL_DIR"], !dir.isEmpty,
            let host = environment["PGHOST"], !host.isEmpty
        else {
            throw SetupError(
                "no test PostgreSQL server: run the suite through scripts/test, or "
                    + "scripts/with-postgresql swift test --filter PostgreSQLBackendTests")
        }
        return dir
    }

    /// The server programs (`pg_ctl`, `pg_dump`, …).
    static func bin(_ program: String) throws -> String {
        guard let bin = environment["SECITEM_TEST_POSTGRESQL_BIN"], !bin.isEmpty else {
            throw SetupError("SECITEM_TEST_POSTGRESQL_BIN is not set: run under scripts/with-postgresql")
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
        guard fd >= 0 else { throw SetupError("socket() failed") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array((directory + "/.s.PGSQL.\(port)").utf8CString)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.map { UInt8(bitPattern: $0) }.prefix(raw.count))
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else { throw SetupError("cannot listen on \(directory)") }
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
