import Foundation
import SecItemCore
package import SecItemSealedStore

/// The rows of an open PostgreSQL keychain: writing, finding, scanning and verifying them,
/// and rendering a query's ``RowFilter`` as SQL conditions.
extension PostgreSQLSession {
    package typealias Match = SealedMatch

    /// One row of a result whose first two columns are the key epoch and the
    /// committed generation, read in place (columns as ``SQL/columns``).
    package struct Row: RowColumns {
        let result: PQResult
        let row: Int

        package init(result: PQResult, row: Int) {
            self.result = result
            self.row = row
        }

        package var uuid: UnsafeRawBufferPointer? { result.bytes(row, 3) }
        package var itemClass: String? { result.text(row, 4) }
        package var primaryKeyMAC: UnsafeRawBufferPointer? { result.bytes(row, 5) }
        package func indexMAC(_ index: Int) -> UnsafeRawBufferPointer? { result.bytes(row, 6 + index) }
        package var version: Int64 { result.int64(row, 6 + IndexedColumns.columns.count) ?? -1 }
        package var sealed: UnsafeRawBufferPointer? { result.bytes(row, 7 + IndexedColumns.columns.count) }
        package var seq: Int64? { result.int64(row, 2) }

        package var element: RowSetCommitment.Element {
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

    /// Rows matching `query`, oldest first, at most `limit`. Outside a write
    /// (`inWrite: false`) one statement reads the key epoch and the committed
    /// generation with the rows, so rows, keys and generation come from one
    /// snapshot; a row newer than the committed generation was put there from
    /// elsewhere and counts as damaged.
    /// `forChange: false` (a read returning the items alone) leaves each match's primary-key
    /// MAC and commitment element empty.
    /// - Throws: `errSecDecode` when nothing matched and a candidate row was damaged.
    func matches(_ query: ItemQuery, limit: Int?, inWrite: Bool, forChange: Bool = true) throws(SecItemError) -> [Match] {
        if let limit, limit <= 0 { return [] }
        guard let filter = try RowFilter(query, codec) else {
            if !inWrite, try currentEpoch(lock: false) != header.epoch { throw staleKeys() }
            return []
        }
        let r = try exec(select(filter, inWrite: inWrite), Self.values(filter))
        var maxVersion = commitment.generation
        if !inWrite {
            guard r.rows >= 1, let epoch = r.int64(0, 0), let generation = r.int64(0, 1) else {
                throw SecItemError(errSecInvalidKeychain, "the PostgreSQL keychain lost its key epoch or its state row")
            }
            if epoch != header.epoch { throw staleKeys() }
            maxVersion = generation
            let mac = r.array(0, SQL.columns.count + 2) ?? []
            // Another write came since this session's: the next write reads the state row afresh.
            if let known, known.stored.generation != generation || known.stored.mac != mac { self.known = nil }
            try observeRead(HighWaterMark(generation: generation, digest: Array(mac.prefix(16)), storeID: header.storeID))
            lastRead = (generation, mac)
        }
        var out: [Match] = []
        var damaged = 0
        for i in 0..<r.rows {
            let row = Row(result: r, row: i)
            guard let seq = row.seq else { continue }
            switch try codec.decode(row, maxVersion: maxVersion) {
            case .item(let item, _):
                let wanted = filter.byPrimaryKey ? query.matchesBeyondPrimaryKey(item) : query.matches(item)
                if wanted {
                    out.append(
                        forChange
                            ? Match(seq: seq, item: item, primaryKeyMAC: r.array(i, 5) ?? [], element: row.element)
                            : Match(seq: seq, item: item, primaryKeyMAC: [], element: nil))
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
        -> (items: [Match], elements: [(seq: Int64, element: RowSetCommitment.Element)], damaged: Int)
    {
        try scan(exec(sql.selectInWrite([])), maxVersion: maxVersion)
    }

    func scan(_ r: PQResult, maxVersion: Int64) throws(SecItemError)
        -> (items: [Match], elements: [(seq: Int64, element: RowSetCommitment.Element)], damaged: Int)
    {
        var items: [Match] = []
        // Room for every row at once: a growing array would leave copies of short
        // (inline) item data behind in the buffers it outgrew, beyond any wiping.
        items.reserveCapacity(r.rows)
        var elements: [(seq: Int64, element: RowSetCommitment.Element)] = []
        var damaged = 0
        for i in 0..<r.rows {
            let row = Row(result: r, row: i)
            guard let seq = row.seq else { continue }
            elements.append((seq, row.element))
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
            let stored = try readStateRow()
            guard let stored, let committed = try RowSetCommitment.authenticated(stored, codec.keys.mac) else {
                _ = try exec(sql.commit)
                return (["the row-set commitment is missing or does not authenticate (altered outside secitem)"], "")
            }
            let generation = stored.generation
            let mark = HighWaterMark(stored, storeID: header.storeID)
            let value = mark.description
            try rollback.check(mark)
            let altered = try alterations().map { "altered outside secitem: \($0) (writes are refused until it is removed)" }
            var scanned = try scan(exec(sql.selectInWrite([])), maxVersion: generation)
            // Only the rows' integrity is wanted: zero the data every row decrypted to.
            for i in scanned.items.indices { scanned.items[i].item.wipeData() }
            _ = try exec(sql.commit)
            var problems = (rollback.finding.map { [$0] } ?? []) + altered
            if scanned.damaged > 0 { problems.append("\(scanned.damaged) row(s) do not authenticate (tampered, swapped or damaged)") }
            let comparison = try RowSetComparison(
                committed: committed, present: scanned.elements.map { (seq: $0.seq, element: $0.element) }, codec.keys.mac)
            for finding in comparison.findings {
                switch finding {
                case .missing(let e):
                    problems.append("a row of version \(e.version) is committed but missing or rolled back")
                case .older(let c, let p, _), .replaced(let c, let p, _):
                    problems.append("a row of version \(c.version) is committed but missing or rolled back")
                    problems.append("a row of version \(p.version) is not in the commitment (copied in or rolled back)")
                case .unknown(let e, _):
                    problems.append("a row of version \(e.version) is not in the commitment (copied in or rolled back)")
                case .unlisted:
                    problems.append(
                        "the rows differ from the row-set commitment (\(committed.count + comparison.rowCountDifference) rows present, \(committed.count) committed)")
                }
            }
            return (problems, value)
        } catch {
            if let pq, (try? pq.run("ROLLBACK", timeout: Self.bound(configuration))) == nil { self.pq = nil }
            throw error
        }
    }

    /// The statement reading the rows `filter` selects (``SQL/selectWithEpoch(_:)``, or
    /// ``SQL/selectInWrite(_:)`` inside a write): made once per shape of filter (its columns
    /// and the kinds of their values) and kept, since rendering it took a lookup ~15k
    /// instructions (issue 24).
    func select(_ filter: RowFilter, inWrite: Bool) -> String {
        var shape = SelectShape(inWrite: inWrite, columns: [], kinds: [])
        shape.columns.reserveCapacity(filter.conditions.count)
        for condition in filter.conditions {
            shape.columns.append(condition.column)
            for value in condition.values {
                if case .text = value { shape.kinds.append(1) } else { shape.kinds.append(0) }
            }
            shape.kinds.append(2)
        }
        if let known = selects[shape] { return known }
        let conditions = Self.conditions(filter).conditions
        // One value of a unique column: at most one row.
        let single = filter.conditions.contains { ($0.column == "pk" || $0.column == "uuid") && $0.values.count == 1 }
        let statement =
            inWrite ? sql.selectInWrite(conditions, single: single) : sql.selectWithEpoch(conditions, single: single)
        // Bounded: a program querying many shapes (up to 64 primary keys at once) keeps the common ones.
        if selects.count >= 512 { selects.removeAll() }
        selects[shape] = statement
        return statement
    }

    /// A filter's values, as parameters `$1…` of its ``conditions(_:)``.
    static func values(_ filter: RowFilter) -> [PQValue] {
        var values: [PQValue] = []
        for condition in filter.conditions {
            for value in condition.values {
                switch value {
                case .bytes(let b): values.append(.bytes(b))
                case .text(let t): values.append(.text(t))
                }
            }
        }
        return values
    }

    /// A filter's conditions on the items table (`i`), with their values as parameters `$1…`.
    static func conditions(_ filter: RowFilter) -> (conditions: [String], values: [PQValue]) {
        var values: [PQValue] = []
        let conditions = filter.conditions.map { condition in
            let placeholders = condition.values.map { value -> String in
                switch value {
                case .bytes(let b):
                    values.append(.bytes(b))
                    return "$\(values.count)::bytea"
                case .text(let t):
                    values.append(.text(t))
                    return "$\(values.count)::text"
                }
            }
            return placeholders.count == 1
                ? "i.\(condition.column) = \(placeholders[0])"
                : "i.\(condition.column) IN (\(placeholders.joined(separator: ", ")))"
        }
        return (conditions, values)
    }

    /// A PostgreSQL array literal of row numbers, sent as one text parameter.
    static func arrayLiteral(_ values: [Int64]) -> String {
        "{" + values.map(String.init).joined(separator: ",") + "}"
    }
}
