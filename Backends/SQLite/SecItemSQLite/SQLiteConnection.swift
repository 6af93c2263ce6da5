import Foundation
import SecItemCore

/// One open keychain: the SQLite connection and the keys. Used under the
/// backend's mutex only.
final class SQLiteConnection {
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

    static func open(_ configuration: SQLiteBackend.Configuration) throws(SecItemError) -> SQLiteConnection {
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
        return SQLiteConnection(db: db, header: header, kek: kek.kek, codec: RowCodec(keys: try ItemKeys(dataKey: dataKey)))
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
