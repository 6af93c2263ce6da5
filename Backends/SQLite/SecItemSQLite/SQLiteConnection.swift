import Foundation
import SecItemCore

/// One open keychain: the SQLite connection, the keys, and the row-set
/// commitment as this connection last saw it. Used under the backend's mutex only.
///
/// Staying current without a query per operation: SQLite's data version
/// (`SQLITE_FCNTL_DATA_VERSION`, a C call) changes with every commit and is
/// brought up to date when a transaction starts. A read runs without BEGIN and
/// then looks at it: unchanged since this connection last synchronised (or
/// committed) means the snapshot it read is the state it knows; changed means it
/// synchronises (schema, header, keys, commitment) and reads again inside one
/// snapshot. A write looks at it right after `BEGIN IMMEDIATE`, under the write lock.
final class SQLiteConnection {
    let db: Database
    private(set) var header: KeychainHeader
    private(set) var kek: SecretBytes
    private(set) var codec: RowCodec
    /// Format 2: the committed row set as of this connection's last synchronisation or write.
    private(set) var commitment: RowSetCommitment
    /// Inside ``SQLiteBackend/inBulkTransaction(_:)``: calls join the open transaction.
    var bulk = false
    private var knownDataVersion: Int64 = -1
    private var knownSchemaVersion: Int64 = -1
    /// Inside a write: whether the row set changed (the state row is then rewritten).
    private var rowSetChanged = false
    /// Tests only: a failure injected, or a pause, in the middle of an upgrade.
    var upgradeHooks: (failingAfter: Int?, stall: (() -> Void)?) = (nil, nil)

    var format: Int64 { header.format }
    private var table: String { KeychainSchema.itemsTable(format: format) }
    /// The version rows written by the current write transaction get.
    private var writeVersion: Int64 { commitment.generation + 1 }

    struct Match {
        var seq: Int64
        var item: StoredItem
        var primaryKeyMAC: [UInt8]
        /// Format 2, when asked for: the row as the commitment counts it.
        var element: RowSetCommitment.Element?
    }

    private init(db: Database, header: KeychainHeader, kek: SecretBytes, codec: RowCodec) {
        self.db = db
        self.header = header
        self.kek = kek
        self.codec = codec
        commitment = RowSetCommitment(generation: 0)
    }

    static func open(_ configuration: SQLiteBackend.Configuration) throws(SecItemError) -> SQLiteConnection {
        _ = try KeychainCreation.createIfMissing(configuration)
        let db = try Database(
            path: configuration.path, busyTimeoutMilliseconds: Int32(clamping: configuration.busyTimeoutMilliseconds))
        // Read the header and check the schema before anything that could write, so a
        // file that is not a keychain (an empty file included), or one someone planted
        // triggers in, is left exactly as it was.
        let (header, checkedSchema) = try db.transaction(write: false) { () throws(SecItemError) in
            let header = try KeychainHeader.read(db)
            try KeychainSchema.check(db, format: header.format)
            return (header, try db.pragma("schema_version"))
        }
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
        let connection = SQLiteConnection(
            db: db, header: header, kek: kek.kek,
            codec: RowCodec(keys: try ItemKeys(dataKey: dataKey, format: Int(header.format))))
        // The schema just checked need not be checked again unless it changed since.
        connection.knownSchemaVersion = checkedSchema
        try db.transaction(write: false) { () throws(SecItemError) in try connection.synchronise(force: true) }
        return connection
    }

    // MARK: Staying current

    /// Inside a transaction: brings this connection up to the file's current state
    /// when another connection committed since it last looked (or when `force`).
    /// How many times this connection re-read the file's state (tests: a read or
    /// write after this connection's own writes must not need to).
    private(set) var synchronisations = 0

    private func synchronise(force: Bool) throws(SecItemError) {
        let dataVersion = db.fileDataVersion
        guard force || dataVersion != knownDataVersion else { return }
        synchronisations += 1
        let schemaVersion = try db.pragma("schema_version")
        let fresh = try KeychainHeader.read(db)
        if schemaVersion != knownSchemaVersion || fresh.format != header.format {
            try KeychainSchema.check(db, format: fresh.format)
        }
        if fresh.epoch != header.epoch || fresh.format != header.format || fresh.wrappedDataKey != header.wrappedDataKey {
            guard let dataKey = try fresh.unwrap(kek: kek) else {
                throw SecItemError(
                    errSecAuthFailed, "the keychain \(db.path) was rekeyed by another process; open it with the new key")
            }
            codec = RowCodec(keys: try ItemKeys(dataKey: dataKey, format: Int(fresh.format)))
            forgetStatements()
        }
        header = fresh
        if fresh.format >= 2 { commitment = try RowSetState.read(codec.keys, db) }
        knownSchemaVersion = schemaVersion
        knownDataVersion = dataVersion
    }

    /// A read: no BEGIN (one SELECT is its own snapshot); then the data version
    /// says whether the snapshot read is the state this connection knows. If not,
    /// the read runs again inside one snapshot after synchronising.
    func read<R>(_ body: () throws(SecItemError) -> R) throws(SecItemError) -> R {
        if bulk { return try body() }
        let first: Result<R, SecItemError>
        do { first = .success(try body()) } catch { first = .failure(error) }
        if db.fileDataVersion == knownDataVersion { return try first.get() }
        return try db.transaction(write: false) { () throws(SecItemError) -> R in
            try synchronise(force: false)
            return try body()
        }
    }

    /// A write in one `BEGIN IMMEDIATE` transaction: synchronises under the write
    /// lock, upgrades a format-1 file first, and rewrites the state row when the
    /// row set changed. On any failure the connection forgets what it cached.
    func write<R>(_ body: () throws(SecItemError) -> R) throws(SecItemError) -> R {
        let saved = (header, kek, codec, commitment)
        do {
            if bulk { return try writeSteps(body) }
            let result = try db.transaction(write: true) { () throws(SecItemError) -> R in try writeSteps(body) }
            // This commit moved the data version; what this connection holds is that state.
            knownDataVersion = db.fileDataVersion
            return result
        } catch {
            (header, kek, codec, commitment) = saved
            rowSetChanged = false
            forgetState()
            throw error
        }
    }

    private func writeSteps<R>(_ body: () throws(SecItemError) -> R) throws(SecItemError) -> R {
        try synchronise(force: false)
        rowSetChanged = false
        if format < 2 { try rewriteEverything(newKEK: nil, failingAfter: upgradeHooks.failingAfter, stall: upgradeHooks.stall) }
        let result = try body()
        if rowSetChanged {
            commitment.generation = writeVersion
            try RowSetState.write(commitment, keys: codec.keys, db)
            rowSetChanged = false
        }
        return result
    }

    /// Makes the next operation synchronise from the file (after a rollback).
    func forgetState() {
        knownDataVersion = -1
        knownSchemaVersion = -1
    }

    // MARK: Writing rows (format 2)

    /// Adds a row for `item`.
    func insert(_ item: StoredItem) throws(SecItemError) {
        let row = try codec.encode(item, version: writeVersion)
        let stmt = try db.statement(
            "INSERT INTO sealed_items(uuid, class, pk, \(IndexedColumns.columns.joined(separator: ", ")), version, ct) "
                + "VALUES (?, ?, ?, \(IndexedColumns.columns.map { _ in "?" }.joined(separator: ", ")), ?, ?)")
        bindRow(stmt, row)
        do {
            try stmt.run(during: "adding an item")
        } catch where error.status == errSecDuplicateItem {
            throw SecItemError(errSecDuplicateItem, "an item with the same primary key is already in the keychain")
        }
        try commitment.insert(row.element, codec.keys.mac)
        rowSetChanged = true
    }

    /// Rewrites the row `old` with `item`'s contents.
    func rewrite(_ old: Match, with item: StoredItem) throws(SecItemError) {
        try rewrite(old.seq, try codec.encode(item, version: writeVersion), replacing: old.element)
    }

    private func rewrite(_ seq: Int64, _ row: EncodedRow, replacing old: RowSetCommitment.Element?) throws(SecItemError) {
        let sets = (["uuid", "class", "pk"] + IndexedColumns.columns + ["version", "ct"]).map { "\($0) = ?" }
        let stmt = try db.statement("UPDATE sealed_items SET \(sets.joined(separator: ", ")) WHERE seq = ?")
        let n = bindRow(stmt, row)
        stmt.bind(n, seq)
        do {
            try stmt.run(during: "updating an item")
        } catch where error.status == errSecDuplicateItem {
            throw SecItemError(errSecDuplicateItem, "the update would give two items the same primary key")
        }
        guard db.changes == 1 else {
            throw SecItemError(errSecIO, "the row being updated vanished inside its own transaction (the file was altered)")
        }
        if let old { try commitment.remove(old, codec.keys.mac) }
        try commitment.insert(row.element, codec.keys.mac)
        rowSetChanged = true
    }

    /// Deletes the row `old`.
    func remove(_ old: Match) throws(SecItemError) {
        let stmt = try db.statement("DELETE FROM sealed_items WHERE seq = ?")
        stmt.bind(1, old.seq)
        try stmt.run(during: "deleting an item")
        guard db.changes == 1 else {
            throw SecItemError(errSecIO, "the row being deleted vanished inside its own transaction (the file was altered)")
        }
        if let element = old.element { try commitment.remove(element, codec.keys.mac) }
        rowSetChanged = true
    }

    /// Moves rows out of each other's way under the UNIQUE `pk` index (an update
    /// where one row takes a key another is about to give up).
    func park(_ rows: [Match]) throws(SecItemError) {
        let park = try db.statement("UPDATE sealed_items SET pk = uuid WHERE seq = ?")
        for r in rows {
            park.bind(1, r.seq)
            try park.run(during: "updating an item")
        }
    }

    /// Binds uuid … ct in column order from 1; returns the next parameter index.
    @discardableResult
    private func bindRow(_ stmt: Statement, _ row: EncodedRow) -> Int32 {
        stmt.bind(1, row.uuid)
        stmt.bind(2, row.itemClass)
        stmt.bind(3, row.primaryKeyMAC)
        for (i, mac) in row.indexMACs.enumerated() { stmt.bind(Int32(4 + i), mac) }
        let n = Int32(4 + row.indexMACs.count)
        stmt.bind(n, row.version)
        stmt.bind(n + 1, row.sealed)
        return n + 2
    }

    // MARK: Whole-file rewrites: rotation, rekey, upgrade

    /// Inside a write transaction: re-encrypts every row under a fresh data key (and
    /// the current format), reads every row back and compares, builds a new
    /// commitment, and wraps the new key under `newKEK` (or the current one).
    /// A format-1 file is upgraded by the same path: rows move to the format-2 table.
    func rewriteEverything(newKEK: KeyEncryptionKey?, failingAfter: Int?, stall: (() -> Void)? = nil) throws(SecItemError) {
        let scan = try scanAll()
        guard scan.damaged.isEmpty else {
            throw SecItemError(
                errSecDecode,
                "\(scan.damaged.count) damaged rows would be lost (see `secitem verify`); nothing was changed")
        }
        let upgrading = format < 2
        let version = upgrading ? 1 : writeVersion
        let newCodec = RowCodec(keys: try ItemKeys.generate(format: Int(KeychainHeader.formatVersion)))
        var fresh = RowSetCommitment(generation: version)
        if upgrading { try db.execute(KeychainSchema.format2Tables) }
        let insert = try db.statement(
            "INSERT INTO sealed_items(uuid, class, pk, \(IndexedColumns.columns.joined(separator: ", ")), version, ct, seq) "
                + "VALUES (?, ?, ?, \(IndexedColumns.columns.map { _ in "?" }.joined(separator: ", ")), ?, ?, ?)")
        let sets = (["uuid", "class", "pk"] + IndexedColumns.columns + ["version", "ct"]).map { "\($0) = ?" }
        let update = try db.statement("UPDATE sealed_items SET \(sets.joined(separator: ", ")) WHERE seq = ?")
        for (index, match) in scan.items.enumerated() {
            if let failingAfter, index >= failingAfter {
                throw SecItemError(errSecIO, "failure injected while re-encrypting the keychain")
            }
            if index == scan.items.count / 2 { stall?() }
            let row = try newCodec.encode(match.item, version: version)
            let stmt = upgrading ? insert : update
            stmt.bind(bindRow(stmt, row), match.seq)
            try stmt.run(during: upgrading ? "upgrading the keychain" : "re-encrypting the keychain")
            try fresh.insert(row.element, newCodec.keys.mac)
        }
        if upgrading { try db.execute("DROP TABLE items") }
        var newHeader = header
        newHeader.format = KeychainHeader.formatVersion
        newHeader.epoch += 1
        if let newKEK {
            newHeader.protection = newKEK.protection
            newHeader.scrypt = newKEK.scrypt
            newHeader.salt = newKEK.salt
        }
        try newHeader.wrap(newCodec.keys.dataKey, kek: newKEK?.kek ?? kek)
        try newHeader.write(db)
        // From here on this connection reads with the new keys; `write` restores the
        // old ones if anything below fails and the transaction rolls back.
        header = newHeader
        if let newKEK { kek = newKEK.kek }
        codec = newCodec
        forgetStatements()
        commitment = fresh
        try KeychainSchema.check(db, format: header.format)
        let check = try scanAll()
        guard check.damaged.isEmpty, check.items.map(\.item) == scan.items.map(\.item) else {
            throw SecItemError(errSecIO, "the re-encrypted rows did not read back; nothing was changed")
        }
        commitment.generation = version - 1  // writeSteps stamps `version` when it writes the state row
        rowSetChanged = true
        knownSchemaVersion = try db.pragma("schema_version")
    }

    /// Inside a write transaction: wraps the same data key under `newKEK` (`rekey
    /// --rewrap-only`): fast, but an old copy plus the old secret still opens new rows.
    func rewrap(_ newKEK: KeyEncryptionKey) throws(SecItemError) {
        var newHeader = header
        newHeader.protection = newKEK.protection
        newHeader.scrypt = newKEK.scrypt
        newHeader.salt = newKEK.salt
        newHeader.epoch += 1
        try newHeader.wrap(codec.keys.dataKey, kek: newKEK.kek)
        try newHeader.write(db)
        header = newHeader
        kek = newKEK.kek
    }

    // MARK: Reading rows

    /// The SELECT list: seq, then the codec's columns.
    private var selectColumns: String {
        (["seq", "uuid", "class", "pk"] + IndexedColumns.columns + (format >= 2 ? ["version", "ct"] : ["ct"]))
            .joined(separator: ", ")
    }

    /// Decodes the current row of `stmt`. Inside a write that has already changed
    /// rows (the upgrade of a format-1 file, before the statement it runs for), rows
    /// stamped with this write's version are its own, not copies from another file.
    private func decode(_ stmt: Statement) throws(SecItemError) -> RowCodec.Decoded {
        try codec.decode(SelectedRow(stmt: stmt, hasVersion: format >= 2), maxVersion: rowSetChanged ? writeVersion : commitment.generation)
    }

    private func element(_ stmt: Statement, version: Int64) -> RowSetCommitment.Element? {
        guard format >= 2, let uuid = stmt.blob(1), let sealed = stmt.blob(11) else { return nil }
        return RowSetCommitment.Element(uuid: uuid, version: version, sealed: sealed)
    }

    /// Rows matching `query`, oldest first, at most `limit`; with `elements`, each
    /// match carries its commitment element (for a write that replaces it).
    ///
    /// Narrows with the indexed HMAC columns (exact equality only), opens each
    /// candidate and filters with ``ItemQuery/matches(_:)``. Damaged rows are
    /// skipped; when nothing matched and a damaged candidate was seen, throws
    /// `errSecDecode` (the item asked for may be the damaged one).
    func matches(_ query: ItemQuery, limit: Int?, elements: Bool = false) throws(SecItemError) -> [Match] {
        if let limit, limit <= 0 { return [] }
        var out: [Match] = []
        var damaged = 0
        if format >= 2, !elements, query.returnsDataOnly, let itemClass = query.itemClass,
            let key = query.exactPrimaryKey
        {
            // The physical limit: one HMAC, one indexed SELECT, one GCM open; the
            // attributes are authenticated with the box but not built (the caller
            // reads the data alone, and the key matched every attribute asked for).
            let stmt = try byPrimaryKey()
            defer { stmt.reset() }
            let mac = try codec.primaryKeyMAC(key)
            stmt.bind(1, mac)
            guard try stmt.step(during: "searching items") else { return [] }
            guard let (data, id) = try codec.decodeData(SelectedRow(stmt: stmt, hasVersion: true), maxVersion: commitment.generation)
            else {
                throw SecItemError(
                    errSecDecode, "the item's row failed authentication (tampered or damaged); see SQLiteBackend.verify()")
            }
            let item = StoredItem(itemClass: itemClass, id: id, attributes: [:], data: data)
            return [Match(seq: stmt.int64(0), item: item, primaryKeyMAC: mac, element: nil)]
        }
        if !query.accessGroups.isEmpty, let candidates = query.primaryKeyCandidates, candidates.count <= 64 {
            // The query pins the whole primary key: at most one row per candidate,
            // found by the unique `pk` column. Class, group, sync state and key
            // attributes are then equal by construction (the pk column is bound into
            // the box, format 1 also recomputes it), so only the rest is compared.
            let stmt = try byPrimaryKey()
            defer { stmt.reset() }
            for candidate in candidates {
                let mac = try codec.primaryKeyMAC(candidate)
                stmt.bind(1, mac)
                while try stmt.step(during: "searching items") {
                    switch try decode(stmt) {
                    case .item(let item, let version):
                        if query.matchesBeyondPrimaryKey(item) {
                            out.append(Match(seq: stmt.int64(0), item: item, primaryKeyMAC: mac,
                                             element: elements ? element(stmt, version: version) : nil))
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
            let stmt = try db.statement("SELECT \(selectColumns) FROM \(table)\(plan.whereClause) ORDER BY seq")
            defer { stmt.reset() }
            for (i, bind) in plan.binds.enumerated() {
                switch bind {
                case .bytes(let b): stmt.bind(Int32(i + 1), b)
                case .text(let t): stmt.bind(Int32(i + 1), t)
                }
            }
            while try stmt.step(during: "searching items") {
                switch try decode(stmt) {
                case .item(let item, let version):
                    if query.matches(item) {
                        out.append(Match(seq: stmt.int64(0), item: item, primaryKeyMAC: stmt.bytes(3) ?? [],
                                         element: elements ? element(stmt, version: version) : nil))
                    }
                case .damaged:
                    damaged += 1
                }
                if let limit, out.count >= limit { break }
            }
            stmt.reset()
        }
        if out.isEmpty && damaged == 0 && format < 2 {
            // Format 1 only: a miss also opens the rows whose attribute columns alone
            // match. In format 2 a miss is one HMAC and one SELECT: a row whose pk was
            // altered is as absent as a deleted one, and verify names both.
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

    /// `SELECT … WHERE pk = ?`, prepared once per connection and format.
    private var selectByPrimaryKey: Statement?

    private func forgetStatements() {
        selectByPrimaryKey = nil
        probeStatements = [Statement?](repeating: nil, count: 1 << IndexedColumns.attributes.count)
    }

    private func byPrimaryKey() throws(SecItemError) -> Statement {
        if let selectByPrimaryKey { return selectByPrimaryKey }
        let stmt = try db.statement("SELECT \(selectColumns) FROM \(table) WHERE pk = ?")
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
                .map { "\(IndexedColumns.column(for: $0.element)) = ?" }
            stmt = try db.statement(
                "SELECT \(selectColumns) FROM \(table) WHERE \(conditions.joined(separator: " AND ")) ORDER BY seq")
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
            if case .damaged = try decode(stmt) { damaged += 1 }
        }
        return damaged
    }

    /// Every row, decoded or reported damaged, with every row's commitment element.
    func scanAll() throws(SecItemError)
        -> (items: [Match], damaged: [SQLiteBackend.DamagedRow], elements: [(seq: Int64, element: RowSetCommitment.Element)])
    {
        let stmt = try db.statement("SELECT \(selectColumns) FROM \(table) ORDER BY seq")
        defer { stmt.reset() }
        var items: [Match] = []
        var damaged: [SQLiteBackend.DamagedRow] = []
        var elements: [(seq: Int64, element: RowSetCommitment.Element)] = []
        while try stmt.step(during: "reading every item") {
            let seq = stmt.int64(0)
            let version = format >= 2 ? stmt.int64(10) : 0
            if format >= 2, let uuid = stmt.blob(1), let sealed = stmt.blob(11) {
                elements.append((seq, RowSetCommitment.Element(uuid: uuid, version: version, sealed: sealed)))
            }
            switch try decode(stmt) {
            case .item(let item, let version):
                items.append(Match(seq: seq, item: item, primaryKeyMAC: stmt.bytes(3) ?? [],
                                   element: element(stmt, version: version)))
            case .damaged(let reason):
                let u = stmt.bytes(1) ?? []
                let id = u.count == 16 ? u.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) } : nil
                damaged.append(.init(row: seq, id: id, itemClass: stmt.text(2) ?? "", reason: reason))
            }
        }
        return (items, damaged, elements)
    }

    // MARK: Verification

    /// Inside a read transaction: every row, the schema, and (format 2) the row set
    /// against the commitment.
    func verify() throws(SecItemError) -> SQLiteBackend.VerificationReport {
        try synchronise(force: true)
        try KeychainSchema.check(db, format: format)
        let check = try db.statement("PRAGMA quick_check")
        defer { check.reset() }
        var problems: [String] = []
        while try check.step(during: "checking the file") {
            if let line = check.text(0), line != "ok" { problems.append(line) }
        }
        check.reset()
        if !problems.isEmpty {
            throw SecItemError(
                errSecInvalidKeychain, "the keychain file is damaged: \(problems.prefix(3).joined(separator: "; "))")
        }
        let scan = try scanAll()
        var report = SQLiteBackend.VerificationReport(format: Int(format), damaged: scan.damaged)
        guard format >= 2 else { return report }
        report.commitment = try commitmentValue()
        var actual = RowSetCommitment(generation: commitment.generation)
        for (_, element) in scan.elements { try actual.insert(element, codec.keys.mac) }
        if actual.count != commitment.count {
            report.rowCountDifference = Int(actual.count - commitment.count)
        }
        guard actual.cells != commitment.cells else { return report }
        guard let (committed, present) = try commitment.difference(actual, codec.keys.mac) else {
            report.rowSet.append(.init(kind: .unlisted))
            return report
        }
        let seqByElement = Dictionary(scan.elements.map { ($0.element, $0.seq) }, uniquingKeysWith: { a, _ in a })
        var presentByID = Dictionary(present.map { ($0.uuid, $0) }, uniquingKeysWith: { a, _ in a })
        for element in committed.sorted(by: { $0.version < $1.version }) {
            if let found = presentByID.removeValue(forKey: element.uuid) {
                report.rowSet.append(.init(
                    kind: found.version < element.version ? .older : .replaced, id: element.id, row: seqByElement[found],
                    fileVersion: found.version, committedVersion: element.version))
            } else {
                report.rowSet.append(.init(kind: .missing, id: element.id, committedVersion: element.version))
            }
        }
        for element in presentByID.values.sorted(by: { (seqByElement[$0] ?? 0) < (seqByElement[$1] ?? 0) }) {
            report.rowSet.append(.init(kind: .unknown, id: element.id, row: seqByElement[element], fileVersion: element.version))
        }
        return report
    }

    /// The value `secitem verify` prints and `--expect-commitment` compares:
    /// `<generation>:<first 16 bytes of the state MAC, hex>`.
    func commitmentValue() throws(SecItemError) -> String {
        let mac = try commitment.mac(codec.keys.mac)
        return "\(commitment.generation):" + mac.prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    // MARK: Query planning

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
            if query.accessGroups.isEmpty && !query.coversEveryAccessGroup { return nil }
            if !query.coversEveryAccessGroup && query.accessGroups.count <= 16 {
                let groups = query.accessGroups.sorted()
                conditions.append("\(IndexedColumns.accessGroup) IN (\(groups.map { _ in "?" }.joined(separator: ", ")))")
                for g in groups { binds.append(.bytes(try codec.accessGroupMAC(itemClass, g))) }
            }
            switch query.synchronizable {
            case .no, .yes:
                conditions.append("\(IndexedColumns.synchronizable) = ?")
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
                        conditions.append("\(IndexedColumns.column(for: name)) = ?")
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
        guard !query.coversEveryAccessGroup, query.accessGroups.count == 1, let group = query.accessGroups.first,
            query.synchronizable != .any
        else {
            return nil
        }
        var attributes = query.attributes
        attributes[SecConstant.kSecAttrAccessGroup] = .string(group)
        attributes[SecConstant.kSecAttrSynchronizable] = .number(query.synchronizable == .yes ? 1 : 0)
        guard itemClass.primaryKeyAttributes.allSatisfy({ attributes[$0] != nil }) else { return nil }
        // Not a probe StoredItem: its UUID() would read /dev/urandom on every lookup.
        return try codec.primaryKeyMAC(PrimaryKey(itemClass: itemClass, attributes: attributes))
    }
}

/// The current row of a SELECT of ``SQLiteConnection``'s columns, as the codec reads it.
struct SelectedRow: RowColumns {
    let stmt: Statement
    let hasVersion: Bool

    var uuid: UnsafeRawBufferPointer? { stmt.blob(1) }
    var itemClass: String? { stmt.text(2) }
    var primaryKeyMAC: UnsafeRawBufferPointer? { stmt.blob(3) }
    func indexMAC(_ index: Int) -> UnsafeRawBufferPointer? { stmt.blob(Int32(4 + index)) }
    var version: Int64 { hasVersion ? stmt.int64(10) : 0 }
    var sealed: UnsafeRawBufferPointer? { stmt.blob(hasVersion ? 11 : 10) }
}

/// The `state` row (format 2): generation, row count and commitment cells, sealed
/// by an HMAC under the data key's HMAC key.
enum RowSetState {
    static func write(_ commitment: RowSetCommitment, keys: ItemKeys, _ db: Database) throws(SecItemError) {
        let stmt = try db.statement(
            "INSERT OR REPLACE INTO state(id, generation, count, cells, mac) VALUES (1, ?, ?, ?, ?)")
        stmt.bind(1, commitment.generation)
        stmt.bind(2, commitment.count)
        stmt.bind(3, commitment.cells)
        stmt.bind(4, try commitment.mac(keys.mac))
        try stmt.run(during: "writing the row-set commitment")
    }

    /// Reads and authenticates the state row.
    /// - Throws: `errSecInvalidKeychain` when it is missing or was altered.
    static func read(_ keys: ItemKeys, _ db: Database) throws(SecItemError) -> RowSetCommitment {
        let stmt = try db.statement("SELECT generation, count, cells, mac FROM state WHERE id = 1")
        defer { stmt.reset() }
        guard try stmt.step(during: "reading the row-set commitment") else {
            throw SecItemError(errSecInvalidKeychain, "the keychain \(db.path) lost its row-set commitment (altered outside secitem)")
        }
        guard let commitment = RowSetCommitment(generation: stmt.int64(0), count: stmt.int64(1), cells: stmt.bytes(2) ?? []),
            let stored = stmt.bytes(3), stored == (try commitment.mac(keys.mac))
        else {
            throw SecItemError(
                errSecInvalidKeychain,
                "the keychain \(db.path) was altered outside secitem: its row-set commitment does not authenticate")
        }
        return commitment
    }
}
