import CSecItemCrypto
import CSecItemLibpq
import Foundation

/// The least a keychain on a PostgreSQL server must do per operation, on libpq
/// directly (issue 24: the baseline does the irreducible SQL and crypto, not our
/// design): names and data hidden from the server, found by keyed hashes.
///
/// One table `items(pk bytea PRIMARY KEY, label bytea, ct bytea)` with an index on
/// `label`; `pk` is an HMAC-SHA256 of the item's class, service, group and account,
/// `label` an HMAC of the label, `ct` an AES-256-GCM box (nonce, ciphertext, tag; the
/// `pk` as associated data) of the data, account and label. Every operation is one
/// prepared statement in autocommit (one round trip, one durable commit for a write),
/// plus its HMAC and at most one seal or one open per row:
/// - lookup: HMAC, `SELECT ct … WHERE pk = $1`, open;
/// - add: HMAC ×2, seal, `INSERT`;
/// - update (the data only): HMAC, seal, `UPDATE … SET ct = $2 WHERE pk = $1`;
/// - delete: HMAC, `DELETE … WHERE pk = $1`;
/// - query by label: HMAC, `SELECT ct, pk … WHERE label = $1`, one open per row.
///
/// What it leaves out, each of which our design pays for: the row-set commitment (a
/// write's `BEGIN`, the state row locked `FOR UPDATE`, its update, `COMMIT`: four more
/// round trips and the fleet-wide serialization), the key epoch, reading an item
/// before changing it (access control and attribute checks), other attributes and
/// their indexed HMACs, retries and reconnection.
final class MinimalPostgreSQLStore: RawStore {
    private let conn: OpaquePointer
    /// The HMAC and AES keys (a benchmark's throwaway keys), for connections sharing the store.
    private var key: [UInt8]
    private let hmac: OpaquePointer
    private let gcm: OpaquePointer
    private let schema: String
    /// Whether this connection made the schema (and drops it when released).
    private let owns: Bool

    /// A store of its own on a new schema; or, with `sharing`, another connection to
    /// that store's schema with the same keys (the scaling group's pool).
    init(schema: String, sharing owner: MinimalPostgreSQLStore? = nil) throws {
        var error = [CChar](repeating: 0, count: 512)
        guard csecitem_libpq_load(&error, error.count) == 1 else {
            throw BenchmarkError("libpq: " + String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        // No parameters: libpq's PG* variables name the server (scripts/with-postgresql).
        var keys: [UnsafePointer<CChar>?] = [nil]
        var values: [UnsafePointer<CChar>?] = [nil]
        guard let c = csecitem_PQconnectdbParams(&keys, &values, 0), csecitem_PQstatus(c) == CONNECTION_OK else {
            throw BenchmarkError("the minimal baseline cannot connect")
        }
        conn = c
        csecitem_PQsetNoticeProcessor(c, { _, _ in }, nil)
        var key = try owner?.key ?? randomBytes(64)
        defer { wipeBytes(&key) }
        guard let h = csecitem_hmac_new(key, 32), let g = csecitem_gcm_new(Array(key[32..<64]), 32) else {
            throw BenchmarkError("crypto contexts")
        }
        (hmac, gcm) = (h, g)
        self.key = key
        self.schema = owner?.schema ?? schema
        owns = owner == nil
        if owns {
            try simple(
                "CREATE SCHEMA \(schema); CREATE TABLE \(schema).items(pk bytea PRIMARY KEY, label bytea NOT NULL, ct bytea NOT NULL); "
                    + "CREATE INDEX ON \(schema).items(label)")
        }
        let schema = self.schema
        try prepare("lookup", "SELECT ct FROM \(schema).items WHERE pk = $1", 1)
        try prepare("insert", "INSERT INTO \(schema).items(pk, label, ct) VALUES ($1, $2, $3)", 3)
        try prepare("update", "UPDATE \(schema).items SET ct = $2 WHERE pk = $1", 2)
        try prepare("delete", "DELETE FROM \(schema).items WHERE pk = $1", 1)
        try prepare("bylabel", "SELECT ct, pk FROM \(schema).items WHERE label = $1", 1)
    }

    deinit {
        if owns { try? simple("DROP SCHEMA \(schema) CASCADE") }
        wipeBytes(&key)
        csecitem_PQfinish(conn)
        csecitem_hmac_free(hmac)
        csecitem_gcm_free(gcm)
    }

    // MARK: libpq

    /// Waits for the results of what was sent; returns the last one (the caller clears it).
    private func results() throws -> OpaquePointer {
        var last: OpaquePointer?
        while let r = csecitem_PQgetResult(conn) {
            if let last { csecitem_PQclear(last) }
            last = r
        }
        guard let last else { throw BenchmarkError("no result: \(String(cString: csecitem_PQerrorMessage(conn)))") }
        let status = csecitem_PQresultStatus(last)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            csecitem_PQclear(last)
            throw BenchmarkError("statement failed: \(String(cString: csecitem_PQerrorMessage(conn)))")
        }
        return last
    }

    private func simple(_ sql: String) throws {
        guard csecitem_PQsendQuery(conn, sql) == 1 else { throw BenchmarkError("send failed") }
        csecitem_PQclear(try results())
    }

    private func prepare(_ name: String, _ sql: String, _ count: Int32) throws {
        guard csecitem_PQsendPrepare(conn, name, sql, count, nil) == 1 else { throw BenchmarkError("prepare failed") }
        csecitem_PQclear(try results())
    }

    /// Runs a prepared statement with binary parameters and binary results.
    private func run(_ name: String, _ parameters: [[UInt8]], _ body: (OpaquePointer) throws -> Int) throws -> Int {
        let pointers = parameters.map { p -> UnsafeMutablePointer<CChar> in
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, p.count))
            p.withUnsafeBytes { raw in
                if let base = raw.baseAddress { UnsafeMutableRawPointer(copy).copyMemory(from: base, byteCount: p.count) }
            }
            return copy
        }
        defer { pointers.forEach { $0.deallocate() } }
        let lengths = parameters.map { Int32($0.count) }
        let formats = [Int32](repeating: 1, count: parameters.count)
        let values: [UnsafePointer<CChar>?] = pointers.map { UnsafePointer($0) }
        guard csecitem_PQsendQueryPrepared(conn, name, Int32(parameters.count), values, lengths, formats, 1) == 1 else {
            throw BenchmarkError("send failed: \(String(cString: csecitem_PQerrorMessage(conn)))")
        }
        let result = try results()
        defer { csecitem_PQclear(result) }
        return try body(result)
    }

    private func affected(_ result: OpaquePointer) -> Int { Int(String(cString: csecitem_PQcmdTuples(result))) ?? 0 }

    // MARK: Crypto

    private func mac(_ parts: String) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let bytes = Array(parts.utf8)
        guard csecitem_hmac_run(hmac, bytes, bytes.count, nil, 0, &out) == 0 else { throw BenchmarkError("HMAC") }
        return out
    }

    private func pk(_ account: String) throws -> [UInt8] { try mac("genp\u{0}bench\u{0}bench\u{0}" + account) }

    private func seal(_ plaintext: [UInt8], _ aad: [UInt8]) throws -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: 12)
        var generator = SystemRandomNumberGenerator()
        for i in 0..<12 { nonce[i] = generator.next() }
        var ct = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: 16)
        guard csecitem_gcm_seal(gcm, nonce, aad, aad.count, plaintext, plaintext.count, &ct, &tag) == 0 else {
            throw BenchmarkError("seal")
        }
        return nonce + ct + tag
    }

    /// Opens one binary `ct` cell; returns the plaintext's length.
    private func open(_ result: OpaquePointer, row: Int32, aad: [UInt8]?) throws -> Int {
        let n = Int(csecitem_PQgetlength(result, row, 0))
        guard n >= 28, let cell = csecitem_PQgetvalue(result, row, 0) else { throw BenchmarkError("short box") }
        let box = UnsafeRawPointer(cell).assumingMemoryBound(to: UInt8.self)
        var plaintext = [UInt8](repeating: 0, count: n - 28)
        // A query by label reads each row's pk (column 1): the box's associated data.
        let associated = aad ?? csecitem_PQgetvalue(result, row, 1).map { p in
            Array(UnsafeBufferPointer(start: UnsafeRawPointer(p).assumingMemoryBound(to: UInt8.self), count: Int(csecitem_PQgetlength(result, row, 1))))
        } ?? []
        guard csecitem_gcm_open(gcm, box, associated, associated.count, box + 12, n - 28, box + n - 16, &plaintext) == 0 else {
            throw BenchmarkError("open")
        }
        return plaintext.count
    }

    private func plaintext(account: String, label: String, data: [UInt8]) -> [UInt8] {
        data + [0] + Array(account.utf8) + [0] + Array(label.utf8)
    }

    // MARK: RawStore

    func add(account: String, label: String, data: [UInt8]) throws {
        let key = try pk(account)
        let box = try seal(plaintext(account: account, label: label, data: data), key)
        _ = try run("insert", [key, try mac("labl\u{0}" + label), box]) { _ in 0 }
    }

    func lookup(account: String) throws -> Int {
        let key = try pk(account)
        return try run("lookup", [key]) { r in csecitem_PQntuples(r) == 0 ? -1 : try open(r, row: 0, aad: key) }
    }

    func update(account: String, data: [UInt8]) throws -> Int {
        let key = try pk(account)
        let box = try seal(plaintext(account: account, label: "", data: data), key)
        return try run("update", [key, box]) { affected($0) }
    }

    func delete(account: String) throws -> Int {
        try run("delete", [try pk(account)]) { affected($0) }
    }

    /// The label's rows, each opened (with its `pk`, the box's associated data).
    func count(label: String) throws -> Int {
        try run("bylabel", [try mac("labl\u{0}" + label)]) { r in
            var n = 0
            for row in 0..<csecitem_PQntuples(r) { n += try open(r, row: row, aad: nil) >= 0 ? 1 : 0 }
            return n
        }
    }

    /// Fills `count` items in one transaction.
    func fill(_ count: Int, _ make: (Int) -> (account: String, label: String, data: [UInt8])) throws {
        try simple("BEGIN")
        for i in 0..<count {
            let (account, label, data) = make(i)
            try add(account: account, label: label, data: data)
        }
        try simple("COMMIT")
    }
}
