import Foundation
public import SecItemCore
import Synchronization

/// The encrypted file backend: one SQLite file, every item sealed with
/// AES-256-GCM (OpenSSL), safe under crashes, many threads and many processes.
///
/// Each item is one row: its UUID, its class, a keyed HMAC of its primary key
/// under a UNIQUE index (duplicates fail atomically, across processes), keyed
/// HMACs of `svce`, `acct`, `srvr`, `labl`, the access group and the sync state
/// for indexed lookup, and one AES-256-GCM box of every attribute and the data.
/// The random data key is stored wrapped by a key-encryption key from a
/// ``KeySource``. The format is in `docs/file-format.md`.
///
/// ```swift
/// let backend = try SQLiteBackend(configuration: .fromEnvironment())
/// let client = SecItemClient(backend: backend)
/// ```
///
/// Thread-safe: the connection lives in a `Mutex` (checked `Sendable`, no
/// `@unchecked`). Process-safe: WAL, `synchronous=FULL`, writes in
/// `BEGIN IMMEDIATE` transactions and a busy timeout; a call returns only after
/// its change is durable.
public final class SQLiteBackend: SecItemBackend {
    /// What this backend was opened with (descriptions redact keys and passphrases).
    public let configuration: Configuration
    private let state: Mutex<Connection?>

    /// The name used in diagnostics.
    public var name: String { "file" }

    /// Opens the keychain file, creating it when missing.
    ///
    /// The key derivation (scrypt for a passphrase) runs here, once.
    /// - Throws: `errSecAuthFailed` when the key or passphrase does not unlock the
    ///   file (nothing written); `errSecInvalidKeychain` when the file is not a
    ///   keychain, is damaged, or has a newer format; `errSecNotAvailable` when the
    ///   key file is missing; `errSecParam` for a key file others can read, owned by
    ///   another user, or not holding a key; `errSecIO` for file-system failures.
    public init(configuration: Configuration) throws(SecItemError) {
        self.configuration = configuration
        let connection = try Connection.open(configuration)
        state = Mutex(connection)
    }

    /// Closes the file; later calls throw `errSecNotAvailable`.
    public func close() {
        state.withLock { connection in
            connection?.db.close()
            connection = nil
        }
    }

    // MARK: SecItemBackend

    public func add(_ item: StoredItem) throws(SecItemError) {
        try withConnection { (c: Connection) throws(SecItemError) in
            try c.transaction(write: true) { () throws(SecItemError) in
                try c.insert(c.codec.encode(item))
            }
        }
    }

    public func fetch(matching query: ItemQuery, limit: Int?) throws(SecItemError) -> [StoredItem] {
        try withConnection { (c: Connection) throws(SecItemError) in
            try c.transaction(write: false) { () throws(SecItemError) in
                try c.matches(query, limit: limit).map(\.item)
            }
        }
    }

    public func update(matching query: ItemQuery, _ transform: (StoredItem) -> StoredItem) throws(SecItemError) -> Int {
        try withConnection { (c: Connection) throws(SecItemError) in
            try c.transaction(write: true) { () throws(SecItemError) in
                let old = try c.matches(query, limit: nil)
                guard !old.isEmpty else { return 0 }
                var rows: [(seq: Int64, row: EncodedRow)] = []
                for match in old { rows.append((match.seq, try c.codec.encode(transform(match.item)))) }
                // Rows are rewritten one by one under a UNIQUE index; when one takes a
                // key another updated row is about to give up, park them all first.
                let oldKeys = Set(old.map(\.primaryKeyMAC))
                if rows.contains(where: { oldKeys.contains($0.row.primaryKeyMAC) }) {
                    let park = try c.db.statement("UPDATE items SET pk = uuid WHERE seq = ?")
                    for r in rows {
                        park.bind(1, r.seq)
                        try park.run(during: "updating an item")
                    }
                }
                for r in rows { try c.rewrite(r.seq, r.row) }
                return rows.count
            }
        }
    }

    public func delete(matching query: ItemQuery) throws(SecItemError) -> Int {
        try withConnection { (c: Connection) throws(SecItemError) in
            try c.transaction(write: true) { () throws(SecItemError) in
                let doomed = try c.matches(query, limit: nil)
                let stmt = try c.db.statement("DELETE FROM items WHERE seq = ?")
                for match in doomed {
                    stmt.bind(1, match.seq)
                    try stmt.run(during: "deleting an item")
                }
                return doomed.count
            }
        }
    }

    // MARK: Maintenance

    /// Checks every row and the file's structure.
    /// - Returns: The rows that cannot be returned (tampered, swapped, damaged); empty when all is well.
    /// - Throws: `errSecInvalidKeychain` when the SQLite file itself is damaged.
    public func verify() throws(SecItemError) -> [DamagedRow] {
        try withConnection { (c: Connection) throws(SecItemError) in
            try c.transaction(write: false) { () throws(SecItemError) in
                let check = try c.db.statement("PRAGMA quick_check")
                defer { check.reset() }
                var problems: [String] = []
                while try check.step(during: "checking the file") {
                    if let line = check.text(0), line != "ok" { problems.append(line) }
                }
                if !problems.isEmpty {
                    throw SecItemError(
                        errSecInvalidKeychain,
                        "the keychain file is damaged: \(problems.prefix(3).joined(separator: "; "))")
                }
                return try c.scanAll().damaged
            }
        }
    }

    /// Re-wraps the data key under a new key-encryption key, in one transaction:
    /// a new passphrase, key file or raw key. Items are not rewritten.
    ///
    /// Other processes that have the file open must reopen it with the new key.
    /// - Throws: what opening with `newSource` would throw for a bad key file; the
    ///   file is unchanged on any error.
    public func rekey(to newSource: KeySource) throws(SecItemError) {
        let newKEK = try KeyEncryptionKey.forNewWrapping(newSource, configuration)
        try withConnection { (c: Connection) throws(SecItemError) in
            try c.transaction(write: true) { () throws(SecItemError) in
                var header = c.header
                header.protection = newKEK.protection
                header.scrypt = newKEK.scrypt
                header.salt = newKEK.salt
                header.epoch += 1
                try header.wrap(c.codec.keys.dataKey, kek: newKEK.kek)
                try header.write(c.db)
                c.pending = (header, newKEK.kek, c.codec)
            }
            c.commitPending()
        }
    }

    /// Replaces the data key: every row is re-encrypted under a new random key,
    /// read back and checked, and the new key wrapped, all in one transaction.
    /// On any failure the file keeps the old key and every old row.
    /// - Throws: `errSecDecode` when a row is damaged (see ``verify()``): rotation
    ///   would lose it, so it is refused.
    public func rotateDataKey() throws(SecItemError) {
        try rotateDataKey(failingAfter: nil)
    }

    /// ``rotateDataKey()`` with a failure injected after `rows` rows were rewritten (tests only).
    @_spi(Testing)
    public func rotateDataKey(failingAfter rows: Int?) throws(SecItemError) {
        try withConnection { (c: Connection) throws(SecItemError) in
            try c.transaction(write: true) { () throws(SecItemError) in
                let scan = try c.scanAll()
                guard scan.damaged.isEmpty else {
                    throw SecItemError(
                        errSecDecode,
                        "cannot rotate the data key: \(scan.damaged.count) damaged rows would be lost; see verify()")
                }
                let newCodec = RowCodec(keys: try ItemKeys.generate())
                for (index, match) in scan.items.enumerated() {
                    if let rows, index >= rows {
                        throw SecItemError(errSecIO, "failure injected during data-key rotation")
                    }
                    try c.rewrite(match.seq, try newCodec.encode(match.item))
                }
                // Read every row back under the new key before committing to it.
                let old = c.codec
                c.codec = newCodec
                defer { c.codec = old }
                let check = try c.scanAll()
                guard check.damaged.isEmpty, check.items.map(\.item) == scan.items.map(\.item) else {
                    throw SecItemError(errSecIO, "the re-encrypted rows did not read back; rotation abandoned")
                }
                var header = c.header
                header.epoch += 1
                try header.wrap(newCodec.keys.dataKey, kek: c.kek)
                try header.write(c.db)
                c.pending = (header, c.kek, newCodec)
            }
            c.commitPending()
        }
    }

    /// The SQL that creates a version-1 keychain's tables, for the benchmark's
    /// C baseline, which must use the very same schema (docs/file-format.md).
    @_spi(Bulk)
    public static var schemaSQL: String { KeychainHeader.schema }

    /// Runs `body` with every write it makes on this backend joined into one
    /// `BEGIN IMMEDIATE` transaction, committed (one fsync) when `body` returns and
    /// rolled back when it throws. For filling large keychains quickly (the
    /// benchmarks populate 100,000 items this way); not for concurrent use: calls
    /// other threads make meanwhile join the same transaction.
    @_spi(Bulk)
    public func inBulkTransaction(_ body: () throws -> Void) throws {
        try withConnection { (c: Connection) throws(SecItemError) in
            try c.db.execute("BEGIN IMMEDIATE")
            c.bulk = true
        }
        do {
            try body()
        } catch {
            try? withConnection { (c: Connection) throws(SecItemError) in
                c.bulk = false
                try c.db.execute("ROLLBACK")
            }
            throw error
        }
        try withConnection { (c: Connection) throws(SecItemError) in
            c.bulk = false
            try c.db.execute("COMMIT")
        }
    }

    private func withConnection<R: Sendable>(_ body: (Connection) throws(SecItemError) -> R) throws(SecItemError) -> R {
        try state.withLock { (connection: inout Connection?) throws(SecItemError) -> R in
            guard let connection else { throw SecItemError(errSecNotAvailable, "the keychain file was closed") }
            return try body(connection)
        }
    }
}

/// One open keychain: the SQLite connection and the keys. Used under the
/// backend's mutex only.
final class Connection {
    let db: Database
    var header: KeychainHeader
    var kek: SecretBytes
    var codec: RowCodec
    /// New keys a maintenance transaction installs once it has committed.
    var pending: (KeychainHeader, SecretBytes, RowCodec)?
    /// Inside ``SQLiteBackend/inBulkTransaction(_:)``: calls join the open transaction.
    var bulk = false

    struct Match {
        var seq: Int64
        var item: StoredItem
        var primaryKeyMAC: [UInt8]
    }

    private init(db: Database, header: KeychainHeader, kek: SecretBytes, codec: RowCodec) {
        self.db = db
        self.header = header
        self.kek = kek
        self.codec = codec
    }

    static func open(_ configuration: SQLiteBackend.Configuration) throws(SecItemError) -> Connection {
        _ = try KeychainCreation.createIfMissing(configuration)
        let db = try Database(
            path: configuration.path, busyTimeoutMilliseconds: Int32(clamping: configuration.busyTimeoutMilliseconds))
        // Read the header before anything that could write, so a file that is not a
        // keychain (an empty file included) is left exactly as it was.
        let header = try db.transaction(write: false) { () throws(SecItemError) in try KeychainHeader.read(db) }
        let mode = try db.statement("PRAGMA journal_mode")
        _ = try mode.step(during: "reading the journal mode")
        let journal = mode.text(0)
        mode.reset()
        if journal != "wal" {
            let set = try db.statement("PRAGMA journal_mode=WAL")
            _ = try set.step(during: "enabling WAL")
            set.reset()
        }
        try db.execute("PRAGMA synchronous=FULL")
        let kek = try KeyEncryptionKey.forExisting(configuration.keySource, configuration, header: header)
        guard let dataKey = try header.unwrap(kek: kek.kek) else {
            let what = header.protection == .passphrase ? "passphrase" : "key"
            throw SecItemError(errSecAuthFailed, "the \(what) does not unlock the keychain \(configuration.path)")
        }
        return Connection(db: db, header: header, kek: kek.kek, codec: RowCodec(keys: try ItemKeys(dataKey: dataKey)))
    }

    /// A transaction that first makes sure this connection's keys are current: when
    /// another process rotated the data key, it is unwrapped again with this
    /// connection's key-encryption key.
    func transaction<R>(write: Bool, _ body: () throws(SecItemError) -> R) throws(SecItemError) -> R {
        pending = nil
        if bulk { return try body() }
        return try db.transaction(write: write) { () throws(SecItemError) -> R in
            try refreshKeysIfNeeded()
            return try body()
        }
    }

    func commitPending() {
        guard let (header, kek, codec) = pending else { return }
        self.header = header
        self.kek = kek
        self.codec = codec
        pending = nil
    }

    /// The key-epoch read every transaction starts with, prepared once.
    private var epochStatement: Statement?

    private func refreshKeysIfNeeded() throws(SecItemError) {
        let stmt: Statement
        if let epochStatement { stmt = epochStatement } else { stmt = try db.statement("SELECT value FROM meta WHERE key = 'epoch'") }
        epochStatement = stmt
        defer { stmt.reset() }
        guard try stmt.step(during: "reading the key epoch") else {
            throw SecItemError(errSecInvalidKeychain, "\(db.path) lost its metadata")
        }
        let epoch = stmt.int64(0)
        stmt.reset()
        guard epoch != header.epoch else { return }
        let fresh = try KeychainHeader.read(db)
        guard let dataKey = try fresh.unwrap(kek: kek) else {
            throw SecItemError(
                errSecAuthFailed, "the keychain \(db.path) was rekeyed by another process; open it with the new key")
        }
        header = fresh
        codec = RowCodec(keys: try ItemKeys(dataKey: dataKey))
    }

    func insert(_ row: EncodedRow) throws(SecItemError) {
        let stmt = try db.statement(
            "INSERT INTO items(uuid, class, pk, \(IndexedColumns.columns.joined(separator: ", ")), ct) "
                + "VALUES (?, ?, ?, \(IndexedColumns.columns.map { _ in "?" }.joined(separator: ", ")), ?)")
        stmt.bind(1, row.uuid)
        stmt.bind(2, row.itemClass)
        stmt.bind(3, row.primaryKeyMAC)
        for (i, mac) in row.indexMACs.enumerated() { stmt.bind(Int32(4 + i), mac) }
        stmt.bind(Int32(4 + row.indexMACs.count), row.sealed)
        do {
            try stmt.run(during: "adding an item")
        } catch where error.status == errSecDuplicateItem {
            throw SecItemError(errSecDuplicateItem, "an item with the same primary key is already in the keychain")
        }
    }

    func rewrite(_ seq: Int64, _ row: EncodedRow) throws(SecItemError) {
        let sets = (["uuid", "class", "pk"] + IndexedColumns.columns + ["ct"]).map { "\($0) = ?" }
        let stmt = try db.statement("UPDATE items SET \(sets.joined(separator: ", ")) WHERE seq = ?")
        stmt.bind(1, row.uuid)
        stmt.bind(2, row.itemClass)
        stmt.bind(3, row.primaryKeyMAC)
        for (i, mac) in row.indexMACs.enumerated() { stmt.bind(Int32(4 + i), mac) }
        let n = Int32(4 + row.indexMACs.count)
        stmt.bind(n, row.sealed)
        stmt.bind(n + 1, seq)
        do {
            try stmt.run(during: "updating an item")
        } catch where error.status == errSecDuplicateItem {
            throw SecItemError(errSecDuplicateItem, "the update would give two items the same primary key")
        }
    }

    static let selectColumns = (["seq", "uuid", "class", "pk"] + IndexedColumns.columns + ["ct"])
        .joined(separator: ", ")

    /// Rows matching `query`, oldest first, at most `limit`.
    ///
    /// Narrows with the indexed HMAC columns (exact equality only), opens each
    /// candidate and filters with ``ItemQuery/matches(_:)``. Damaged rows are
    /// skipped; when nothing matched and a damaged candidate was seen, throws
    /// `errSecDecode` (the item asked for may be the damaged one).
    func matches(_ query: ItemQuery, limit: Int?) throws(SecItemError) -> [Match] {
        if let limit, limit <= 0 { return [] }
        var out: [Match] = []
        var damaged = 0
        if !query.accessGroups.isEmpty, let candidates = query.primaryKeyCandidates, candidates.count <= 64 {
            // The query pins the whole primary key: at most one row per candidate,
            // found by the unique `pk` column. Class, group, sync state and key
            // attributes are then equal by construction (the row's pk column is
            // checked against its contents), so only the rest is compared.
            let stmt = try byPrimaryKey()
            defer { stmt.reset() }
            for candidate in candidates {
                let mac = try codec.primaryKeyMAC(candidate)
                stmt.bind(1, mac)
                while try stmt.step(during: "searching items") {
                    switch try codec.decode(stmt) {
                    case .item(let item):
                        if query.matchesBeyondPrimaryKey(item) {
                            out.append(Match(seq: stmt.int64(0), item: item, primaryKeyMAC: mac))
                        }
                    case .damaged:
                        damaged += 1
                    }
                }
                stmt.reset()
            }
            if out.count > 1 { out.sort { $0.seq < $1.seq } }
            if let limit, out.count > limit { out.removeLast(out.count - limit) }
        } else {
            guard let plan = try plan(query) else { return [] }
            let stmt = try db.statement("SELECT \(Self.selectColumns) FROM items\(plan.whereClause) ORDER BY seq")
            defer { stmt.reset() }
            for (i, bind) in plan.binds.enumerated() {
                switch bind {
                case .bytes(let b): stmt.bind(Int32(i + 1), b)
                case .text(let t): stmt.bind(Int32(i + 1), t)
                }
            }
            while try stmt.step(during: "searching items") {
                switch try codec.decode(stmt) {
                case .item(let item):
                    if query.matches(item) {
                        out.append(Match(seq: stmt.int64(0), item: item, primaryKeyMAC: stmt.bytes(3) ?? []))
                    }
                case .damaged:
                    damaged += 1
                }
                if let limit, out.count >= limit { break }
            }
            stmt.reset()
        }
        if out.isEmpty && damaged == 0 {
            damaged = try damagedCandidates(query)
        }
        if out.isEmpty && damaged > 0 {
            throw SecItemError(
                errSecDecode,
                "\(damaged) candidate row(s) failed authentication (tampered or damaged); see SQLiteBackend.verify()")
        }
        return out
    }

    /// The damage probes of ``damagedCandidates(_:)``, by the mask of attributes they test.
    private var probeStatements = [Statement?](repeating: nil, count: 1 << IndexedColumns.attributes.count)

    /// `SELECT … WHERE pk = ?`, prepared once per connection.
    private var selectByPrimaryKey: Statement?

    private func byPrimaryKey() throws(SecItemError) -> Statement {
        if let selectByPrimaryKey { return selectByPrimaryKey }
        let stmt = try db.statement("SELECT \(Self.selectColumns) FROM items WHERE pk = ?")
        selectByPrimaryKey = stmt
        return stmt
    }

    /// After a miss: the rows whose attribute HMAC columns alone match the query
    /// but that fail to open. Finds the row a lookup was after when its
    /// primary-key, class, access-group or sync column was altered (so the main
    /// search skipped it), so that the lookup reports damage, not absence.
    private func damagedCandidates(_ query: ItemQuery) throws(SecItemError) -> Int {
        guard let itemClass = query.itemClass, !query.caseInsensitive, query.persistentReferenceID == nil else {
            return 0
        }
        // One statement per set of attributes present, prepared once (a bit mask picks it).
        var shape = 0
        for (i, name) in IndexedColumns.attributes.enumerated() where query.attributes[name] != nil { shape |= 1 << i }
        guard shape != 0 else { return 0 }
        let stmt: Statement
        if let known = probeStatements[shape] {
            stmt = known
        } else {
            let conditions = IndexedColumns.attributes.enumerated().filter { shape & (1 << $0.offset) != 0 }
                .map { "h_\($0.element) = ?" }
            stmt = try db.statement(
                "SELECT \(Self.selectColumns) FROM items WHERE \(conditions.joined(separator: " AND ")) ORDER BY seq")
            probeStatements[shape] = stmt
        }
        defer { stmt.reset() }
        var index: Int32 = 1
        for name in IndexedColumns.attributes {
            guard let value = query.attributes[name] else { continue }
            stmt.bind(index, try codec.attributeMAC(itemClass, name, value))
            index += 1
        }
        var damaged = 0
        while try stmt.step(during: "searching items") {
            if case .damaged = try codec.decode(stmt) { damaged += 1 }
        }
        return damaged
    }

    /// Every row, decoded or reported damaged.
    func scanAll() throws(SecItemError) -> (items: [Match], damaged: [SQLiteBackend.DamagedRow]) {
        let stmt = try db.statement("SELECT \(Self.selectColumns) FROM items ORDER BY seq")
        defer { stmt.reset() }
        var items: [Match] = []
        var damaged: [SQLiteBackend.DamagedRow] = []
        while try stmt.step(during: "reading every item") {
            let seq = stmt.int64(0)
            switch try codec.decode(stmt) {
            case .item(let item):
                items.append(Match(seq: seq, item: item, primaryKeyMAC: stmt.bytes(3) ?? []))
            case .damaged(let reason):
                let u = stmt.bytes(1) ?? []
                let id =
                    u.count == 16
                    ? UUID(uuid: (u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
                                  u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15])) : nil
                damaged.append(.init(row: seq, id: id, itemClass: stmt.text(2) ?? "", reason: reason))
            }
        }
        return (items, damaged)
    }

    enum Bind {
        case bytes([UInt8])
        case text(String)
    }

    /// The WHERE clause for a query, or `nil` when nothing can match.
    private func plan(_ query: ItemQuery) throws(SecItemError) -> (whereClause: String, binds: [Bind])? {
        var conditions: [String] = []
        var binds: [Bind] = []
        if let id = query.persistentReferenceID {
            conditions.append("uuid = ?")
            binds.append(.bytes(withUnsafeBytes(of: id.uuid) { Array($0) }))
        }
        if let itemClass = query.itemClass {
            conditions.append("class = ?")
            binds.append(.text(itemClass.rawValue))
            if query.accessGroups.isEmpty { return nil }
            if query.accessGroups.count <= 16 {
                let groups = query.accessGroups.sorted()
                conditions.append("h_agrp IN (\(groups.map { _ in "?" }.joined(separator: ", ")))")
                for g in groups { binds.append(.bytes(try codec.accessGroupMAC(itemClass, g))) }
            }
            switch query.synchronizable {
            case .no, .yes:
                conditions.append("h_sync = ?")
                binds.append(.bytes(try codec.syncMAC(itemClass, query.synchronizable == .yes)))
            case .any:
                break
            }
            if !query.caseInsensitive {
                if let pk = try primaryKeyMAC(of: query, itemClass) {
                    conditions.append("pk = ?")
                    binds.append(.bytes(pk))
                } else {
                    for name in IndexedColumns.attributes {
                        guard let value = query.attributes[name] else { continue }
                        conditions.append("h_\(name) = ?")
                        binds.append(.bytes(try codec.attributeMAC(itemClass, name, value)))
                    }
                }
            }
        }
        let clause = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        return (clause, binds)
    }

    /// The primary-key HMAC the query pins down, when it constrains every
    /// primary-key attribute (one access group, one sync state).
    private func primaryKeyMAC(of query: ItemQuery, _ itemClass: ItemClass) throws(SecItemError) -> [UInt8]? {
        guard query.accessGroups.count == 1, let group = query.accessGroups.first, query.synchronizable != .any else {
            return nil
        }
        var attributes = query.attributes
        attributes["agrp"] = .string(group)
        attributes["sync"] = .number(query.synchronizable == .yes ? 1 : 0)
        guard itemClass.primaryKeyAttributes.allSatisfy({ attributes[$0] != nil }) else { return nil }
        // Not a probe StoredItem: its UUID() would read /dev/urandom on every lookup.
        return try codec.primaryKeyMAC(PrimaryKey(itemClass: itemClass, attributes: attributes))
    }
}
