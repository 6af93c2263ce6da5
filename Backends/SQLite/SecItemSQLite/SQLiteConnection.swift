import Foundation
import SecItemCore
import SecItemSealedStore

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
    /// The schema version last checked (set by a pooled reader's opening, from the backend's).
    var knownSchemaVersion: Int64 = -1
    /// Inside a write: whether the row set changed (the state row is then rewritten).
    private(set) var rowSetChanged = false
    /// Inside a write: whether a row was deleted or replaced (the WAL is then emptied
    /// after the commit, so it does not keep the old row's pages).
    private var rowsReplaced = false
    /// The damage probes of ``damagedCandidates(_:)``, by the mask of attributes they
    /// test (SQLiteConnection+Reading.swift).
    var probeStatements = [Statement?](repeating: nil, count: 1 << IndexedColumns.attributes.count)
    /// `SELECT … WHERE pk = ?`, prepared once per connection and format.
    var selectByPrimaryKey: Statement?
    /// The lookup returning data alone (SQLiteConnection+Reading.swift), prepared once per connection and format.
    var selectDataByPrimaryKey: Statement?
    /// Its bound parameters, which must stay put until the statement is reset: the
    /// primary-key, access-group and sync HMACs (32 bytes each; not secret: the file's
    /// columns hold them), then the class name (up to 8 bytes).
    let knownKeyColumns = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 104)
    /// ``SQLiteBackend/Configuration/openIntegrityCheckItemLimit``.
    var integrityCheckItemLimit = 10_000
    /// The rollback evidence: each new state of the file against this host's high-water mark.
    let rollback: RollbackCheck
    /// Inside a write: the state it wrote, recorded as the mark once committed.
    private var writtenState: HighWaterMark?
    /// Tests only: a failure injected, or a pause, in the middle of an upgrade.
    var upgradeHooks: (failingAfter: Int?, stall: (() -> Void)?) = (nil, nil)

    var format: Int64 { header.format }
    var table: String { KeychainSchema.itemsTable(format: format) }
    /// The version rows written by the current write transaction get.
    var writeVersion: Int64 { commitment.generation + 1 }

    struct Match {
        var seq: Int64
        var item: StoredItem
        var primaryKeyMAC: [UInt8]
        /// Format 2, when asked for: the row as the commitment counts it.
        var element: RowSetCommitment.Element?
    }

    deinit { knownKeyColumns.deallocate() }

    init(db: Database, header: KeychainHeader, kek: SecretBytes, codec: RowCodec, rollback: RollbackCheck) {
        self.db = db
        self.rollback = rollback
        self.header = header
        self.kek = kek
        self.codec = codec
        commitment = RowSetCommitment(generation: 0)
    }

    static func open(_ configuration: SQLiteBackend.Configuration) throws(SecItemError) -> SQLiteConnection {
        let created = try KeychainCreation.createIfMissing(configuration)
        let db = try Database(
            path: configuration.path, busyTimeoutMilliseconds: Int32(clamping: configuration.busyTimeoutMilliseconds))
        // Read the header and check the schema before anything that could write, so a
        // file that is not a keychain (an empty file included), or one someone planted
        // triggers in, is left exactly as it was.
        let (header, checkedSchema) = try db.transaction(write: false) { () throws(SecItemError) in
            let header = try KeychainHeader.read(db)
            try KeychainSchema.check(db, format: header.format)
            try KeychainSchema.checkIndexRoots(db, format: header.format)
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
        let kek = try KeyEncryptionKey.forExisting(configuration.keySource, configuration.keyContext, header: header)
        guard let dataKey = try header.unwrap(kek: kek.kek) else {
            let what = header.protection == .passphrase ? "passphrase" : "key"
            throw SecItemError(errSecAuthFailed, "the \(what) does not unlock the keychain \(configuration.path)")
        }
        let connection = SQLiteConnection(
            db: db, header: header, kek: kek.kek,
            codec: RowCodec(keys: try ItemKeys(dataKey: dataKey, format: Int(header.format))),
            rollback: RollbackCheck.make(
                mode: configuration.rollbackCheck, witness: configuration.rollbackWitness, keySource: configuration.keySource,
                store: witnessed(configuration.path), environment: configuration.environment ?? ProcessInfo.processInfo.environment))
        // The schema just checked need not be checked again unless it changed since.
        connection.knownSchemaVersion = checkedSchema
        connection.integrityCheckItemLimit = configuration.openIntegrityCheckItemLimit
        try connection.rollback.prime()
        try db.transaction(write: false) { () throws(SecItemError) in
            if created, connection.rollback.mode != .off, let state = try connection.currentState() {
                // This process made the keychain (none was there): its first state is the
                // host's mark, logged, whatever the mark said of a keychain once at this path.
                _ = try connection.rollback.accept(state, note: "created a new keychain (none was at this path)")
            } else {
                try connection.synchronise(force: true)
            }
            try connection.checkIndexesAgreeWithRows()
        }
        return connection
    }

    /// The file as the rollback evidence names it: its canonical path (the file exists by now).
    static func witnessed(_ path: String) -> WitnessedStore {
        let canonical = realpath(path, nil).map { p in
            defer { free(p) }
            return String(cString: p)
        } ?? path
        return WitnessedStore(identity: "file " + canonical, location: path)
    }

    /// The state the rollback evidence compares: generation, digest, store id.
    private func observed(_ mac: [UInt8]) -> HighWaterMark {
        HighWaterMark(generation: commitment.generation, digest: Array(mac.prefix(16)), storeID: header.storeID)
    }

    // MARK: Staying current

    /// Inside a transaction: brings this connection up to the file's current state
    /// when another connection committed since it last looked (or when `force`).
    /// How many times this connection re-read the file's state (tests: a read or
    /// write after this connection's own writes must not need to).
    private(set) var synchronisations = 0

    /// A format-2 state read is compared with the high-water mark (``RollbackCheck``)
    /// before this connection takes it as known; `checking: false` only for the
    /// operator's acceptance of a restore.
    func synchronise(force: Bool, checking: Bool = true) throws(SecItemError) {
        let dataVersion = db.fileDataVersion
        guard force || dataVersion != knownDataVersion else { return }
        synchronisations += 1
        let schemaVersion = try db.pragma("schema_version")
        let fresh = try KeychainHeader.read(db)
        let schemaChanged = schemaVersion != knownSchemaVersion || fresh.format != header.format
        if schemaChanged {
            try KeychainSchema.check(db, format: fresh.format)
            try KeychainSchema.checkIndexRoots(db, format: fresh.format)
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
        if fresh.format >= 2 {
            let mac: [UInt8]
            (commitment, mac) = try RowSetState.read(codec.keys, db)
            if checking && !bulk { try rollback.check(observed(mac)) }
        }
        knownSchemaVersion = schemaVersion
        knownDataVersion = dataVersion
        if schemaChanged && !force { try checkIndexesAgreeWithRows() }
    }

    /// On open and after a schema change: every index entry of the items table against
    /// its row (`PRAGMA integrity_check(sealed_items)`), when the store holds at most
    /// ``SQLiteBackend/Configuration/openIntegrityCheckItemLimit`` rows (the committed
    /// count; a format-1 file is always checked). Larger stores get the index-root check
    /// alone here, and the full check in `verify`.
    func checkIndexesAgreeWithRows() throws(SecItemError) {
        guard format < 2 || commitment.count <= Int64(integrityCheckItemLimit) else { return }
        try KeychainSchema.checkIntegrity(db, table: table)
    }

    /// A read: no BEGIN (one SELECT is its own snapshot); then the data version
    /// says whether the snapshot read is the state this connection knows. If not,
    /// the read runs again inside one snapshot after synchronising.
    func read<R>(_ body: () throws(SecItemError) -> R) throws(SecItemError) -> R {
        if bulk { return try body() }
        let first: Result<R, SecItemError>
        do { first = .success(try body()) } catch { first = .failure(error) }
        if db.fileDataVersion == knownDataVersion { return try first.get() }
        // Another connection committed: the state read next is checked against a mark
        // read before its snapshot begins (RollbackCheck says why).
        try rollback.prime()
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
            rowsReplaced = false
            writtenState = nil
            let result = try db.transaction(write: true) { () throws(SecItemError) -> R in try writeSteps(body) }
            // This commit moved the data version; what this connection holds is that state.
            knownDataVersion = db.fileDataVersion
            // Only now, committed, may the state become this host's mark.
            if let state = writtenState {
                writtenState = nil
                rollback.committed(state)
            }
            if rowsReplaced {
                // secure_delete zeroed the old contents in the pages this commit wrote;
                // the WAL still holds the pages as they were before. Empty it now
                // (without waiting: when another connection reads, the next checkpoint
                // or the last close does it).
                rowsReplaced = false
                db.checkpointTruncate()
            }
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
        if format < KeychainHeader.fileFormatVersion {
            try rewriteEverything(newKEK: nil, failingAfter: upgradeHooks.failingAfter, stall: upgradeHooks.stall)
        }
        let result = try body()
        if rowSetChanged {
            commitment.generation = writeVersion
            let mac = try RowSetState.write(commitment, keys: codec.keys, db)
            if !bulk { writtenState = observed(mac) }
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

    /// Adds a row for `item`, after the last row (its `seq`, bound into the box from
    /// format 3, is chosen here, under the write lock: the largest plus one, as SQLite
    /// would choose it).
    func insert(_ item: StoredItem) throws(SecItemError) {
        let next = try db.statement("SELECT coalesce(max(seq), 0) + 1 FROM sealed_items")
        _ = try next.step(during: "adding an item")
        let seq = next.int64(0)
        next.reset()
        let row = try codec.encode(item, version: writeVersion, seq: seq)
        let stmt = try db.statement(
            "INSERT INTO sealed_items(uuid, class, pk, \(IndexedColumns.columns.joined(separator: ", ")), version, ct, seq) "
                + "VALUES (?, ?, ?, \(IndexedColumns.columns.map { _ in "?" }.joined(separator: ", ")), ?, ?, ?)")
        stmt.bind(bindRow(stmt, row), seq)
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
        try rewrite(old.seq, try codec.encode(item, version: writeVersion, seq: old.seq), replacing: old.element)
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
        rowsReplaced = true
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
        rowsReplaced = true
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
        var scan = try scanAll()
        // Every item was decrypted: zero their data once the rewrite is done or failed.
        defer { for i in scan.items.indices { scan.items[i].item.wipeData() } }
        guard scan.damaged.isEmpty else {
            throw SecItemError(
                errSecDecode,
                "\(scan.damaged.count) damaged rows would be lost (see `secitem verify`); nothing was changed")
        }
        let upgrading = format < 2  // rows move from format 1's table to sealed_items
        let version = upgrading ? 1 : writeVersion
        let newCodec = RowCodec(keys: try ItemKeys.generate(format: Int(KeychainHeader.fileFormatVersion)))
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
            let row = try newCodec.encode(match.item, version: version, seq: match.seq)
            let stmt = upgrading ? insert : update
            stmt.bind(bindRow(stmt, row), match.seq)
            try stmt.run(during: upgrading ? "upgrading the keychain" : "re-encrypting the keychain")
            try fresh.insert(row.element, newCodec.keys.mac)
        }
        if upgrading { try db.execute("DROP TABLE items") }
        var newHeader = header
        newHeader.format = KeychainHeader.fileFormatVersion
        newHeader.epoch += 1
        if let newKEK { newHeader.protect(with: newKEK) }
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
        var check = try scanAll()
        defer { for i in check.items.indices { check.items[i].item.wipeData() } }
        // Compared in place (mapped copies would leave short item data behind unwiped).
        var same = check.items.count == scan.items.count
        for i in check.items.indices where same { same = check.items[i].item == scan.items[i].item }
        guard check.damaged.isEmpty, same else {
            throw SecItemError(errSecIO, "the re-encrypted rows did not read back; nothing was changed")
        }
        commitment.generation = version - 1  // writeSteps stamps `version` when it writes the state row
        rowSetChanged = true
        rowsReplaced = true
        knownSchemaVersion = try db.pragma("schema_version")
    }

    /// Inside a write transaction: wraps the same data key under `newKEK` (`rekey
    /// --rewrap-only`): fast, but an old copy plus the old secret still opens new rows.
    func rewrap(_ newKEK: KeyEncryptionKey) throws(SecItemError) {
        var newHeader = header
        newHeader.protect(with: newKEK)
        newHeader.epoch += 1
        try newHeader.wrap(codec.keys.dataKey, kek: newKEK.kek)
        try newHeader.write(db)
        header = newHeader
        kek = newKEK.kek
    }
}
