import SecItemCore
import SecItemSealedStore

/// The file as a sealed store keeps it: the `sealed_items` rows, the `meta` header and
/// the `state` row. The logic over them (sealing items, keeping the commitment in step,
/// an update whose keys collide, rotation) is ``SealedRowStorage``'s; this is only how
/// SQLite stores each piece.
extension SQLiteConnection: SealedRowStorage {
    func withWriteTransaction<R>(_ body: () throws(SecItemError) -> R) throws(SecItemError) -> R {
        try write(body)
    }

    func matches(_ query: ItemQuery, limit: Int?, forWrite: Bool) throws(SecItemError) -> [SealedMatch] {
        try matches(query, limit: limit, elements: forWrite)
    }

    /// The largest `seq` plus one, as SQLite would choose it (under the write lock):
    /// format 3 seals each row with its `seq`, so it is chosen before the row is sealed.
    func nextRowPosition() throws(SecItemError) -> Int64? {
        let next = try db.statement("SELECT coalesce(max(seq), 0) + 1 FROM sealed_items")
        defer { next.reset() }
        _ = try next.step(during: "adding an item")
        return next.int64(0)
    }

    func insertRow(_ row: EncodedRow, at seq: Int64?) throws(SecItemError) {
        let stmt = try db.statement(
            "INSERT INTO sealed_items(\(EncodedRow.columns.joined(separator: ", ")), seq) "
                + "VALUES (\(EncodedRow.columns.map { _ in "?" }.joined(separator: ", ")), ?)")
        let next = bindRow(stmt, row)
        if let seq { stmt.bind(next, seq) }  // else NULL: SQLite picks the next rowid
        do {
            try stmt.run(during: "adding an item")
        } catch where error.status == errSecDuplicateItem {
            throw SecItemError(errSecDuplicateItem, "an item with the same primary key is already in the keychain")
        }
        rowSetChanged = true
    }

    func replaceRow(at seq: Int64, with row: EncodedRow) throws(SecItemError) {
        let sets = EncodedRow.columns.map { "\($0) = ?" }
        let stmt = try db.statement("UPDATE sealed_items SET \(sets.joined(separator: ", ")) WHERE seq = ?")
        stmt.bind(bindRow(stmt, row), seq)
        do {
            try stmt.run(during: "updating an item")
        } catch where error.status == errSecDuplicateItem {
            throw SecItemError(errSecDuplicateItem, "the update would give two items the same primary key")
        }
        guard db.changes == 1 else {
            throw SecItemError(errSecIO, "the row being updated vanished inside its own transaction (the file was altered)")
        }
        rowSetChanged = true
        rowsReplaced = true
    }

    func deleteRows(at seqs: [Int64]) throws(SecItemError) {
        try run("DELETE FROM sealed_items WHERE seq = ?", at: seqs, during: "deleting an item", vanished: "deleted")
        rowSetChanged = true
        rowsReplaced = true
    }

    func clearPrimaryKeys(at seqs: [Int64]) throws(SecItemError) {
        try run("UPDATE sealed_items SET pk = uuid WHERE seq = ?", at: seqs, during: "updating an item", vanished: "updated")
    }

    /// Runs `sql` once for each row, each of which must be there.
    private func run(_ sql: String, at seqs: [Int64], during what: String, vanished: String) throws(SecItemError) {
        let stmt = try db.statement(sql)
        for seq in seqs {
            stmt.bind(1, seq)
            try stmt.run(during: what)
            guard db.changes == 1 else {
                throw SecItemError(errSecIO, "the row being \(vanished) vanished inside its own transaction (the file was altered)")
            }
        }
    }

    func readHeaderValues() throws(SecItemError) -> [String: KeychainHeader.MetaValue] { try db.readHeaderValues() }

    func writeHeaderValues(_ values: [(key: String, value: KeychainHeader.MetaValue)]) throws(SecItemError) {
        try db.writeHeaderValues(values)
    }

    func readStateRow() throws(SecItemError) -> StoredRowSetState? { try db.readStateRow() }

    func writeStateRow(_ state: StoredRowSetState) throws(SecItemError) { try db.writeStateRow(state) }

    /// Binds ``KeychainSchema/writtenColumns`` in order from 1; returns the next parameter index.
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
}
