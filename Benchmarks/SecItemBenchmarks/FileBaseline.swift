import CSecItemCrypto
import CSecItemSQLite3
import Glibc
import Foundation
import SecItemSealedStore
import SecItemSQLite

/// The file format's work done directly on sqlite3 and libcrypto, without any
/// SecItem layer: the same design as the backend (format 2), measuring what the
/// Swift layers cost on top of it.
///
/// Same schema, same pragmas (WAL, `synchronous=FULL`, `secure_delete`,
/// `journal_size_limit=0`), writes in `BEGIN IMMEDIATE` with the data-version check
/// (`SQLITE_FCNTL_DATA_VERSION`), the WAL emptied after an update or delete,
/// the row-set commitment updated in each write (three cells per element, an HMAC
/// over the state, one UPDATE of the state row), reads without BEGIN followed by
/// the data-version check, the same reused HMAC and AES-256-GCM contexts, the
/// same sealed-box encoding and associated data (every column bound: one GCM open
/// per row read, no HMAC; a miss is one HMAC and one SELECT). What it leaves
/// out is exactly the SecItem layers: dictionary parsing, `StoredItem`, the query
/// planner, result shaping. Statements are prepared once; buffers are reused; no
/// Foundation type is touched on the hot path.
final class RawFileKeychain: RawStore {
    private var db: OpaquePointer?
    private let hmac: OpaquePointer
    private let gcm: OpaquePointer
    private var statements: [OpaquePointer] = []
    private let beginImmediate, commit, selectByPK, selectByLabel: OpaquePointer
    private let insert, update, delete, writeState: OpaquePointer
    /// Scratch buffers: HMAC messages, plaintexts, associated data.
    private var message = [UInt8](repeating: 0, count: 512)
    private var plain = [UInt8](repeating: 0, count: 1024)
    private var knownDataVersion: Int64 = 0
    /// The commitment: generation, count, 48 cells of 52 bytes.
    private var generation: Int64 = 1
    private var rowCount: Int64 = 0
    private var cells = [UInt8](repeating: 0, count: 48 * 52)

    static let columns = "seq, uuid, class, pk, h_svce, h_acct, h_srvr, h_labl, h_agrp, h_sync, version, ct"

    /// Creates the database file at `path` (which must not exist) with random keys.
    init(path: String) throws {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
            == SQLITE_OK, let handle
        else { throw BenchmarkError("cannot create \(path)") }
        db = handle
        func exec(_ sql: String) throws {
            guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else {
                throw BenchmarkError("sqlite: \(String(cString: sqlite3_errmsg(handle))) in \(sql.prefix(40))")
            }
        }
        try exec("PRAGMA journal_mode=WAL")
        try exec("PRAGMA synchronous=FULL")
        try exec("PRAGMA secure_delete=ON")
        try exec("PRAGMA journal_size_limit=0")
        try exec("PRAGMA application_id=1397048649")
        try exec(SQLiteBackend.schemaSQL)
        try exec("INSERT INTO meta VALUES ('epoch', 1)")
        var keys = try BaselineConnection.randomKeys()
        defer { csecitem_cleanse(&keys, 64) }
        (hmac, gcm) = try BaselineConnection.contexts(keys: keys)
        func prepare(_ sql: String) throws -> OpaquePointer { try BaselineConnection.prepare(handle, sql) }
        beginImmediate = try prepare("BEGIN IMMEDIATE")
        commit = try prepare("COMMIT")
        selectByPK = try prepare("SELECT \(Self.columns) FROM sealed_items WHERE pk = ?")
        selectByLabel = try prepare(
            "SELECT \(Self.columns) FROM sealed_items WHERE class = 'genp' AND h_agrp = ? AND h_sync = ? AND h_svce = ? "
                + "AND h_labl = ? ORDER BY seq")
        insert = try prepare(
            "INSERT INTO sealed_items(uuid, class, pk, h_svce, h_acct, h_srvr, h_labl, h_agrp, h_sync, version, ct) "
                + "VALUES (?, 'genp', ?, ?, ?, NULL, ?, ?, ?, ?, ?)")
        update = try prepare(
            "UPDATE sealed_items SET uuid = ?, class = 'genp', pk = ?, h_svce = ?, h_acct = ?, h_srvr = NULL, h_labl = ?, "
                + "h_agrp = ?, h_sync = ?, version = ?, ct = ? WHERE seq = ?")
        delete = try prepare("DELETE FROM sealed_items WHERE seq = ?")
        writeState = try prepare("INSERT OR REPLACE INTO state(id, generation, count, cells, mac) VALUES (1, ?, ?, ?, ?)")
        statements = [beginImmediate, commit, selectByPK, selectByLabel, insert, update, delete,
                      writeState]
        try step(beginImmediate)
        try saveState()
        try step(commit)
        knownDataVersion = try readDataVersion()
    }

    deinit {
        for s in statements { sqlite3_finalize(s) }
        sqlite3_close_v2(db)
        csecitem_hmac_free(hmac)
        csecitem_gcm_free(gcm)
        floorMessage.deallocate()
        floorAAD.deallocate()
        floorKnown.deallocate()
    }

    // MARK: Operations

    /// Adds item `account` (label, data) in its own durable transaction.
    /// `joiningOpenTransaction`: inside ``bulk(_:)`` (populating), no transaction of its own.
    func add(account: String, label: String, data: [UInt8], joiningOpenTransaction: Bool = false) throws {
        var uuid = [UInt8](repeating: 0, count: 16)
        _ = csecitem_random_bytes(&uuid, 16)
        let now = Date.timeIntervalSinceReferenceDate
        if joiningOpenTransaction {
            let row = try encode(uuid: uuid, account: account, label: label, created: now, modified: now, data: data)
            try write(insert, row, seq: nil)
            try commitRow(added: row, removed: nil)
        } else {
            try transaction {
                let row = try self.encode(uuid: uuid, account: account, label: label, created: now, modified: now, data: data)
                try self.write(self.insert, row, seq: nil)
                try self.commitRow(added: row, removed: nil)
            }
        }
    }

    /// Runs `body` in one write transaction (populating).
    func bulk(_ body: () throws -> Void) throws {
        try step(beginImmediate)
        try body()
        try step(commit)
        knownDataVersion = try readDataVersion()
    }

    /// Looks up service+account and returns the data's length, or -1 when missing.
    func lookup(account: String) throws -> Int {
        let result = try lookupOnce(account: account)
        guard try readDataVersion() == knownDataVersion else { throw BenchmarkError("another process wrote") }
        return result
    }

    /// One HMAC, one SELECT, one GCM open (a miss: one HMAC, one SELECT).
    private func lookupOnce(account: String) throws -> Int {
        let pk = try primaryKeyMAC(account: account)
        if let found = try findByPrimaryKey(pk) { return found.data.count }
        return -1
    }

    /// Replaces the data of service+account; returns the number of rows changed.
    /// Then, as the backend does after any write that replaced or deleted a row,
    /// `wal_checkpoint(TRUNCATE)`: the WAL still holds the page as it was before
    /// (docs/file-format.md, "The WAL does not keep what was deleted"), a guarantee
    /// of the format, so its two more syncs are part of this floor.
    func update(account: String, data: [UInt8]) throws -> Int {
        let changed = try transaction {
            let pk = try self.primaryKeyMAC(account: account)
            guard let found = try self.findByPrimaryKey(pk) else { return 0 }
            let row = try self.encode(
                uuid: found.uuid, account: account, label: found.label, created: found.created,
                modified: max(Date.timeIntervalSinceReferenceDate, found.modified + 0.001), data: data)
            try self.write(self.update, row, seq: found.seq)
            try self.commitRow(added: row, removed: found.element)
            return 1
        }
        if changed > 0 { purgeWAL() }
        return changed
    }

    /// Deletes service+account; returns the number of rows deleted; then empties the
    /// WAL as ``update(account:data:)`` does.
    func delete(account: String) throws -> Int {
        let changed = try transaction {
            let pk = try self.primaryKeyMAC(account: account)
            guard let found = try self.findByPrimaryKey(pk) else { return 0 }
            sqlite3_bind_int64(self.delete, 1, found.seq)
            defer { sqlite3_reset(self.delete) }
            try self.step(self.delete, reset: false)
            try self.commitRow(added: nil, removed: found.element)
            return 1
        }
        if changed > 0 { purgeWAL() }
        return changed
    }

    /// The backend's step after a commit that replaced or deleted a row: the pages go
    /// into the main file (zeroed there by `secure_delete`), the WAL is cut to nothing.
    private func purgeWAL() {
        sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_TRUNCATE, nil, nil)
    }

    /// The attributes of every item with `label`, as the minimum a caller needs.
    func query(label: String) throws -> [Attributes] {
        let agrp = try mac("agrp", Array("bench".utf8))
        let sync = try mac("sync", [0])
        let svce = try mac("svce", Self.tagged(0x62, Workload.service))
        let labl = try mac("labl", Self.tagged(0x62, label))
        let s = selectByLabel
        defer { sqlite3_reset(s) }
        bind(s, 1, agrp)
        bind(s, 2, sync)
        bind(s, 3, svce)
        bind(s, 4, labl)
        var out: [Attributes] = []
        while try stepRow(s) {
            if let found = try openRow(s) { out.append(found.attributes) }
        }
        sqlite3_reset(s)
        guard try readDataVersion() == knownDataVersion else { throw BenchmarkError("another process wrote") }
        return out
    }

    // MARK: The floor of a lookup returning the data alone

    /// `SELECT` of the backend's data-alone lookup: the key's class, access group and
    /// sync state compared inside it, the other columns the box binds returned.
    private lazy var selectData: OpaquePointer? = {
        let stmt = try? BaselineConnection.prepare(
            db!, "SELECT seq, uuid, class = ?2 AND h_agrp = ?3 AND h_sync = ?4, h_svce, h_acct, h_srvr, h_labl, version, ct "
                + "FROM sealed_items WHERE pk = ?1")
        if let stmt { statements.append(stmt) }
        return stmt
    }()
    /// The primary-key HMAC's message (its fixed start, then the key's bytes), the
    /// associated data, the known columns (pk, access group, sync state): reused buffers.
    private let floorMessage = UnsafeMutablePointer<UInt8>.allocate(capacity: 512)
    private let floorAAD = UnsafeMutablePointer<UInt8>.allocate(capacity: 512)
    private let floorKnown = UnsafeMutablePointer<UInt8>.allocate(capacity: 96)
    private lazy var floorKnownReady: Bool = {
        guard groupMAC.count == 32, syncMAC.count == 32 else { return false }
        floorKnown.advanced(by: 32).update(from: groupMAC, count: 32)
        floorKnown.advanced(by: 64).update(from: syncMAC, count: 32)
        return true
    }()
    private static let floorKeyPrefix = [0x76, 0x32, 0, 0] + Array("primary-key".utf8) + [0] + Array("genpacct".utf8)
    private static let floorKeySuffix = Array(RawFileKeychain.primaryKeyBytes(account: "").dropFirst(13))

    /// The backend's lookup returning the data alone (its `dataByPrimaryKey`), and nothing
    /// else: the irreducible work of this format per lookup, measured against the minimal
    /// design's (`--filter profile/file --op floor`). One HMAC of the key's bytes written in
    /// a reused buffer; the SELECT above (pk, access group and sync HMACs bound in place);
    /// the associated data written in a reused buffer from the known columns and the
    /// returned ones; one GCM open; the walk over the plaintext's entries to the data, each
    /// entry's lengths and tag checked and the protection class (`pdmn`) found, as the
    /// access check needs it; the data copied out as the `Data` an app gets; the data
    /// version read afterwards (another process may have committed). A miss: the HMAC, the
    /// SELECT and the data version. Returns the data's length, -1 for a miss.
    func lookupData(account: String) throws -> Int {
        guard let stmt = selectData, floorKnownReady else { throw BenchmarkError("the floor's statement") }
        // The key: the HMAC's fixed start, "genp" "acct" length 0x62 account, the fixed rest.
        var n = 0
        func put(_ bytes: UnsafeRawBufferPointer) {
            UnsafeMutableRawPointer(floorMessage + n).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
            n += bytes.count
        }
        Self.floorKeyPrefix.withUnsafeBytes(put)
        let length = UInt32(account.utf8.count + 1)
        for shift in [24, 16, 8, 0] as [UInt32] {
            floorMessage[n] = UInt8(truncatingIfNeeded: length >> shift)
            n += 1
        }
        floorMessage[n] = 0x62
        n += 1
        var account = account
        account.withUTF8 { put(UnsafeRawBufferPointer($0)) }
        Self.floorKeySuffix.withUnsafeBytes(put)
        guard csecitem_hmac_run(hmac, floorMessage, n, nil, 0, floorKnown) == 0 else { throw BenchmarkError("HMAC") }
        defer { sqlite3_reset(stmt) }
        sqlite3_bind_blob(stmt, 1, floorKnown, 32, nil)
        sqlite3_bind_text(stmt, 2, "genp", 4, csecitem_sqlite_transient())
        sqlite3_bind_blob(stmt, 3, floorKnown + 32, 32, nil)
        sqlite3_bind_blob(stmt, 4, floorKnown + 64, 32, nil)
        guard try stepRow(stmt) else {
            guard try readDataVersion() == knownDataVersion else { throw BenchmarkError("another process wrote") }
            return -1
        }
        let version = sqlite3_column_int64(stmt, 7)
        guard sqlite3_column_int64(stmt, 2) == 1, version <= generation,
            let uuid = sqlite3_column_blob(stmt, 1), sqlite3_column_bytes(stmt, 1) == 16,
            let box = sqlite3_column_blob(stmt, 8)
        else { throw BenchmarkError("a damaged row") }
        let boxLength = Int(sqlite3_column_bytes(stmt, 8))
        guard boxLength >= 28 else { throw BenchmarkError("a damaged row") }
        // The associated data: prefix, format, uuid, class, pk, each HMAC column, version.
        var a = 0
        func aad(_ pointer: UnsafeRawPointer, _ count: Int) {
            UnsafeMutableRawPointer(floorAAD + a).copyMemory(from: pointer, byteCount: count)
            a += count
        }
        func aad(_ byte: UInt8) {
            floorAAD[a] = byte
            a += 1
        }
        RowCodec.associatedDataPrefix.withUnsafeBytes { aad($0.baseAddress!, $0.count) }
        aad(2)
        aad(uuid, 16)
        aad(4)
        aad("genp", 4)
        aad(floorKnown, 32)
        for column in Int32(3)...6 {
            if let bytes = sqlite3_column_blob(stmt, column) {
                let count = Int(sqlite3_column_bytes(stmt, column))
                aad(1)
                aad(UInt8(truncatingIfNeeded: count))
                aad(bytes, count)
            } else {
                aad(0)
            }
        }
        for known in [floorKnown + 32, floorKnown + 64] {
            aad(1)
            aad(32)
            aad(known, 32)
        }
        for shift in stride(from: 56, through: 0, by: -8) { aad(UInt8(truncatingIfNeeded: UInt64(bitPattern: version) >> UInt64(shift))) }
        let count = boxLength - 28
        if plain.count < count { plain = [UInt8](repeating: 0, count: count) }
        let c = box.assumingMemoryBound(to: UInt8.self)
        let data: Data? = plain.withUnsafeMutableBufferPointer { out in
            let p = out.baseAddress!
            defer { csecitem_cleanse(p, count) }
            guard csecitem_gcm_open(gcm, c, floorAAD, a, c + 12, count, c + 12 + count, p) == 0 else { return nil }
            return Self.walkToData(p, count)
        }
        guard let data else { throw BenchmarkError("a damaged row") }
        guard try readDataVersion() == knownDataVersion else { throw BenchmarkError("another process wrote") }
        return data.count
    }

    /// The data at the end of a plaintext, each entry before it checked (lengths within
    /// the bytes, a known tag) and the protection class (`pdmn`) found; `nil` when malformed.
    private static func walkToData(_ p: UnsafeMutablePointer<UInt8>, _ n: Int) -> Data? {
        func u32(_ at: Int) -> Int { Int(p[at]) << 24 | Int(p[at + 1]) << 16 | Int(p[at + 2]) << 8 | Int(p[at + 3]) }
        guard n >= 5, p[0] == 1 else { return nil }
        var remaining = u32(1)
        var i = 5
        var protection = -1
        while remaining > 0 {
            remaining -= 1
            guard n - i >= 4 else { return nil }
            let nameLength = u32(i)
            guard nameLength <= n - i - 9 else { return nil }
            let tag = i + 4 + nameLength
            let valueLength = u32(tag + 1)
            guard p[tag] == 0x73 || p[tag] == 0x62 || p[tag] == 0x6E || p[tag] == 0x64, valueLength <= n - tag - 5 else {
                return nil
            }
            if nameLength == 4 && u32(i + 4) == 0x7064_6D6E { protection = tag }  // pdmn
            i = tag + 5 + valueLength
        }
        guard protection > 0, n - i >= 5, p[i] == 1 else { return nil }
        let length = u32(i + 1)
        guard length == n - i - 5 else { return nil }
        return Data(bytes: p + i + 5, count: length)
    }

    // MARK: Pieces

    struct Attributes {
        var account: String
        var service: String
        var label: String
        var group: String
        var accessible: String
        var created: Double
        var modified: Double
        var synchronizable: Int64
    }

    struct Found {
        var seq: Int64
        var uuid: [UInt8]
        var attributes: Attributes
        var data: [UInt8]
        /// uuid ‖ version ‖ tag: the row as the commitment counts it.
        var element: [UInt8]
        var label: String { attributes.label }
        var created: Double { attributes.created }
        var modified: Double { attributes.modified }
    }

    struct Row {
        var uuid: [UInt8]
        var pk: [UInt8]
        var svce, acct, labl, agrp, sync: [UInt8]
        var version: Int64
        var box: [UInt8]
        var element: [UInt8] { uuid + RawFileKeychain.be64(UInt64(bitPattern: version)) + Array(box.suffix(16)) }
    }

    /// SQLITE_FCNTL_DATA_VERSION, as the backend reads it.
    private func readDataVersion() throws -> Int64 {
        var version: UInt32 = 0
        guard sqlite3_file_control(db, "main", SQLITE_FCNTL_DATA_VERSION, &version) == SQLITE_OK else {
            throw BenchmarkError("data version")
        }
        return Int64(version)
    }

    private func transaction<R>(_ body: () throws -> R) throws -> R {
        try step(beginImmediate)
        do {
            guard try readDataVersion() == knownDataVersion else { throw BenchmarkError("another process wrote") }
            let r = try body()
            try step(commit)
            knownDataVersion = try readDataVersion()
            return r
        } catch {
            sqlite3_exec(db, "ROLLBACK", nil, nil, nil)
            throw error
        }
    }

    /// The commitment's update for one write: three cells per element, then the state row.
    private func commitRow(added: Row?, removed: [UInt8]?) throws {
        if let removed { try apply(removed, sign: -1) }
        if let added { try apply(added.element, sign: 1) }
        rowCount += (added == nil ? 0 : 1) - (removed == nil ? 0 : 1)
        generation += 1
        try saveState()
    }

    private func apply(_ key: [UInt8], sign: Int32) throws {
        let domain = Array("secitem-file/2 row".utf8)
        var h = [UInt8](repeating: 0, count: 32)
        guard csecitem_hmac_run(hmac, domain, domain.count, key, key.count, &h) == 0 else { throw BenchmarkError("HMAC") }
        for s in 0..<3 {
            let base = (s * 16 + (Int(h[8 + 2 * s]) << 8 | Int(h[9 + 2 * s])) % 16) * 52
            var n = Int32(bitPattern: UInt32(cells[base]) << 24 | UInt32(cells[base + 1]) << 16
                | UInt32(cells[base + 2]) << 8 | UInt32(cells[base + 3]))
            n &+= sign
            let u = UInt32(bitPattern: n)
            cells[base] = UInt8(u >> 24); cells[base + 1] = UInt8((u >> 16) & 0xFF)
            cells[base + 2] = UInt8((u >> 8) & 0xFF); cells[base + 3] = UInt8(u & 0xFF)
            for i in 0..<40 { cells[base + 4 + i] ^= key[i] }
            for i in 0..<8 { cells[base + 44 + i] ^= h[i] }
        }
    }

    private func saveState() throws {
        var m = Array("secitem-file/2 state".utf8) + Self.be64(UInt64(bitPattern: generation))
            + Self.be64(UInt64(bitPattern: rowCount))
        m += cells
        var tag = [UInt8](repeating: 0, count: 32)
        guard csecitem_hmac_run(hmac, m, m.count, nil, 0, &tag) == 0 else { throw BenchmarkError("HMAC") }
        sqlite3_bind_int64(writeState, 1, generation)
        sqlite3_bind_int64(writeState, 2, rowCount)
        bind(writeState, 3, cells)
        bind(writeState, 4, tag)
        try step(writeState)
    }

    private func findByPrimaryKey(_ pk: [UInt8]) throws -> Found? {
        defer { sqlite3_reset(selectByPK) }
        bind(selectByPK, 1, pk)
        guard try stepRow(selectByPK) else { return nil }
        guard let found = try openRow(selectByPK) else { throw BenchmarkError("a damaged row") }
        return found
    }

    /// Opens the current row of `stmt`: every column is in the associated data, so one GCM open.
    private func openRow(_ stmt: OpaquePointer) throws -> Found? {
        let seq = sqlite3_column_int64(stmt, 0)
        let uuid = column(stmt, 1)
        let version = sqlite3_column_int64(stmt, 10)
        let ct = column(stmt, 11)
        guard uuid.count == 16, ct.count >= 28, version <= generation else { return nil }
        var aad = Array("secitem-file".utf8) + [2] + uuid + [4] + Array("genp".utf8) + column(stmt, 3)
        for c in Int32(4)...9 {
            if sqlite3_column_type(stmt, c) == SQLITE_NULL {
                aad.append(0)
            } else {
                let v = column(stmt, c)
                aad += [1, UInt8(v.count)] + v
            }
        }
        aad += Self.be64(UInt64(bitPattern: version))
        let n = ct.count - 28
        if plain.count < n { plain = [UInt8](repeating: 0, count: n) }
        let rc = ct.withUnsafeBufferPointer { c in
            plain.withUnsafeMutableBufferPointer { p in
                csecitem_gcm_open(gcm, c.baseAddress!, aad, aad.count, c.baseAddress! + 12, n, c.baseAddress! + 12 + n, p.baseAddress)
            }
        }
        guard rc == 0 else { return nil }
        defer { plain.withUnsafeMutableBytes { csecitem_cleanse($0.baseAddress, n) } }
        guard let (attributes, data) = Self.decode(plain, n) else { return nil }
        return Found(seq: seq, uuid: uuid, attributes: attributes, data: data,
                     element: uuid + Self.be64(UInt64(bitPattern: version)) + Array(ct.suffix(16)))
    }

    private func encode(uuid: [UInt8], account: String, label: String, created: Double, modified: Double, data: [UInt8])
        throws -> Row
    {
        var p = Self.plaintext(account: account, label: label, created: created, modified: modified, data: data)
        defer { p.withUnsafeMutableBytes { csecitem_cleanse($0.baseAddress, $0.count) } }
        let version = generation + 1
        let pk = try primaryKeyMAC(account: account)
        let svce = try mac("svce", Self.tagged(0x62, Workload.service))
        let acct = try mac("acct", Self.tagged(0x62, account))
        let labl = try mac("labl", Self.tagged(0x62, label))
        let agrp = try mac("agrp", Array("bench".utf8))
        let sync = try mac("sync", [0])
        var aad = Array("secitem-file".utf8) + [2] + uuid + [4] + Array("genp".utf8) + pk
        aad += [1, 32] + svce + [1, 32] + acct + [0] + [1, 32] + labl + [1, 32] + agrp + [1, 32] + sync
        aad += Self.be64(UInt64(bitPattern: version))
        var box = [UInt8](repeating: 0, count: 12 + p.count + 16)
        let n = p.count
        let rc = box.withUnsafeMutableBufferPointer { b in
            let base = b.baseAddress!
            guard csecitem_random_bytes(base, 12) == 0 else { return Int32(-1) }
            return csecitem_gcm_seal(gcm, base, aad, aad.count, p, n, base + 12, base + 12 + n)
        }
        guard rc == 0 else { throw BenchmarkError("AES-GCM seal failed") }
        return Row(uuid: uuid, pk: pk, svce: svce, acct: acct, labl: labl, agrp: agrp, sync: sync, version: version, box: box)
    }

    /// The plaintext: version, count, sorted attributes, then the data.
    static func plaintext(account: String, label: String, created: Double, modified: Double, data: [UInt8]) -> [UInt8] {
        var p: [UInt8] = [1]
        p.reserveCapacity(256)
        u32(&p, 8)
        attribute(&p, "acct", 0x73, Array(account.utf8))
        attribute(&p, "agrp", 0x73, Array("bench".utf8))
        attribute(&p, "cdat", 0x64, be64(created.bitPattern))
        attribute(&p, "labl", 0x73, Array(label.utf8))
        attribute(&p, "mdat", 0x64, be64(modified.bitPattern))
        attribute(&p, "pdmn", 0x73, Array("ak".utf8))
        attribute(&p, "svce", 0x73, Array(Workload.service.utf8))
        attribute(&p, "sync", 0x6E, be64(0))
        p.append(1)
        u32(&p, UInt32(data.count))
        p += data
        return p
    }

    private func write(_ stmt: OpaquePointer, _ row: Row, seq: Int64?) throws {
        defer { sqlite3_reset(stmt) }
        bind(stmt, 1, row.uuid)
        bind(stmt, 2, row.pk)
        bind(stmt, 3, row.svce)
        bind(stmt, 4, row.acct)
        bind(stmt, 5, row.labl)
        bind(stmt, 6, row.agrp)
        bind(stmt, 7, row.sync)
        sqlite3_bind_int64(stmt, 8, row.version)
        bind(stmt, 9, row.box)
        if let seq { sqlite3_bind_int64(stmt, 10, seq) }
        try step(stmt, reset: false)
    }

    /// The access-group and sync HMACs depend on the key alone: computed once, as the backend memoises them.
    private lazy var groupMAC: [UInt8] = (try? mac("agrp", Array("bench".utf8), memoised: false)) ?? []
    private lazy var syncMAC: [UInt8] = (try? mac("sync", [0], memoised: false)) ?? []

    /// HMAC-SHA256("v2" 0 "genp" 0 name 0 value), as the format defines, with the reused context.
    private func mac(_ name: String, _ value: [UInt8], itemClass: String = "genp", memoised: Bool = true) throws -> [UInt8] {
        if memoised && name == "agrp" && value == Array("bench".utf8) { return groupMAC }
        if memoised && name == "sync" && value == [0] { return syncMAC }
        message.removeAll(keepingCapacity: true)
        message += [0x76, 0x32, 0]
        message += itemClass.utf8
        message.append(0)
        message += name.utf8
        message.append(0)
        message += value
        var out = [UInt8](repeating: 0, count: 32)
        let rc = message.withUnsafeBufferPointer { m in
            out.withUnsafeMutableBufferPointer { csecitem_hmac_run(hmac, m.baseAddress, m.count, nil, 0, $0.baseAddress) }
        }
        guard rc == 0 else { throw BenchmarkError("HMAC failed") }
        return out
    }

    /// The HMAC of the primary key: class, then acct, agrp, svce, sync each with a length.
    private func primaryKeyMAC(account: String) throws -> [UInt8] {
        try mac("primary-key", Self.primaryKeyBytes(account: account), itemClass: "")
    }

    static func primaryKeyBytes(account: String) -> [UInt8] {
        var key = Array("genp".utf8)
        func part(_ name: String, _ value: [UInt8]) {
            key += name.utf8
            u32(&key, UInt32(value.count))
            key += value
        }
        part("acct", tagged(0x62, account))
        part("svce", tagged(0x62, Workload.service))
        part("agrp", tagged(0x73, "bench"))
        part("sync", [0x6E, 0x30])
        return key
    }

    static func decode(_ p: [UInt8], _ n: Int) -> (Attributes, [UInt8])? {
        var i = 0
        func u32() -> Int? {
            guard i + 4 <= n else { return nil }
            defer { i += 4 }
            return Int(p[i]) << 24 | Int(p[i + 1]) << 16 | Int(p[i + 2]) << 8 | Int(p[i + 3])
        }
        guard n > 5, p[0] == 1 else { return nil }
        i = 1
        guard let count = u32() else { return nil }
        var a = Attributes(account: "", service: "", label: "", group: "", accessible: "", created: 0, modified: 0,
                           synchronizable: 0)
        for _ in 0..<count {
            guard let kl = u32(), i + kl + 1 <= n else { return nil }
            let k0 = i
            i += kl
            let tag = p[i]
            i += 1
            guard let vl = u32(), i + vl <= n else { return nil }
            let v = p[i..<i + vl]
            i += vl
            guard kl == 4 else { continue }
            let name = (UInt32(p[k0]) << 24) | (UInt32(p[k0 + 1]) << 16) | (UInt32(p[k0 + 2]) << 8) | UInt32(p[k0 + 3])
            switch (name, tag) {
            case (0x6163_6374, 0x73): a.account = String(decoding: v, as: UTF8.self)  // acct
            case (0x7376_6365, 0x73): a.service = String(decoding: v, as: UTF8.self)  // svce
            case (0x6C61_626C, 0x73): a.label = String(decoding: v, as: UTF8.self)  // labl
            case (0x6167_7270, 0x73): a.group = String(decoding: v, as: UTF8.self)  // agrp
            case (0x7064_6D6E, 0x73): a.accessible = String(decoding: v, as: UTF8.self)  // pdmn
            case (0x6364_6174, 0x64): a.created = Double(bitPattern: v.reduce(0) { $0 << 8 | UInt64($1) })  // cdat
            case (0x6D64_6174, 0x64): a.modified = Double(bitPattern: v.reduce(0) { $0 << 8 | UInt64($1) })  // mdat
            case (0x7379_6E63, 0x6E): a.synchronizable = Int64(bitPattern: v.reduce(0) { $0 << 8 | UInt64($1) })  // sync
            default: break
            }
        }
        guard i < n, p[i] == 1 else { return nil }
        i += 1
        guard let dl = u32(), i + dl == n else { return nil }
        return (a, Array(p[i..<n]))
    }

    static func tagged(_ tag: UInt8, _ s: String) -> [UInt8] { [tag] + Array(s.utf8) }

    private static func attribute(_ out: inout [UInt8], _ name: String, _ tag: UInt8, _ value: [UInt8]) {
        u32(&out, UInt32(name.utf8.count))
        out += name.utf8
        out.append(tag)
        u32(&out, UInt32(value.count))
        out += value
    }

    static func u32(_ out: inout [UInt8], _ v: UInt32) {
        out += [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
    }

    static func be64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (56 - 8 * $0)) } }

    private func column(_ stmt: OpaquePointer, _ i: Int32) -> [UInt8] {
        guard let p = sqlite3_column_blob(stmt, i) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: Int(sqlite3_column_bytes(stmt, i))))
    }

    private func bind(_ stmt: OpaquePointer, _ i: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { _ = sqlite3_bind_blob(stmt, i, $0.baseAddress, Int32($0.count), csecitem_sqlite_transient()) }
    }

    private func step(_ stmt: OpaquePointer, reset: Bool = true) throws {
        let rc = sqlite3_step(stmt)
        if reset { sqlite3_reset(stmt) }
        guard rc == SQLITE_DONE || rc == SQLITE_ROW else {
            throw BenchmarkError("sqlite: \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    private func stepRow(_ stmt: OpaquePointer) throws -> Bool {
        let rc = sqlite3_step(stmt)
        if rc == SQLITE_ROW { return true }
        guard rc == SQLITE_DONE else { throw BenchmarkError("sqlite: \(String(cString: sqlite3_errmsg(db)))") }
        return false
    }
}

/// The smallest design that does the irreducible work of an encrypted, indexed,
/// durable keychain file: the physical limit the targets are stated
/// against. The same SQLite settings (WAL, `synchronous=FULL`), one table with a
/// unique keyed-HMAC primary-key column and the sealed box; per lookup one HMAC
/// with a reused context, one indexed SELECT and one AES-256-GCM open with a
/// reused context (the primary-key HMAC as associated data); per add one HMAC,
/// one seal and one INSERT; per update one HMAC, one seal and one UPDATE; per
/// delete one HMAC and one DELETE, each statement its own durable transaction.
/// The box holds the same plaintext as the backend's (attributes and data). No
/// schema check, commitment, versioning, other indexes or change detection.
final class MinimalFileKeychain: RawStore {
    private var db: OpaquePointer?
    private let hmac: OpaquePointer
    private let gcm: OpaquePointer
    private let select, insert, update, delete: OpaquePointer
    private var plain = [UInt8](repeating: 0, count: 1024)
    private var pk = [UInt8](repeating: 0, count: 32)

    init(path: String) throws {
        let handle = try BaselineConnection.openMinimal(path: path, create: true)
        db = handle
        var keys = try BaselineConnection.randomKeys()
        defer { csecitem_cleanse(&keys, 64) }
        (hmac, gcm) = try BaselineConnection.contexts(keys: keys)
        func prepare(_ sql: String) throws -> OpaquePointer { try BaselineConnection.prepare(handle, sql) }
        select = try prepare("SELECT box FROM items WHERE pk = ?")
        insert = try prepare("INSERT INTO items(pk, box) VALUES (?, ?)")
        update = try prepare("UPDATE items SET box = ? WHERE pk = ?")
        delete = try prepare("DELETE FROM items WHERE pk = ?")
    }

    deinit {
        for s in [select, insert, update, delete] { sqlite3_finalize(s) }
        sqlite3_close_v2(db)
        csecitem_hmac_free(hmac)
        csecitem_gcm_free(gcm)
    }

    func bulk(_ body: () throws -> Void) throws {
        sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
        try body()
        sqlite3_exec(db, "COMMIT", nil, nil, nil)
    }

    /// The primary key's bytes, as ``RawFileKeychain/primaryKeyBytes(account:)`` gives
    /// them, assembled in a reused buffer from the parts that never change (only the
    /// account varies): the irreducible work, not a growing array per part.
    private var keyMessage: [UInt8] = []
    private static let keyPrefix = Array("genpacct".utf8)
    private static let keySuffix = Array(RawFileKeychain.primaryKeyBytes(account: "").dropFirst(13))

    private func key(_ account: String) throws {
        keyMessage.removeAll(keepingCapacity: true)
        keyMessage.append(contentsOf: Self.keyPrefix)
        let length = UInt32(account.utf8.count + 1)
        keyMessage.append(UInt8(length >> 24))
        keyMessage.append(UInt8((length >> 16) & 0xFF))
        keyMessage.append(UInt8((length >> 8) & 0xFF))
        keyMessage.append(UInt8(length & 0xFF))
        keyMessage.append(0x62)
        keyMessage.append(contentsOf: account.utf8)
        keyMessage.append(contentsOf: Self.keySuffix)
        let rc = keyMessage.withUnsafeBufferPointer { m in
            pk.withUnsafeMutableBufferPointer { csecitem_hmac_run(hmac, m.baseAddress, m.count, nil, 0, $0.baseAddress) }
        }
        guard rc == 0 else { throw BenchmarkError("HMAC") }
    }

    private func seal(_ account: String, _ label: String, _ data: [UInt8]) throws -> [UInt8] {
        try BaselineConnection.sealMinimal(gcm, pk: pk, account: account, label: label, data: data)
    }

    private func run(_ stmt: OpaquePointer) throws {
        let rc = sqlite3_step(stmt)
        sqlite3_reset(stmt)
        guard rc == SQLITE_DONE else { throw BenchmarkError("sqlite: \(String(cString: sqlite3_errmsg(db)))") }
    }

    private func bind(_ stmt: OpaquePointer, _ i: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { _ = sqlite3_bind_blob(stmt, i, $0.baseAddress, Int32($0.count), csecitem_sqlite_transient()) }
    }

    func add(account: String, label: String, data: [UInt8]) throws {
        try key(account)
        let box = try seal(account, label, data)
        bind(insert, 1, pk)
        bind(insert, 2, box)
        try run(insert)
    }

    func lookup(account: String) throws -> Int {
        try key(account)
        bind(select, 1, pk)
        defer { sqlite3_reset(select) }
        guard sqlite3_step(select) == SQLITE_ROW, let b = sqlite3_column_blob(select, 0) else { return -1 }
        let count = Int(sqlite3_column_bytes(select, 0))
        guard count >= 28 else { return -2 }
        let n = count - 28
        if plain.count < n { plain = [UInt8](repeating: 0, count: n) }
        let c = b.assumingMemoryBound(to: UInt8.self)
        let rc = plain.withUnsafeMutableBufferPointer { csecitem_gcm_open(gcm, c, pk, 32, c + 12, n, c + 12 + n, $0.baseAddress) }
        plain.withUnsafeMutableBytes { csecitem_cleanse($0.baseAddress, n) }
        return rc == 0 ? n : -2
    }

    func update(account: String, data: [UInt8]) throws -> Int {
        try key(account)
        let box = try seal(account, "", data)
        bind(update, 1, box)
        bind(update, 2, pk)
        try run(update)
        return Int(sqlite3_changes(db))
    }

    func delete(account: String) throws -> Int {
        try key(account)
        bind(delete, 1, pk)
        try run(delete)
        return Int(sqlite3_changes(db))
    }

    /// Not part of the minimal design (it has no label index).
    func count(label: String) throws -> Int { -1 }
}

/// The set-up every C-level baseline shares: the minimal design's file (one table,
/// WAL, `synchronous=FULL`), the reused HMAC and AES-256-GCM contexts, persistent
/// prepared statements. Used by ``MinimalFileKeychain``, ``RawFileKeychain`` and the
/// scaling group's minimal connections (``ScalingBaselines``).
enum BaselineConnection {
    /// 64 random bytes: the HMAC key, then the AES key (wipe them after ``contexts(keys:)``).
    static func randomKeys() throws -> [UInt8] {
        var keys = [UInt8](repeating: 0, count: 64)
        guard csecitem_random_bytes(&keys, 64) == 0 else { throw BenchmarkError("RAND_bytes failed") }
        return keys
    }

    /// The HMAC-SHA256 and AES-256-GCM contexts from `keys` (HMAC key, then AES key); wipes a copy it made.
    static func contexts(keys: [UInt8]) throws -> (hmac: OpaquePointer, gcm: OpaquePointer) {
        var aesKey = Array(keys[32..<64])
        defer { csecitem_cleanse(&aesKey, 32) }
        guard let hmac = csecitem_hmac_new(keys, 32) else { throw BenchmarkError("libcrypto contexts") }
        guard let gcm = csecitem_gcm_new(aesKey, 32) else {
            csecitem_hmac_free(hmac)
            throw BenchmarkError("libcrypto contexts")
        }
        return (hmac, gcm)
    }

    /// Opens `path` as the minimal design's file (with `create`: creates it and its one table).
    static func openMinimal(path: String, create: Bool) throws -> OpaquePointer {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0)
        guard sqlite3_open_v2(path, &handle, flags, nil) == SQLITE_OK, let handle else {
            sqlite3_close_v2(handle)
            throw BenchmarkError("cannot open \(path)")
        }
        sqlite3_busy_timeout(handle, 30_000)
        sqlite3_exec(handle, "PRAGMA journal_mode=WAL", nil, nil, nil)
        sqlite3_exec(handle, "PRAGMA synchronous=FULL", nil, nil, nil)
        if create {
            guard sqlite3_exec(
                handle, "CREATE TABLE items(id INTEGER PRIMARY KEY, pk BLOB NOT NULL UNIQUE, box BLOB NOT NULL)", nil, nil, nil)
                == SQLITE_OK
            else {
                sqlite3_close_v2(handle)
                throw BenchmarkError("minimal schema")
            }
        }
        return handle
    }

    /// The minimal design's box of an item, sealed now: nonce ‖ AES-256-GCM of the
    /// format's plaintext with the key's HMAC (`pk`, 32 bytes) as associated data ‖ tag.
    static func sealMinimal(_ gcm: OpaquePointer, pk: [UInt8], account: String, label: String, data: [UInt8]) throws
        -> [UInt8]
    {
        let now = Date.timeIntervalSinceReferenceDate
        var p = RawFileKeychain.plaintext(account: account, label: label, created: now, modified: now, data: data)
        defer { p.withUnsafeMutableBytes { csecitem_cleanse($0.baseAddress, $0.count) } }
        var box = [UInt8](repeating: 0, count: 12 + p.count + 16)
        let n = p.count
        let rc = box.withUnsafeMutableBufferPointer { b in
            let base = b.baseAddress!
            guard csecitem_random_bytes(base, 12) == 0 else { return Int32(-1) }
            return csecitem_gcm_seal(gcm, base, pk, 32, p, n, base + 12, base + 12 + n)
        }
        guard rc == 0 else { throw BenchmarkError("seal") }
        return box
    }

    /// A statement prepared once for the connection's life (`SQLITE_PREPARE_PERSISTENT`).
    static func prepare(_ db: OpaquePointer, _ sql: String) throws -> OpaquePointer {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil) == SQLITE_OK, let stmt else {
            throw BenchmarkError("sqlite: \(String(cString: sqlite3_errmsg(db))) preparing \(sql)")
        }
        return stmt
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Opening a key-protected keychain with only sqlite3 and libcrypto: open the
/// file, the same connection settings, read `meta` in a transaction (the format,
/// the wrapped data key and any key source's `kek_*` rows, which the wrapping's
/// associated data binds), read the key file, unwrap the data key (AES-256-GCM)
/// and derive the two item keys for that format (HKDF-SHA256), close. Returns the first byte of the derived HMAC key's
/// checksum so the work is kept (never printed).
func rawOpenWithKeyFile(path: String, keyFile: String) throws -> Int {
    var db: OpaquePointer?
    guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let db else {
        throw BenchmarkError("cannot open \(path)")
    }
    defer { sqlite3_close_v2(db) }
    sqlite3_busy_timeout(db, 30_000)
    _ = csecitem_sqlite_db_config_int(db, SQLITE_DBCONFIG_DEFENSIVE, 1)
    _ = csecitem_sqlite_db_config_int(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0)
    var wrapped: [UInt8] = []
    var format: Int64 = 0
    // A key source's own rows (`kek_*`), bound into the wrapping's associated data in key order
    // as /name:kind:length:value (none for a key file; read all the same, as an open must).
    var parameters: [(String, [UInt8])] = []
    var stmt: OpaquePointer?
    sqlite3_exec(db, "BEGIN", nil, nil, nil)
    sqlite3_prepare_v2(db, "SELECT key, value, typeof(value) FROM meta", -1, &stmt, nil)
    while sqlite3_step(stmt) == SQLITE_ROW {
        let key = String(cString: sqlite3_column_text(stmt, 0))
        let type = String(cString: sqlite3_column_text(stmt, 2))
        func blob() -> [UInt8] {
            guard let p = sqlite3_column_blob(stmt, 1) else { return [] }
            return Array(UnsafeRawBufferPointer(start: p, count: Int(sqlite3_column_bytes(stmt, 1))))
        }
        if key == "data_key" {
            wrapped = blob()
        } else if key == "format" {
            format = sqlite3_column_int64(stmt, 1)
        } else if key.hasPrefix("kek_") {
            let (kind, value): (String, [UInt8]) =
                switch type {
                case "integer": ("i", Array(String(sqlite3_column_int64(stmt, 1)).utf8))
                case "text": ("t", Array(String(cString: sqlite3_column_text(stmt, 1)).utf8))
                default: ("b", blob())
                }
            parameters.append((key, Array("/\(key):\(kind):\(value.count):".utf8) + value))
        }
    }
    sqlite3_finalize(stmt)
    sqlite3_exec(db, "COMMIT", nil, nil, nil)
    sqlite3_exec(db, "PRAGMA journal_mode", nil, nil, nil)
    sqlite3_exec(db, "PRAGMA synchronous=FULL", nil, nil, nil)
    // The key file: 64 hex digits.
    let fd = open(keyFile, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw BenchmarkError("cannot open the key file") }
    var st = stat()
    fstat(fd, &st)
    var text = [UInt8](repeating: 0, count: 128)
    let n = read(fd, &text, 128)
    close(fd)
    guard n >= 64 else { throw BenchmarkError("short key file") }
    func nibble(_ c: UInt8) -> UInt8 { c <= 57 ? c - 48 : (c | 0x20) - 87 }
    var kek = (0..<32).map { nibble(text[2 * $0]) << 4 | nibble(text[2 * $0 + 1]) }
    defer { csecitem_cleanse(&kek, 32); csecitem_cleanse(&text, 128) }
    guard (1...3).contains(format) else { throw BenchmarkError("no format version") }
    var aad = Array("secitem-file".utf8)
    aad.append(UInt8(format))
    aad += "data-key/key".utf8
    for (_, bytes) in parameters.sorted(by: { $0.0 < $1.0 }) { aad += bytes }
    guard wrapped.count == 60 else { throw BenchmarkError("no wrapped data key") }
    var dataKey = [UInt8](repeating: 0, count: 32)
    defer { csecitem_cleanse(&dataKey, 32) }
    let rc = wrapped.withUnsafeBufferPointer { w in
        csecitem_aes256gcm_open(kek, w.baseAddress!, aad, aad.count, w.baseAddress! + 12, 32, w.baseAddress! + 44, &dataKey)
    }
    guard rc == 0 else { throw BenchmarkError("the key does not unwrap the data key") }
    var macKey = [UInt8](repeating: 0, count: 32), encKey = [UInt8](repeating: 0, count: 32)
    defer { csecitem_cleanse(&macKey, 32); csecitem_cleanse(&encKey, 32) }
    let i1 = Array("secitem-file/\(format) hmac-sha256".utf8), i2 = Array("secitem-file/\(format) aes-256-gcm".utf8)
    guard csecitem_hkdf_sha256(dataKey, 32, nil, 0, i1, i1.count, &macKey, 32) == 0,
        csecitem_hkdf_sha256(dataKey, 32, nil, 0, i2, i2.count, &encKey, 32) == 0
    else { throw BenchmarkError("HKDF failed") }
    return Int(macKey[0] ^ encKey[0])
}

/// The passphrase KDF alone: scrypt with the default cost (N = 2^15, r = 8, p = 1).
func rawScrypt(passphrase: String) throws -> Int {
    var out = [UInt8](repeating: 0, count: 32)
    defer { csecitem_cleanse(&out, 32) }
    let salt = [UInt8](repeating: 7, count: 16)
    let pass = Array(passphrase.utf8)
    let rc = pass.withUnsafeBufferPointer { p in
        p.withMemoryRebound(to: CChar.self) {
            csecitem_scrypt($0.baseAddress, p.count, salt, 16, 1 << 15, 8, 1, 128 * 8 * ((1 << 15) + 3) + (1 << 20), &out, 32)
        }
    }
    guard rc == 0 else { throw BenchmarkError("scrypt failed") }
    return Int(out[0])
}

/// `count` bytes from OpenSSL's CSPRNG.
func randomBytes(_ count: Int) throws -> [UInt8] {
    var out = [UInt8](repeating: 0, count: count)
    guard csecitem_random_bytes(&out, count) == 0 else { throw BenchmarkError("RAND_bytes failed") }
    return out
}

/// Zeroes key material before it is dropped.
func wipeBytes(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { csecitem_cleanse($0.baseAddress, $0.count) }
}

extension RawFileKeychain {
    func add(account: String, label: String, data: [UInt8]) throws {
        try add(account: account, label: label, data: data, joiningOpenTransaction: false)
    }

    func count(label: String) throws -> Int { try query(label: label).count }
}
