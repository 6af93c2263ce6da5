import CSecItemCrypto
import CSecItemLibpq
import Foundation
import Glibc

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
    /// ``Floor``: this store with the work our guarantees add and nothing else.
    private var floor: Floor?

    /// What `libpq-floor` adds to the minimal store: the least a store with our guarantees
    /// (fleet-wide serialized writes under an authenticated row-set commitment, rollback
    /// evidence on this host, a read before a change) must do beyond it, with none of our
    /// code (issue 24: the floor where ≤ 1.2× the minimal store cannot be met).
    /// - Every write moves the state row in the same statement (`WITH s AS (UPDATE state …
    ///   WHERE generation = $old AND mac = $old RETURNING id) <change> … FROM s`): the same
    ///   2,496-byte IBLT cells our state row has, updated per element (one HMAC per element,
    ///   three cells XORed) and sealed (one HMAC over generation, count and cells).
    /// - A write reads this host's mark before (one `pread`) and raises it after the commit
    ///   (`flock`, `pread`, `pwrite` in place, unlock), on descriptors kept open.
    /// - An update or delete reads the row first (one more round trip and, for an update,
    ///   the box opened: the change is made from the old item), as access control needs.
    /// - A read gets the state row's generation and MAC in the same statement (a `LEFT JOIN`).
    struct Floor {
        var generation: Int64 = 0
        var count: Int64 = 0
        var cells = [UInt8](repeating: 0, count: 48 * 52)
        var mac = [UInt8](repeating: 0, count: 32)
        var lastSeen: Int64 = 0
        let markFD: Int32
        let lockFD: Int32
        let directory: String
    }

    /// A store of its own on a new schema; or, with `sharing`, another connection to
    /// that store's schema with the same keys (the scaling group's pool).
    init(schema: String, sharing owner: MinimalPostgreSQLStore? = nil, floor withFloor: Bool = false) throws {
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
        if withFloor, owns {
            try simple(
                "CREATE TABLE \(schema).state(id integer PRIMARY KEY, generation bigint NOT NULL, count bigint NOT NULL, "
                    + "cells bytea NOT NULL, mac bytea NOT NULL); "
                    + "INSERT INTO \(schema).state VALUES (1, 0, 0, decode(repeat('00', 2496), 'hex'), decode(repeat('00', 32), 'hex'))")
            let cas = "WITH s AS (UPDATE \(schema).state SET generation = $4, count = $5, cells = $6, mac = $7 "
                + "WHERE id = 1 AND generation = $8 AND mac = $9 RETURNING id) "
            try prepare("f-insert", cas + "INSERT INTO \(schema).items(pk, label, ct) SELECT $1, $2, $3 FROM s", 9)
            try prepare("f-update", cas + "UPDATE \(schema).items SET ct = $3 FROM s WHERE pk = $1 AND $2::bytea IS NOT NULL", 9)
            try prepare("f-delete", cas + "DELETE FROM \(schema).items USING s WHERE pk = $1 AND $2::bytea IS NOT NULL AND $3::bytea IS NOT NULL", 9)
            try prepare(
                "f-lookup", "SELECT i.ct, st.generation, st.mac FROM \(schema).state st LEFT JOIN \(schema).items i ON i.pk = $1 WHERE st.id = 1", 1)
            try prepare(
                "f-bylabel",
                "SELECT i.ct, i.pk, st.generation, st.mac FROM \(schema).state st LEFT JOIN \(schema).items i ON i.label = $1 WHERE st.id = 1", 1)
            let directory = NSTemporaryDirectory() + "/secitem-floor-\(schema)"
            mkdir(directory, 0o700)
            let markFD = Glibc.open(directory + "/m.mark", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            let lockFD = Glibc.open(directory + "/m.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard markFD >= 0, lockFD >= 0 else { throw BenchmarkError("the floor's mark files") }
            floor = Floor(markFD: markFD, lockFD: lockFD, directory: directory)
        }
    }

    deinit {
        if owns { try? simple("DROP SCHEMA \(schema) CASCADE") }
        if let floor {
            close(floor.markFD)
            close(floor.lockFD)
            try? FileManager.default.removeItem(atPath: floor.directory)
        }
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
        if floor != nil { return try floorAdd(account: account, label: label, data: data) }
        let key = try pk(account)
        let box = try seal(plaintext(account: account, label: label, data: data), key)
        _ = try run("insert", [key, try mac("labl\u{0}" + label), box]) { _ in 0 }
    }

    func lookup(account: String) throws -> Int {
        if floor != nil { return try floorLookup(account: account) }
        let key = try pk(account)
        return try run("lookup", [key]) { r in csecitem_PQntuples(r) == 0 ? -1 : try open(r, row: 0, aad: key) }
    }

    func update(account: String, data: [UInt8]) throws -> Int {
        if floor != nil { return try floorUpdate(account: account, data: data) }
        let key = try pk(account)
        let box = try seal(plaintext(account: account, label: "", data: data), key)
        return try run("update", [key, box]) { affected($0) }
    }

    func delete(account: String) throws -> Int {
        if floor != nil { return try floorDelete(account: account) }
        return try run("delete", [try pk(account)]) { affected($0) }
    }

    /// The label's rows, each opened (with its `pk`, the box's associated data).
    func count(label: String) throws -> Int {
        if floor != nil {
            return try run("f-bylabel", [try mac("labl\u{0}" + label)]) { r in
                try observe(r, generationColumn: 2)
                var n = 0
                for row in 0..<csecitem_PQntuples(r) where csecitem_PQgetisnull(r, row, 0) == 0 {
                    n += try open(r, row: row, aad: nil) >= 0 ? 1 : 0
                }
                return n
            }
        }
        return try run("bylabel", [try mac("labl\u{0}" + label)]) { r in
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


// MARK: The floor (see ``MinimalPostgreSQLStore/Floor``)

extension MinimalPostgreSQLStore {
    /// A read's rollback check: the state row's generation against the last one seen (no I/O
    /// unless it moved, and then the mark is read once).
    fileprivate func observe(_ r: OpaquePointer, generationColumn: Int32) throws {
        guard var f = floor, csecitem_PQntuples(r) >= 1 else { throw BenchmarkError("the floor's state row is missing") }
        let generation = Self.int64(r, 0, generationColumn)
        if generation != f.lastSeen {
            guard generation >= f.lastSeen else { throw BenchmarkError("rolled back") }
            _ = try readMark(f)
            f.lastSeen = generation
            floor = f
        }
    }

    fileprivate static func int64(_ r: OpaquePointer, _ row: Int32, _ column: Int32) -> Int64 {
        guard csecitem_PQgetlength(r, row, column) == 8, let p = csecitem_PQgetvalue(r, row, column) else { return -1 }
        let b = UnsafeRawPointer(p).assumingMemoryBound(to: UInt8.self)
        return (0..<8).reduce(Int64(0)) { $0 << 8 | Int64(b[$1]) }
    }

    fileprivate static func bigEndian(_ n: Int64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: n >> (56 - 8 * $0)) } }

    fileprivate func readMark(_ f: Floor) throws -> Int {
        var buffer = [UInt8](repeating: 0, count: 512)
        return buffer.withUnsafeMutableBytes { pread(f.markFD, $0.baseAddress, $0.count, 0) }
    }

    /// One element in or out of the cells: its HMAC, three cells XORed.
    fileprivate func toggle(_ f: inout Floor, uuidAndVersionAndTag element: [UInt8]) throws {
        var hash = [UInt8](repeating: 0, count: 32)
        guard csecitem_hmac_run(hmac, element, element.count, nil, 0, &hash) == 0 else { throw BenchmarkError("HMAC") }
        for s in 0..<3 {
            let base = (s * 16 + (Int(hash[8 + 2 * s]) << 8 | Int(hash[9 + 2 * s])) % 16) * 52
            for i in 0..<40 { f.cells[base + 4 + i] ^= element[i] }
            for i in 0..<8 { f.cells[base + 44 + i] ^= hash[i] }
        }
    }

    /// Runs a CAS statement moving the state row from `f` to `next` (sealed here), then raises the mark.
    fileprivate func commit(_ name: String, _ parameters: [[UInt8]], from f: Floor, to next: Floor) throws -> Int {
        _ = try readMark(f)  // the write is checked against this host's mark before it runs
        var sealed = next
        sealed.generation = f.generation + 1
        var mac = [UInt8](repeating: 0, count: 32)
        let header = Self.bigEndian(sealed.generation) + Self.bigEndian(sealed.count)
        guard csecitem_hmac_run(hmac, header, header.count, sealed.cells, sealed.cells.count, &mac) == 0 else { throw BenchmarkError("HMAC") }
        sealed.mac = mac
        let state = [Self.bigEndian(sealed.generation), Self.bigEndian(sealed.count), sealed.cells, sealed.mac, Self.bigEndian(f.generation), f.mac]
        let changed = try run(name, parameters + state) { affected($0) }
        guard changed >= 0 else { throw BenchmarkError("the floor's statement") }
        // Raised after the commit, in place, under the lock.
        var line = Array("secitem-high-water-mark 1\ngeneration \(sealed.generation)\n".utf8)
        line += [UInt8](repeating: 0x20, count: max(0, 330 - line.count))
        flock(f.lockFD, LOCK_EX)
        _ = try readMark(f)
        _ = line.withUnsafeBytes { pwrite(f.markFD, $0.baseAddress, $0.count, 0) }
        flock(f.lockFD, LOCK_UN)
        sealed.lastSeen = sealed.generation
        floor = sealed
        return changed
    }

    fileprivate func element(_ key: [UInt8], _ box: ArraySlice<UInt8>, version: Int64) -> [UInt8] {
        Array(key.prefix(16)) + Self.bigEndian(version) + Array(box.suffix(16))
    }

    func floorAdd(account: String, label: String, data: [UInt8]) throws {
        guard let f = floor else { return }
        let key = try pk(account)
        let box = try seal(plaintext(account: account, label: label, data: data), key)
        var next = f
        try toggle(&next, uuidAndVersionAndTag: element(key, box[...], version: f.generation + 1))
        next.count += 1
        guard try commit("f-insert", [key, try mac("labl\u{0}" + label), box], from: f, to: next) == 1 else {
            throw BenchmarkError("the floor's add changed nothing")
        }
    }

    /// The row's plaintext length (-1 when absent), with the state checked.
    func floorLookup(account: String) throws -> Int {
        let key = try pk(account)
        return try run("f-lookup", [key]) { r in
            try observe(r, generationColumn: 1)
            return csecitem_PQgetisnull(r, 0, 0) == 1 ? -1 : try open(r, row: 0, aad: key)
        }
    }

    func floorUpdate(account: String, data: [UInt8]) throws -> Int {
        // The read that finds the row and opens it (the change is made from the old item).
        guard try floorLookup(account: account) >= 0, let f = floor else { return 0 }
        let key = try pk(account)
        let box = try seal(plaintext(account: account, label: "", data: data), key)
        var next = f
        // The old element out (its version and tag: here the previous generation's), the new one in.
        try toggle(&next, uuidAndVersionAndTag: element(key, box[...], version: f.generation))
        try toggle(&next, uuidAndVersionAndTag: element(key, box[...], version: f.generation + 1))
        return try commit("f-update", [key, [], box], from: f, to: next)
    }

    func floorDelete(account: String) throws -> Int {
        guard try floorLookup(account: account) >= 0, let f = floor else { return 0 }
        let key = try pk(account)
        var next = f
        try toggle(&next, uuidAndVersionAndTag: element(key, key[...], version: f.generation))
        next.count -= 1
        return try commit("f-delete", [key, [], []], from: f, to: next)
    }
}
