import Foundation
import SecItemCore
import SecItemSealedStore

/// The rows of an open PostgreSQL keychain: writing, finding, scanning and verifying them,
/// and planning a query into SQL conditions.
extension PostgreSQLSession {
    struct Match {
        var seq: Int64
        var item: StoredItem
        var primaryKeyMAC: [UInt8]
        /// The row as the row-set commitment counts it.
        var element: RowSetCommitment.Element
    }

    /// One row of a result whose first two columns are the key epoch and the
    /// committed generation, read in place (columns as ``SQL/columns``).
    struct Row: RowColumns {
        let result: PQResult
        let row: Int
        var uuid: UnsafeRawBufferPointer? { result.bytes(row, 3) }
        var itemClass: String? { result.text(row, 4) }
        var primaryKeyMAC: UnsafeRawBufferPointer? { result.bytes(row, 5) }
        func indexMAC(_ index: Int) -> UnsafeRawBufferPointer? { result.bytes(row, 6 + index) }
        var version: Int64 { result.int64(row, 6 + IndexedColumns.columns.count) ?? -1 }
        var sealed: UnsafeRawBufferPointer? { result.bytes(row, 7 + IndexedColumns.columns.count) }
        var seq: Int64? { result.int64(row, 2) }

        var element: RowSetCommitment.Element {
            RowSetCommitment.Element(
                uuid: uuid.map { Array($0) } ?? [], version: version,
                sealed: sealed ?? UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }

    /// The values of a row's columns for ``SQL/insert`` and ``SQL/rewrite``.
    func rowValues(_ row: EncodedRow) -> [PQValue] {
        var out: [PQValue] = [.bytes(row.uuid), .text(row.itemClass), .bytes(row.primaryKeyMAC)]
        for mac in row.indexMACs { out.append(mac.map { .bytes($0) } ?? .null) }
        out.append(.int64(row.version))
        out.append(.bytes(row.sealed))
        return out
    }

    /// Inside a write: adds an item's row.
    func insert(_ item: StoredItem) throws(SecItemError) {
        let row = try codec.encode(item, version: writeVersion)
        try change(sql.insert, rowValues(row), rows: 1, "adding an item")
        try commitment.insert(row.element, codec.keys.mac)
    }

    /// Inside a write: replaces a row's contents, keeping its place in the order.
    func rewrite(_ old: Match, with item: StoredItem) throws(SecItemError) {
        let row = try codec.encode(item, version: writeVersion)
        try change(sql.rewrite, rowValues(row) + [.int64(old.seq)], rows: 1, "updating an item")
        try commitment.remove(old.element, codec.keys.mac)
        try commitment.insert(row.element, codec.keys.mac)
    }

    /// Inside a write: deletes rows.
    func remove(_ doomed: [Match]) throws(SecItemError) {
        try change(sql.delete, [.text(Self.arrayLiteral(doomed.map(\.seq)))], rows: doomed.count, "deleting items")
        for match in doomed { try commitment.remove(match.element, codec.keys.mac) }
    }

    /// Rows matching `query`, oldest first, at most `limit`. Outside a write
    /// (`inWrite: false`) one statement reads the key epoch and the committed
    /// generation with the rows, so rows, keys and generation come from one
    /// snapshot; a row newer than the committed generation was put there from
    /// elsewhere and counts as damaged.
    /// - Throws: `errSecDecode` when nothing matched and a candidate row was damaged.
    func matches(_ query: ItemQuery, limit: Int?, inWrite: Bool) throws(SecItemError) -> [Match] {
        if let limit, limit <= 0 { return [] }
        guard let plan = try plan(query) else {
            if !inWrite, try currentEpoch(lock: false) != header.epoch { throw staleKeys() }
            return []
        }
        let statement = inWrite ? sql.selectInWrite(plan.conditions) : sql.selectWithEpoch(plan.conditions)
        let r = try exec(statement, plan.values)
        var maxVersion = commitment.generation
        if !inWrite {
            guard r.rows >= 1, let epoch = r.int64(0, 0), let generation = r.int64(0, 1) else {
                throw SecItemError(errSecInvalidKeychain, "the PostgreSQL keychain lost its key epoch or its state row")
            }
            if epoch != header.epoch { throw staleKeys() }
            maxVersion = generation
            try observeRead(HighWaterMark(
                generation: generation, digest: Array((r.array(0, SQL.columns.count + 2) ?? []).prefix(16)),
                storeID: header.storeID))
        }
        var out: [Match] = []
        var damaged = 0
        for i in 0..<r.rows {
            let row = Row(result: r, row: i)
            guard let seq = row.seq else { continue }
            switch try codec.decode(row, maxVersion: maxVersion) {
            case .item(let item, _):
                let wanted = plan.byPrimaryKey ? query.matchesBeyondPrimaryKey(item) : query.matches(item)
                if wanted {
                    out.append(Match(seq: seq, item: item, primaryKeyMAC: r.array(i, 5) ?? [], element: row.element))
                }
            case .damaged:
                damaged += 1
            }
            if let limit, out.count >= limit { break }
        }
        if out.isEmpty && damaged > 0 {
            throw SecItemError(
                errSecDecode, "\(damaged) candidate row(s) failed authentication (tampered or damaged); see verify()")
        }
        return out
    }

    /// Every row (inside a write): decoded, with the elements of all rows, and the
    /// number that cannot be opened.
    func scanAll(maxVersion: Int64) throws(SecItemError)
        -> (items: [Match], elements: [RowSetCommitment.Element], damaged: Int)
    {
        try scan(exec(sql.selectInWrite([])), maxVersion: maxVersion)
    }

    func scan(_ r: PQResult, maxVersion: Int64) throws(SecItemError)
        -> (items: [Match], elements: [RowSetCommitment.Element], damaged: Int)
    {
        var items: [Match] = []
        // Room for every row at once: a growing array would leave copies of short
        // (inline) item data behind in the buffers it outgrew, beyond any wiping.
        items.reserveCapacity(r.rows)
        var elements: [RowSetCommitment.Element] = []
        var damaged = 0
        for i in 0..<r.rows {
            let row = Row(result: r, row: i)
            guard let seq = row.seq else { continue }
            elements.append(row.element)
            switch try codec.decode(row, maxVersion: maxVersion) {
            case .item(let item, _):
                items.append(Match(seq: seq, item: item, primaryKeyMAC: r.array(i, 5) ?? [], element: row.element))
            case .damaged: damaged += 1
            }
        }
        return (items, elements, damaged)
    }

    /// Checks the tables, every row and the row-set commitment, in one snapshot.
    /// - Returns: What is wrong, one line each (empty when all is well), and the
    ///   commitment value `<generation>:<first 16 bytes of its MAC, hex>`, as the
    ///   file backend prints it (empty when the commitment does not authenticate).
    func verify() throws(SecItemError) -> (problems: [String], commitment: String) {
        try rollback.prime()
        _ = try exec("BEGIN ISOLATION LEVEL REPEATABLE READ")
        do throws(SecItemError) {
            let state = try exec("SELECT generation, count, cells, mac FROM \(sql.q).state WHERE id = 1")
            if try currentEpoch(lock: false) != header.epoch { throw staleKeys() }
            guard state.rows == 1, let generation = state.int64(0, 0), let count = state.int64(0, 1),
                let committed = RowSetCommitment(generation: generation, count: count, cells: state.array(0, 2) ?? []),
                let mac = state.array(0, 3), mac == (try committed.mac(codec.keys.mac))
            else {
                _ = try exec(sql.commit)
                return (["the row-set commitment is missing or does not authenticate (altered outside secitem)"], "")
            }
            let value = "\(generation):" + mac.prefix(16).map { String(format: "%02x", $0) }.joined()
            try rollback.check(HighWaterMark(generation: generation, digest: Array(mac.prefix(16)), storeID: header.storeID))
            let altered = try alterations().map { "altered outside secitem: \($0) (writes are refused until it is removed)" }
            var scanned = try scan(exec(sql.selectInWrite([])), maxVersion: generation)
            // Only the rows' integrity is wanted: zero the data every row decrypted to.
            for i in scanned.items.indices { scanned.items[i].item.wipeData() }
            _ = try exec(sql.commit)
            var problems = (rollback.finding.map { [$0] } ?? []) + altered
            if scanned.damaged > 0 { problems.append("\(scanned.damaged) row(s) do not authenticate (tampered, swapped or damaged)") }
            var actual = RowSetCommitment(generation: generation)
            for element in scanned.elements { try actual.insert(element, codec.keys.mac) }
            if actual.count != committed.count || actual.cells != committed.cells {
                if let (onlyCommitted, onlyPresent) = try committed.difference(actual, codec.keys.mac) {
                    for e in onlyCommitted { problems.append("a row of version \(e.version) is committed but missing or rolled back") }
                    for e in onlyPresent { problems.append("a row of version \(e.version) is not in the commitment (copied in or rolled back)") }
                } else {
                    problems.append("the rows differ from the row-set commitment (\(actual.count) rows present, \(committed.count) committed)")
                }
            }
            return (problems, value)
        } catch {
            if let pq, (try? pq.run("ROLLBACK", timeout: Self.bound(configuration))) == nil { self.pq = nil }
            throw error
        }
    }

    struct Plan {
        var conditions: [String]
        var values: [PQValue]
        /// Narrowed by the primary-key HMAC: only attributes beyond the key need comparing.
        var byPrimaryKey: Bool
    }

    /// The indexed conditions a query gives (exact HMAC equality), or `nil` when
    /// nothing can match. Rows found are still filtered with the core's matcher.
    private func plan(_ query: ItemQuery) throws(SecItemError) -> Plan? {
        var plan = Plan(conditions: [], values: [], byPrimaryKey: false)
        func placeholder(_ value: PQValue, _ type: String) -> String {
            plan.values.append(value)
            return "$\(plan.values.count)::\(type)"
        }
        if let id = query.persistentReferenceID {
            let p = placeholder(.bytes(withUnsafeBytes(of: id.uuid) { Array($0) }), "bytea")
            plan.conditions.append("i.uuid = \(p)")
        }
        guard let itemClass = query.itemClass else { return plan }
        plan.conditions.append("i.class = \(placeholder(.text(itemClass.rawValue), "text"))")
        if query.accessGroups.isEmpty && !query.coversEveryAccessGroup { return nil }
        if let candidates = query.primaryKeyCandidates, !candidates.isEmpty, candidates.count <= 64 {
            var list: [String] = []
            for candidate in candidates { list.append(placeholder(.bytes(try codec.primaryKeyMAC(candidate)), "bytea")) }
            plan.conditions.append("i.pk IN (\(list.joined(separator: ", ")))")
            plan.byPrimaryKey = true
            return plan
        }
        if !query.coversEveryAccessGroup && query.accessGroups.count <= 16 {
            var list: [String] = []
            for group in query.accessGroups.sorted() {
                list.append(placeholder(.bytes(try codec.accessGroupMAC(itemClass, group)), "bytea"))
            }
            plan.conditions.append("i.\(IndexedColumns.accessGroup) IN (\(list.joined(separator: ", ")))")
        }
        switch query.synchronizable {
        case .no, .yes:
            let mac = try codec.syncMAC(itemClass, query.synchronizable == .yes)
            plan.conditions.append("i.\(IndexedColumns.synchronizable) = \(placeholder(.bytes(mac), "bytea"))")
        case .any:
            break
        }
        if !query.caseInsensitive {
            for name in IndexedColumns.attributes {
                guard let value = query.attributes[name] else { continue }
                let mac = try codec.attributeMAC(itemClass, name, value)
                plan.conditions.append("i.\(IndexedColumns.column(for: name)) = \(placeholder(.bytes(mac), "bytea"))")
            }
        }
        return plan
    }

    /// A PostgreSQL array literal of row numbers, sent as one text parameter.
    static func arrayLiteral(_ values: [Int64]) -> String {
        "{" + values.map(String.init).joined(separator: ",") + "}"
    }
}
