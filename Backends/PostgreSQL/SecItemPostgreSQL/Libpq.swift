internal import CSecItemLibpq
import Foundation
import SecItemCore

/// libpq itself, loaded the first time the backend needs it (`CSecItemLibpq` opens
/// `libpq.so.5` with `dlopen`): a process that never uses PostgreSQL never maps it.
enum Libpq {
    /// Loads libpq once per process (later calls return the first answer at once).
    /// - Throws: `errSecNotAvailable`, naming the library and how to install it, when
    ///   libpq is missing or lacks a function the backend calls.
    static func load() throws(SecItemError) {
        if let reason = failure(csecitem_libpq_load) {
            throw SecItemError(errSecNotAvailable, "the PostgreSQL backend needs libpq: \(reason)")
        }
    }

    /// What ``load()`` reports when `library` is the libpq to load: `nil` when it loads
    /// and has every function, else the reason. The process's own libpq is untouched.
    static func problem(loading library: String) -> String? {
        failure { csecitem_libpq_probe(library, $0, $1) }
    }

    private static func failure(_ call: (UnsafeMutablePointer<CChar>, Int) -> Int32) -> String? {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 512) { buffer in
            guard let base = buffer.baseAddress else { return "no memory" }
            base[0] = 0
            return call(base, buffer.count) == 1 ? nil : String(cString: base)
        }
    }
}

/// A parameter of a statement: sent in binary (bytes) or text (numbers, text) format.
package enum PQValue {
    case bytes([UInt8])
    case text(String)
    case int64(Int64)
    case null
}

/// A failure from the server or the connection, before it is turned into a ``SecItemError``.
struct PQFailure: Error {
    /// The five-character SQLSTATE, when the server sent one.
    var sqlState: String?
    /// The constraint a violation names, when the server sent one.
    var constraint: String?
    /// libpq's or the server's message, with any known password removed.
    var message: String
    /// Whether the connection is gone (lost, reset, timed out): the next call reconnects.
    var connectionLost: Bool
}

/// One libpq connection. Not thread-safe: used under the backend's mutex only.
///
/// Every wait for the server is bounded: results are read with `poll(2)` on the
/// connection's socket against a deadline, so a server that vanishes mid-call (a
/// network partition, a host powered off) costs at most the bound, after which
/// the connection is dropped and the call fails.
final class PQConnection {
    private let conn: OpaquePointer
    /// Statements prepared on this connection, by SQL text.
    private var prepared: [String: String] = [:]
    /// Strings to remove from every message (the password, as given).
    private let redactions: [String]
    /// Whether statements are prepared once and run by name (off behind a pooler in
    /// transaction mode, where the next transaction may run on another server
    /// connection: each statement is then parsed with its parameters, unnamed).
    let prepares: Bool

    /// How many notices of severity WARNING the server sent on this connection
    /// (counted by `csecitem_pq_count_warnings`, which libpq calls while reading results).
    private let warningCounter: UnsafeMutablePointer<Int32>

    private init(conn: OpaquePointer, redactions: [String], prepares: Bool) {
        self.conn = conn
        self.redactions = redactions
        self.prepares = prepares
        warningCounter = .allocate(capacity: 1)
        warningCounter.initialize(to: 0)
        // libpq's default prints server notices to stderr; a library stays quiet
        // (errors reach the caller through statuses and details instead), and counts
        // the warnings: one during COMMIT means its wait for the standby was cancelled.
        csecitem_PQsetNoticeReceiver(conn, csecitem_pq_count_warnings, UnsafeMutableRawPointer(warningCounter))
    }

    deinit {
        csecitem_PQfinish(conn)
        warningCounter.deallocate()
    }

    /// How many times this connection waited for the server's answer (round trips:
    /// a statement prepared on first use costs two), for the tests that count them.
    private(set) var roundTrips = 0

    /// How many WARNING notices the server has sent on this connection so far.
    var warnings: Int { Int(warningCounter.pointee) }

    /// Connects with libpq's keyword/value parameters (the URI or key=value string
    /// expanded from `dbname`, then the `PG*` environment, `~/.pgpass` and
    /// `pg_service.conf`, exactly as `psql` would).
    /// - Throws: ``PQFailure`` with the reason the server could not be reached.
    static func connect(_ parameters: [(String, String)], redactions: [String], prepares: Bool = true)
        throws(PQFailure) -> PQConnection
    {
        do { try Libpq.load() } catch { throw PQFailure(sqlState: nil, message: error.detail ?? error.message, connectionLost: true) }
        var keys = parameters.map { strdup($0.0) }
        var values = parameters.map { strdup($0.1) }
        defer {
            keys.forEach { free($0) }
            values.forEach { free($0) }
        }
        keys.append(nil)
        values.append(nil)
        let handle: OpaquePointer? = keys.withUnsafeBufferPointer { k in
            values.withUnsafeBufferPointer { v in
                k.withMemoryRebound(to: UnsafePointer<CChar>?.self) { kc in
                    v.withMemoryRebound(to: UnsafePointer<CChar>?.self) { vc in
                        csecitem_PQconnectdbParams(kc.baseAddress, vc.baseAddress, 1)
                    }
                }
            }
        }
        guard let handle else {
            throw PQFailure(sqlState: nil, message: "libpq could not allocate a connection", connectionLost: true)
        }
        if csecitem_PQstatus(handle) != CONNECTION_OK {
            let message = Self.redact(Self.errorMessage(handle), redactions)
            csecitem_PQfinish(handle)
            throw PQFailure(sqlState: nil, message: message, connectionLost: true)
        }
        return PQConnection(conn: handle, redactions: redactions, prepares: prepares)
    }

    /// Whether the connection still looks alive without a round trip: an idle
    /// connection that never LISTENs gets nothing from the server unless the
    /// server is closing it (restart, failover, termination, idle timeout), so a
    /// socket that reads as ready means it is gone or going.
    var isAlive: Bool {
        guard csecitem_PQstatus(conn) == CONNECTION_OK, csecitem_PQtransactionStatus(conn) == PQTRANS_IDLE else { return false }
        let fd = csecitem_PQsocket(conn)
        guard fd >= 0 else { return false }
        return csecitem_pq_wait(fd, 0, 0) == 0
    }

    /// The server's `server_version` parameter, such as "15.18 (Debian 15.18-0+deb12u1)".
    var serverVersion: String {
        guard let v = csecitem_PQparameterStatus(conn, "server_version") else { return "unknown" }
        return String(cString: v)
    }

    /// Whether the session is read-only (`in_hot_standby` or `default_transaction_read_only`),
    /// as the server reported at connection time (PostgreSQL 14 and later).
    var reportsReadOnly: Bool {
        for name in ["in_hot_standby", "default_transaction_read_only"] {
            if let v = csecitem_PQparameterStatus(conn, name), String(cString: v) == "on" { return true }
        }
        return false
    }

    /// Where the connection went, without the password: `host:port/dbname as user`.
    var endpoint: String {
        func s(_ p: UnsafeMutablePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "?" }
        return "\(s(csecitem_PQhost(conn))):\(s(csecitem_PQport(conn)))/\(s(csecitem_PQdb(conn))) as \(s(csecitem_PQuser(conn)))"
    }

    /// Runs `sql` with `parameters` and waits for its result, within `timeout`.
    ///
    /// Statements are prepared once per connection (`prepare: true`) and then
    /// executed by name; results come back in binary format.
    /// - Throws: ``PQFailure`` for a server error (SQLSTATE set) or a lost connection.
    func execute(_ sql: String, _ parameters: [PQValue] = [], prepare: Bool = true, timeout: Duration)
        throws(PQFailure) -> PQResult
    {
        let deadline = ContinuousClock.now + timeout
        var name: String?
        if prepare && prepares {
            // One lookup by the statement's text (hashing a long statement twice cost a lookup ~2k instructions).
            if let known = prepared[sql] {
                name = known
            } else {
                // Named by the statement's text: a name can only ever mean this statement,
                // on whatever server connection it reaches.
                let fresh = Self.statementName(sql)
                let sent = csecitem_PQsendPrepare(conn, fresh, sql, 0, nil)
                guard sent == 1 else { throw failure(connectionLost: true) }
                let result = try single(deadline)
                guard csecitem_PQresultStatus(result.handle) == PGRES_COMMAND_OK else { throw failure(result) }
                prepared[sql] = fresh
                name = fresh
            }
        }
        let count = Int32(parameters.count)
        // Every value in one buffer (text and numbers NUL-terminated), found by offset; NULL
        // is offset -1. One allocation where an array per value and nested closures pinning
        // each cost a lookup ~9k instructions (issue 24).
        var buffer: [UInt8] = []
        buffer.reserveCapacity(256)
        var offsets: [Int] = []
        offsets.reserveCapacity(parameters.count)
        var lengths: [Int32] = []
        lengths.reserveCapacity(parameters.count)
        var formats: [Int32] = []
        formats.reserveCapacity(parameters.count)
        for p in parameters {
            let at = buffer.count
            switch p {
            case .bytes(let b):
                buffer.append(contentsOf: b)
                formats.append(1)
            case .text(let t):
                buffer.append(contentsOf: t.utf8)
                buffer.append(0)
                formats.append(0)
            case .int64(let n):
                Self.appendDecimal(n, to: &buffer)
                buffer.append(0)
                formats.append(0)
            case .null:
                offsets.append(-1)
                lengths.append(0)
                formats.append(0)
                continue
            }
            offsets.append(at)
            lengths.append(Int32(buffer.count - at))
        }
        // An empty bytea still needs a non-NULL pointer: the buffer is never empty.
        buffer.append(0)
        let sent: Int32 = buffer.withUnsafeBufferPointer { bytes in
            let base = UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self)
            let values = offsets.map { $0 < 0 ? nil : base + $0 } as [UnsafePointer<CChar>?]
            if let name {
                return csecitem_PQsendQueryPrepared(conn, name, count, values, lengths, formats, 1)
            }
            return csecitem_PQsendQueryParams(conn, sql, count, nil, values, lengths, formats, 1)
        }
        guard sent == 1 else { throw failure(connectionLost: true) }
        let result = try single(deadline)
        switch csecitem_PQresultStatus(result.handle) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
            return result
        default:
            throw failure(result)
        }
    }

    /// Runs one or more statements without parameters (the simple query protocol),
    /// returning the last result.
    func run(_ sql: String, timeout: Duration) throws(PQFailure) -> PQResult? {
        let deadline = ContinuousClock.now + timeout
        guard csecitem_PQsendQuery(conn, sql) == 1 else { throw failure(connectionLost: true) }
        roundTrips += 1
        var last: PQResult?
        var firstError: PQFailure?
        while let result = try next(deadline) {
            switch csecitem_PQresultStatus(result.handle) {
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
                last = result
            default:
                if firstError == nil { firstError = failure(result) }
            }
        }
        if let firstError { throw firstError }
        return last
    }

    /// `si_` and 16 hex digits of the statement's FNV-1a hash.
    static func statementName(_ sql: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in sql.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        let hex = String(hash, radix: 16)
        return "si_" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// `n` in decimal ASCII, as PostgreSQL reads a text-format `bigint`.
    static func appendDecimal(_ n: Int64, to buffer: inout [UInt8]) {
        if n < 0 { buffer.append(0x2D) }
        var magnitude = n.magnitude
        var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)  // up to 20 digits, reversed
        var count = 0
        withUnsafeMutableBytes(of: &digits) { d in
            repeat {
                d[count] = UInt8(truncatingIfNeeded: magnitude % 10) + 0x30
                magnitude /= 10
                count += 1
            } while magnitude > 0
            for i in stride(from: count - 1, through: 0, by: -1) { buffer.append(d[i]) }
        }
    }

    /// Waits for the one result of a statement (and the end of its results).
    private func single(_ deadline: ContinuousClock.Instant) throws(PQFailure) -> PQResult {
        roundTrips += 1
        guard let first = try next(deadline) else { throw failure(connectionLost: true) }
        while try next(deadline) != nil {}
        return first
    }

    /// The next result, or nil when the statement's results are over; bounded by `deadline`.
    private func next(_ deadline: ContinuousClock.Instant) throws(PQFailure) -> PQResult? {
        let fd = csecitem_PQsocket(conn)
        while true {
            let flushed = csecitem_PQflush(conn)
            if flushed < 0 { throw failure(connectionLost: true) }
            if flushed == 0, csecitem_PQisBusy(conn) == 0 {
                guard let handle = csecitem_PQgetResult(conn) else { return nil }
                return PQResult(handle)
            }
            let remaining = deadline - ContinuousClock.now
            let ms = remaining.wholeMilliseconds
            if ms <= 0 || fd < 0 {
                throw PQFailure(
                    sqlState: nil, message: "no answer from the server within the statement timeout", connectionLost: true)
            }
            let ready = csecitem_pq_wait(fd, flushed == 1 ? 1 : 0, Int32(clamping: min(ms, 1000)))
            if ready < 0 { throw failure(connectionLost: true) }
            if ready == 1, csecitem_PQconsumeInput(conn) == 0 { throw failure(connectionLost: true) }
            if csecitem_PQstatus(conn) != CONNECTION_OK { throw failure(connectionLost: true) }
        }
    }

    private func failure(connectionLost: Bool) -> PQFailure {
        let message = Self.redact(Self.errorMessage(conn), redactions)
        return PQFailure(
            sqlState: nil, message: message.isEmpty ? "the connection to the server was lost" : message,
            connectionLost: connectionLost || csecitem_PQstatus(conn) != CONNECTION_OK)
    }

    private func failure(_ result: PQResult) -> PQFailure {
        let state = result.field(csecitem_pg_diag_sqlstate)
        var message = result.field(csecitem_pg_diag_message_primary) ?? Self.errorMessage(conn)
        if message.isEmpty { message = "the server returned no result" }
        let lost = csecitem_PQstatus(conn) != CONNECTION_OK || state.map { $0.hasPrefix("08") || $0.hasPrefix("57P") } ?? true
        return PQFailure(
            sqlState: state, constraint: result.field(csecitem_pg_diag_constraint_name),
            message: Self.redact(message, redactions), connectionLost: lost)
    }

    static func errorMessage(_ conn: OpaquePointer) -> String {
        guard let m = csecitem_PQerrorMessage(conn) else { return "" }
        return String(cString: m).trimmingCharacters(in: .whitespacesAndNewlines)
            .replacingOccurrences(of: "\n", with: "; ")
    }

    static func redact(_ message: String, _ secrets: [String]) -> String {
        var out = message
        for secret in secrets where !secret.isEmpty { out = out.replacingOccurrences(of: secret, with: "(redacted)") }
        return out
    }
}

/// A `PGresult`, cleared when released. Columns are in binary format.
package final class PQResult {
    let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }

    deinit { csecitem_PQclear(handle) }

    package var rows: Int { Int(csecitem_PQntuples(handle)) }

    /// The number of rows a command touched (`INSERT 0 1` → 1).
    var affected: Int { Int(String(cString: csecitem_PQcmdTuples(handle))) ?? 0 }

    func isNull(_ row: Int, _ column: Int) -> Bool { csecitem_PQgetisnull(handle, Int32(row), Int32(column)) == 1 }

    /// The bytes of a field in place (valid while this result lives), or nil for NULL.
    func bytes(_ row: Int, _ column: Int) -> UnsafeRawBufferPointer? {
        let r = Int32(row)
        let c = Int32(column)
        if csecitem_PQgetisnull(handle, r, c) == 1 { return nil }
        let length = Int(csecitem_PQgetlength(handle, r, c))
        return UnsafeRawBufferPointer(start: csecitem_PQgetvalue(handle, r, c), count: length)
    }

    package func array(_ row: Int, _ column: Int) -> [UInt8]? { bytes(row, column).map { Array($0) } }

    func text(_ row: Int, _ column: Int) -> String? {
        bytes(row, column).map { String(decoding: $0, as: UTF8.self) }
    }

    /// A binary `bigint` (8 bytes, network order).
    package func int64(_ row: Int, _ column: Int) -> Int64? {
        guard let b = bytes(row, column) else { return nil }
        switch b.count {
        case 8: return Int64(bitPattern: b.reduce(0) { $0 << 8 | UInt64($1) })
        case 4: return Int64(Int32(bitPattern: b.reduce(0) { $0 << 8 | UInt32($1) }))
        case 2: return Int64(Int16(bitPattern: b.reduce(0) { $0 << 8 | UInt16($1) }))
        default: return nil
        }
    }

    func field(_ code: Int32) -> String? {
        guard let p = csecitem_PQresultErrorField(handle, code) else { return nil }
        return String(cString: p)
    }
}
