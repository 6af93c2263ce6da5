import SecItemCore
import SecItemSealedStore

/// The header in the file's `meta` table.
extension KeychainHeader {
    /// Reads and checks the `meta` table.
    /// - Throws: `errSecInvalidKeychain` saying whether the file is not a keychain or is newer.
    static func read(_ db: Database) throws(SecItemError) -> KeychainHeader {
        var values: [String: MetaValue] = [:]
        let stmt: Statement
        do {
            stmt = try db.statement("SELECT key, value, typeof(value) FROM meta")
        } catch where error.detail?.contains("no such table") == true {
            throw SecItemError(
                errSecInvalidKeychain, "not a keychain: \(db.path) is an SQLite database without secitem metadata")
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
        return try parse(values, source: db.path)
    }

    /// Writes every meta row (inside the caller's transaction).
    func write(_ db: Database) throws(SecItemError) {
        try db.execute("DELETE FROM meta WHERE key LIKE 'scrypt_%' OR key GLOB 'kek_*'")
        let stmt = try db.statement("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)")
        for (key, value) in metaValues {
            stmt.bind(1, key)
            switch value {
            case .integer(let v): stmt.bind(2, v)
            case .text(let v): stmt.bind(2, v)
            case .bytes(let v): stmt.bind(2, v)
            }
            try stmt.run(during: "writing the keychain metadata")
        }
    }
}
