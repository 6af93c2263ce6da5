import Foundation
import SecItemCore
import SecItemSealedStore

/// The prepared statements of searches, made once per connection and format.
struct SearchStatements {
    /// The damage probes of ``SQLiteConnection/damagedCandidates(_:)``, by the mask of
    /// attributes they test.
    var probes = [Statement?](repeating: nil, count: 1 << IndexedColumns.attributes.count)
    /// `SELECT … WHERE pk = ?`.
    var byPrimaryKey: Statement?
    /// The lookup returning data alone (``SQLiteConnection/dataByPrimaryKey(_:group:synchronizable:)``).
    var dataByPrimaryKey: Statement?
    /// What that statement's parameters hold beside the key's HMAC, `nil` before they are bound.
    var dataLookupBinding: DataLookupBinding?
}

/// The class, access group and sync state whose columns the data-by-primary-key statement
/// is bound to, and the keys their HMACs were computed with (held, so that keys made later,
/// after a rekey, are never mistaken for them).
struct DataLookupBinding {
    let keys: ItemKeys
    let itemClass: ItemClass
    let group: String
    let synchronizable: Bool

    func holds(_ keys: ItemKeys, _ itemClass: ItemClass, _ group: String, _ synchronizable: Bool) -> Bool {
        self.keys === keys && self.itemClass == itemClass && self.synchronizable == synchronizable && self.group == group
    }
}

/// Finding rows by a query: planned onto the HMAC columns, each candidate opened and
/// filtered with the core's matcher.
extension SQLiteConnection {
    /// The SELECT list: seq, then the codec's columns.
    var selectColumns: String {
        (["seq", "uuid", "class", "pk"] + IndexedColumns.columns + (format >= 2 ? ["version", "ct"] : ["ct"]))
            .joined(separator: ", ")
    }

    /// Decodes the current row of `stmt`. Inside a write that has already changed
    /// rows (the upgrade of a format-1 file, before the statement it runs for), rows
    /// stamped with this write's version are its own, not copies from another file.
    func decode(_ stmt: Statement) throws(SecItemError) -> RowCodec.Decoded {
        try codec.decode(SelectedRow(stmt: stmt, hasVersion: format >= 2), maxVersion: rowSetChanged ? writeVersion : commitment.generation)
    }

    func element(_ stmt: Statement, version: Int64) -> RowSetCommitment.Element? {
        guard format >= 2, let uuid = stmt.blob(1), let sealed = stmt.blob(11) else { return nil }
        return RowSetCommitment.Element(uuid: uuid, version: version, sealed: sealed)
    }

    /// Rows matching `query`, oldest first, at most `limit`; with `elements`, each
    /// match carries its commitment element (for a write that replaces it).
    ///
    /// Narrows with the indexed HMAC columns (exact equality only), opens each
    /// candidate and filters with ``ItemQuery/matches(_:)``. Damaged rows are
    /// skipped by a search for every match (`limit` nil); when nothing matched and a
    /// damaged candidate was seen, or a search for a limited number of items meets
    /// one before it has its items, throws `errSecDecode`: the item asked for may be
    /// the damaged one, and the next one in order must not be handed out in its place.
    func matches(_ query: ItemQuery, limit: Int?, elements: Bool = false) throws(SecItemError) -> [Match] {
        if let limit, limit <= 0 { return [] }
        var out: [Match] = []
        var damaged = 0
        if !elements, let found = try dataAlone(query) {
            return found.map { [Match(seq: $0.seq, item: $0.item, primaryKeyMAC: [], element: nil)] } ?? []
        }
        guard let filter = try RowFilter(query, codec) else { return [] }
        if filter.byPrimaryKey {
            // The query pins the whole primary key: at most one row per candidate,
            // found by the unique `pk` column. Class, group, sync state and key
            // attributes are then equal by construction (the pk column is bound into
            // the box, format 1 also recomputes it), so only the rest is compared.
            // SQLite takes the row the `pk` index points at without comparing its `pk`
            // column, and reads do not run the integrity check: a damaged index could
            // point at another item's row. When SQLite gives the index's copy of `pk`,
            // that row's box (bound to its own pk) fails to open; when it gives the row's,
            // this comparison refuses it.
            let stmt = try byPrimaryKey()
            defer { stmt.reset() }
            for mac in filter.primaryKeys {
                stmt.bind(1, mac)
                while try stmt.step(during: "searching items") {
                    guard let found = stmt.blob(3), found.elementsEqual(mac) else {
                        throw SecItemError(
                            errSecInvalidKeychain,
                            "the keychain \(db.path) is damaged or was altered outside secitem: its primary-key index "
                                + "points at another item's row. Nothing was written. Restore the file from a backup")
                    }
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
            if damaged > 0, limit != nil { throw Self.damagedCandidate(damaged) }
            if out.count > 1 { out.sort { $0.seq < $1.seq } }
            if let limit, out.count > limit { out.removeLast(out.count - limit) }
        } else {
            let stmt = try db.statement("SELECT \(selectColumns) FROM \(table)\(Self.whereClause(filter)) ORDER BY seq")
            defer { stmt.reset() }
            for (i, bind) in filter.conditions.flatMap(\.values).enumerated() {
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
                    if limit != nil { throw Self.damagedCandidate(damaged) }
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

    /// The items `query` matches, oldest first, at most `limit`: ``matches(_:limit:elements:)``
    /// without the rows' bookkeeping (a read's answer, made once).
    func items(_ query: ItemQuery, limit: Int?) throws(SecItemError) -> [StoredItem] {
        if let limit, limit <= 0 { return [] }
        if let found = try dataAlone(query) { return found.map { [$0.item] } ?? [] }
        return try matches(query, limit: limit).map(\.item)
    }

    /// A search returning the data alone by an exact primary key (``ItemProjection/dataAndAccess``,
    /// format 2 or later): the found row's `seq` and item, `.some(nil)` for a miss; `nil`
    /// when the query is not of that shape.
    private func dataAlone(_ query: ItemQuery) throws(SecItemError) -> (seq: Int64, item: StoredItem)?? {
        guard format >= 2, query.projection == .dataAndAccess, let itemClass = query.itemClass,
            let group = query.accessGroups.first
        else { return nil }
        // The key's HMAC straight from its bytes on the stack, into the bound parameters.
        let codec = self.codec, known = knownKeyColumns.baseAddress!
        var failure: SecItemError?
        let exact = query.withExactPrimaryKeyBytes { bytes in
            do throws(SecItemError) { try codec.primaryKeyMAC(bytes: bytes, into: known) } catch { failure = error }
        }
        guard exact else { return nil }
        if let failure { throw failure }
        return .some(try dataByPrimaryKey(itemClass, group: group, synchronizable: query.synchronizable == .yes))
    }

    private static func damagedCandidate(_ count: Int) -> SecItemError {
        SecItemError(
            errSecDecode,
            "\(count) candidate row(s) failed authentication (tampered or damaged) before the items asked for were "
                + "found; see SQLiteBackend.verify()")
    }

    /// The physical limit of a lookup returning the data alone: one HMAC, one indexed
    /// SELECT, one GCM open; of the attributes (all authenticated with the box) only the
    /// access check's are built (the caller reads the data, and the key matched every
    /// attribute asked for).
    ///
    /// The row is found by its primary-key HMAC, so its `pk` column is that HMAC; its
    /// class, access group and sync state are the key's. Those columns are compared
    /// with what the key gives inside the SELECT (one integer comes back, not three
    /// copies: SQLite copies every text and blob column it returns), and the box's
    /// associated data is built from the known values: a row whose columns differ
    /// fails as damaged (`errSecDecode`), exactly as its box would fail to open.
    ///
    /// The key's HMAC is already in the first 32 bytes of ``knownKeyColumns``.
    private func dataByPrimaryKey(_ itemClass: ItemClass, group: String, synchronizable: Bool)
        throws(SecItemError) -> (seq: Int64, item: StoredItem)?
    {
        let stmt = try dataByPrimaryKeyStatement()
        // Its parameters point into knownKeyColumns (bound in place, kept at reset): the
        // key's HMAC there is this lookup's; the rest is bound again only when it changes.
        defer { stmt.resetKeepingBindings() }
        let raw = UnsafeRawBufferPointer(knownKeyColumns)
        if !(searches.dataLookupBinding?.holds(codec.keys, itemClass, group, synchronizable) ?? false) {
            try bindKnownColumns(stmt, itemClass, group: group, synchronizable: synchronizable)
        }
        guard try stmt.step(during: "searching items") else { return nil }
        let row = KnownKeyRow(stmt: stmt, itemClass: itemClass.rawValue, known: raw)
        guard stmt.int64(2) == 1,
            let (data, id, attributes) = try codec.decodeData(row, maxVersion: commitment.generation)
        else {
            throw SecItemError(
                errSecDecode, "the item's row failed authentication (tampered or damaged); see SQLiteBackend.verify()")
        }
        let item = StoredItem(itemClass: itemClass, id: id, attributes: attributes, data: data)
        return (stmt.int64(0), item)
    }

    /// Writes the access-group and sync HMACs and the class of `itemClass`, `group` and
    /// `synchronizable` into ``knownKeyColumns`` after the key's HMAC, binds the
    /// data-by-primary-key statement's four parameters to them in place, and records what
    /// they hold (``SearchStatements/dataLookupBinding``).
    private func bindKnownColumns(_ stmt: Statement, _ itemClass: ItemClass, group: String, synchronizable: Bool)
        throws(SecItemError)
    {
        searches.dataLookupBinding = nil
        let base = knownKeyColumns.baseAddress!
        try codec.accessGroupMAC(itemClass, group).withUnsafeBufferPointer { base.advanced(by: 32).update(from: $0.baseAddress!, count: 32) }
        try codec.syncMAC(itemClass, synchronizable).withUnsafeBufferPointer { base.advanced(by: 64).update(from: $0.baseAddress!, count: 32) }
        var classLength = 0
        for byte in itemClass.rawValue.utf8.prefix(8) {
            base[96 + classLength] = byte
            classLength += 1
        }
        let raw = UnsafeRawBufferPointer(knownKeyColumns)
        stmt.bindStatic(1, UnsafeRawBufferPointer(rebasing: raw[0..<32]))
        stmt.bindStaticText(2, UnsafeRawBufferPointer(rebasing: raw[96..<96 + classLength]))
        stmt.bindStatic(3, UnsafeRawBufferPointer(rebasing: raw[32..<64]))
        stmt.bindStatic(4, UnsafeRawBufferPointer(rebasing: raw[64..<96]))
        searches.dataLookupBinding = DataLookupBinding(
            keys: codec.keys, itemClass: itemClass, group: group, synchronizable: synchronizable)
    }

    private func dataByPrimaryKeyStatement() throws(SecItemError) -> Statement {
        if let known = searches.dataByPrimaryKey { return known }
        let stmt = try db.statement(
            "SELECT seq, uuid, class = ?2 AND h_agrp = ?3 AND h_sync = ?4, "
                + IndexedColumns.attributes.map(IndexedColumns.column(for:)).joined(separator: ", ")
                + ", version, ct FROM \(table) WHERE pk = ?1")
        searches.dataByPrimaryKey = stmt
        return stmt
    }

    /// Drops the prepared searches (the keys or the format changed).
    func forgetStatements() {
        searches = SearchStatements()
    }

    private func byPrimaryKey() throws(SecItemError) -> Statement {
        if let known = searches.byPrimaryKey { return known }
        let stmt = try db.statement("SELECT \(selectColumns) FROM \(table) WHERE pk = ?")
        searches.byPrimaryKey = stmt
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
        if let known = searches.probes[shape] {
            stmt = known
        } else {
            let conditions = IndexedColumns.attributes.enumerated().filter { shape & (1 << $0.offset) != 0 }
                .map { "\(IndexedColumns.column(for: $0.element)) = ?" }
            stmt = try db.statement(
                "SELECT \(selectColumns) FROM \(table) WHERE \(conditions.joined(separator: " AND ")) ORDER BY seq")
            searches.probes[shape] = stmt
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

    /// The WHERE clause of a filter (empty for none), its values bound in order.
    private static func whereClause(_ filter: RowFilter) -> String {
        guard !filter.conditions.isEmpty else { return "" }
        return " WHERE " + filter.conditions.map { condition in
            condition.values.count == 1
                ? "\(condition.column) = ?"
                : "\(condition.column) IN (\(condition.values.map { _ in "?" }.joined(separator: ", ")))"
        }.joined(separator: " AND ")
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
    var seq: Int64? { stmt.int64(0) }
}

/// The current row of ``SQLiteConnection``'s data-by-primary-key SELECT, with the
/// columns the key determines (pk, class, access group, sync state) taken from what
/// the lookup computed and the SELECT compared (`known`: the three HMACs, 32 bytes each).
struct KnownKeyRow: RowColumns {
    let stmt: Statement
    let itemClass: String?
    let known: UnsafeRawBufferPointer

    var uuid: UnsafeRawBufferPointer? { stmt.blob(1) }
    var primaryKeyMAC: UnsafeRawBufferPointer? { UnsafeRawBufferPointer(rebasing: known[0..<32]) }
    func indexMAC(_ index: Int) -> UnsafeRawBufferPointer? {
        let attributes = IndexedColumns.attributes.count
        if index < attributes { return stmt.blob(Int32(3 + index)) }
        return index == attributes
            ? UnsafeRawBufferPointer(rebasing: known[32..<64]) : UnsafeRawBufferPointer(rebasing: known[64..<96])
    }
    var version: Int64 { stmt.int64(Int32(3 + IndexedColumns.attributes.count)) }
    var sealed: UnsafeRawBufferPointer? { stmt.blob(Int32(4 + IndexedColumns.attributes.count)) }
    var seq: Int64? { stmt.int64(0) }
}
