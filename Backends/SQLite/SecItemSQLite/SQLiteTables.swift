import SecItemCore
import SecItemSealedStore

/// The file's `meta` and `state` tables, read and written on a ``Database``: the header
/// rows and the state row of ``SealedRowStorage``, also used while a new file is made
/// (before any connection holds it).
extension Database {
    /// The `meta` rows.
    /// - Throws: `errSecInvalidKeychain` when the file has no `meta` table (not a keychain).
    func readHeaderValues() throws(SecItemError) -> [String: KeychainHeader.MetaValue] {
        var values: [String: KeychainHeader.MetaValue] = [:]
        let stmt: Statement
        do {
            stmt = try statement("SELECT key, value, typeof(value) FROM meta")
        } catch where error.detail?.contains("no such table") == true {
            throw SecItemError(
                errSecInvalidKeychain, "not a keychain: \(path) is an SQLite database without secitem metadata")
        }
        defer { stmt.reset() }
        while try stmt.step(during: "reading the keychain metadata") {
            guard let key = stmt.text(0) else { continue }
            switch stmt.text(2) {
            case "integer": values[key] = .integer(stmt.int64(1))
            case "text": values[key] = stmt.text(1).map { .text($0) }
            default: values[key] = .bytes(stmt.bytes(1) ?? [])
            }
        }
        return values
    }

    /// The header in the `meta` table, checked.
    /// - Throws: `errSecInvalidKeychain` saying whether the file is not a keychain or is newer.
    func readHeader() throws(SecItemError) -> KeychainHeader {
        try KeychainHeader.parse(try readHeaderValues(), source: path)
    }

    /// Writes every meta row (inside the caller's transaction), first removing the
    /// `scrypt_*` and `kek_*` rows.
    func writeHeaderValues(_ values: [(key: String, value: KeychainHeader.MetaValue)]) throws(SecItemError) {
        try execute("DELETE FROM meta WHERE key LIKE 'scrypt_%' OR key GLOB 'kek_*'")
        let stmt = try statement("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)")
        for (key, value) in values {
            stmt.bind(1, key)
            switch value {
            case .integer(let v): stmt.bind(2, v)
            case .text(let v): stmt.bind(2, v)
            case .bytes(let v): stmt.bind(2, v)
            }
            try stmt.run(during: "writing the keychain metadata")
        }
    }

    /// The `state` row (format 2), `nil` when there is none.
    func readStateRow() throws(SecItemError) -> StoredRowSetState? {
        let stmt = try statement("SELECT generation, count, cells, mac FROM state WHERE id = 1")
        defer { stmt.reset() }
        guard try stmt.step(during: "reading the row-set commitment") else { return nil }
        return StoredRowSetState(generation: stmt.int64(0), count: stmt.int64(1), cells: stmt.bytes(2) ?? [], mac: stmt.bytes(3) ?? [])
    }

    /// Writes the `state` row.
    func writeStateRow(_ state: StoredRowSetState) throws(SecItemError) {
        let stmt = try statement("INSERT OR REPLACE INTO state(id, generation, count, cells, mac) VALUES (1, ?, ?, ?, ?)")
        stmt.bind(1, state.generation)
        stmt.bind(2, state.count)
        stmt.bind(3, state.cells)
        stmt.bind(4, state.mac)
        try stmt.run(during: "writing the row-set commitment")
    }
}
