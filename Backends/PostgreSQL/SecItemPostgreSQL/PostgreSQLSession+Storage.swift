package import SecItemCore
package import SecItemSealedStore

/// The keychain's tables as a sealed store keeps them: `items`, `meta` and the `state`
/// row. The logic over them (sealing items, keeping the commitment in step, an update
/// whose keys collide, rotation) is ``SealedRowStorage``'s; this is only how PostgreSQL
/// stores each piece. Every change must touch exactly the rows it names (``change(_:_:rows:_:)``).
extension PostgreSQLSession: SealedRowStorage {
    package func withWriteTransaction<R>(_ body: () throws(SecItemError) -> R) throws(SecItemError) -> R {
        try write(body)
    }

    package func matches(_ query: ItemQuery, limit: Int?, forWrite: Bool) throws(SecItemError) -> [SealedMatch] {
        try matches(query, limit: limit, inWrite: forWrite)
    }

    /// `nil`: the server numbers rows (`BIGSERIAL`), and format 2 does not seal them with it.
    package func nextRowPosition() throws(SecItemError) -> Int64? { nil }

    package func insertRow(_ row: EncodedRow, at seq: Int64?) throws(SecItemError) {
        try change(sql.insert, rowValues(row), rows: 1, "adding an item")
    }

    package func replaceRow(at seq: Int64, with row: EncodedRow) throws(SecItemError) {
        try change(sql.rewrite, rowValues(row) + [.int64(seq)], rows: 1, "updating an item")
    }

    package func deleteRows(at seqs: [Int64]) throws(SecItemError) {
        try change(sql.delete, [.text(Self.arrayLiteral(seqs))], rows: seqs.count, "deleting items")
    }

    package func clearPrimaryKeys(at seqs: [Int64]) throws(SecItemError) {
        try change(sql.clearPrimaryKeys, [.text(Self.arrayLiteral(seqs))], rows: seqs.count, "updating items")
    }

    package func readHeaderValues() throws(SecItemError) -> [String: KeychainHeader.MetaValue] {
        Self.metaValues(try exec(sql.readMeta))
    }

    package func writeHeaderValues(_ values: [(key: String, value: KeychainHeader.MetaValue)]) throws(SecItemError) {
        _ = try exec(sql.deleteScryptMeta)
        for (key, value) in values { try Self.putMeta(sql.putMeta, key, value, exec) }
    }

    /// The state row; a key epoch other than this session's is stale keys (the call
    /// reloads them and runs again).
    package func readStateRow() throws(SecItemError) -> StoredRowSetState? {
        let r = try exec(sql.readState)
        guard r.rows == 1, let generation = r.int64(0, 0), let count = r.int64(0, 1), let epoch = r.int64(0, 4) else {
            return nil
        }
        if epoch != header.epoch { throw staleKeys() }
        return StoredRowSetState(generation: generation, count: count, cells: r.array(0, 2) ?? [], mac: r.array(0, 3) ?? [])
    }

    /// Stores the state row with this session's key epoch.
    package func writeStateRow(_ state: StoredRowSetState) throws(SecItemError) {
        try change(
            sql.writeState,
            [.int64(state.generation), .int64(state.count), .bytes(state.cells), .bytes(state.mac), .int64(header.epoch)],
            rows: 1, "storing the row-set commitment")
    }
}
