import Foundation
import SecItemCore
import SecItemSealedStore

/// Opening a keychain: reads the header, or creates the schema and the keychain
/// under an advisory lock when they are missing.
struct Bootstrap {
    let pq: PQConnection
    let sql: SQL
    let configuration: PostgreSQLBackend.Configuration
    let store: String

    func run() throws(SecItemError) -> (KeychainHeader, SecretBytes, RowCodec) {
        let opened = try open()
        // As the file backend refuses a file whose schema is not its own: tables someone
        // added a rule, trigger or policy to are refused before anything is read or written.
        let found: [String]
        do {
            let r = try pq.execute(sql.alterations, prepare: false, timeout: PostgreSQLSession.bound(configuration))
            found = (0..<r.rows).compactMap { r.text($0, 0) }
        } catch {
            throw fail(error)
        }
        if !found.isEmpty { throw PostgreSQLSession.altered(found, schema: sql.schema) }
        return opened
    }

    private func open() throws(SecItemError) -> (KeychainHeader, SecretBytes, RowCodec) {
        let existing = try readMeta(allowMissing: true)
        let header: KeychainHeader
        if let existing, !existing.isEmpty {
            header = try parse(existing)
        } else {
            if let created = try create() {
                return created
            }
            guard let meta = try readMeta(allowMissing: false) else {
                throw SecItemError(errSecInvalidKeychain, "the PostgreSQL keychain tables vanished while it was opened")
            }
            header = try parse(meta)
        }
        let (kek, codec) = try header.unlock(configuration.keySource, configuration.keyContext)
        return (header, kek, codec)
    }

    private func fail(_ error: PQFailure) -> SecItemError {
        if error.connectionLost {
            return SecItemError(errSecNotAvailable, "the PostgreSQL server is not available (opening): \(error.message)")
        }
        if error.sqlState == "25006" {
            return SecItemError(errSecReadOnly, "the PostgreSQL server is read-only and the keychain does not exist yet")
        }
        if error.sqlState == "42501" {
            return SecItemError(errSecAuthFailed, "the PostgreSQL role may not create or read the keychain: \(error.message)")
        }
        return SecItemError(errSecIO, "PostgreSQL error \(error.sqlState ?? "") while opening the keychain: \(error.message)")
    }

    private func parse(_ meta: [String: KeychainHeader.MetaValue]) throws(SecItemError) -> KeychainHeader {
        try PostgreSQLSession.header(meta, store: store)
    }

    /// The meta rows; `nil` when the tables do not exist (and `allowMissing`).
    private func readMeta(allowMissing: Bool) throws(SecItemError) -> [String: KeychainHeader.MetaValue]? {
        do {
            let r = try pq.execute(sql.readMeta, prepare: false, timeout: PostgreSQLSession.bound(configuration))
            return PostgreSQLSession.metaValues(r)
        } catch where allowMissing && (error.sqlState == "42P01" || error.sqlState == "3F000") {
            return nil
        } catch {
            throw fail(error)
        }
    }

    /// Creates the schema and, when no other host did first, the keychain.
    /// - Returns: The new keychain's keys, or `nil` when another host made it.
    private func create() throws(SecItemError) -> (KeychainHeader, SecretBytes, RowCodec)? {
        let bound = PostgreSQLSession.bound(configuration)
        func q(_ statement: String, _ values: [PQValue] = []) throws(SecItemError) -> PQResult {
            do {
                return try pq.execute(statement, values, prepare: false, timeout: bound)
            } catch {
                throw fail(error)
            }
        }
        func run(_ statements: String) throws(SecItemError) {
            do {
                _ = try pq.run(statements, timeout: bound)
            } catch {
                throw fail(error)
            }
        }
        try run("BEGIN")
        // The new key, until COMMIT is sent: a failure before it leaves nothing behind (a
        // keyring item the source stored is removed); one during COMMIT may have committed.
        var uncommitted: KeyEncryptionKey?
        do throws(SecItemError) {
            // Many hosts starting at once: one creates, the others wait here and then find it made.
            _ = try q(sql.advisoryLock, [.int64(sql.lockKey)])
            try run(sql.createSchema)
            if try q(sql.readMeta).rows > 0 {
                try run("COMMIT")
                return nil
            }
            let (header, kek, keys) = try KeychainHeader.forNewStore(
                configuration.keySource, configuration.keyContext, format: KeychainHeader.formatVersion)
            uncommitted = kek
            try PostgreSQLSession.putMeta(sql.putMeta, "schema", .integer(PostgreSQLBackend.schemaVersion), q)
            for (key, value) in header.metaValues { try PostgreSQLSession.putMeta(sql.putMeta, key, value, q) }
            let empty = try RowSetCommitment(generation: 0).sealed(keys.mac)
            let created = try q(
                sql.createState,
                [.int64(empty.generation), .int64(empty.count), .bytes(empty.cells), .bytes(empty.mac), .int64(header.epoch)])
            guard created.affected == 1 else {
                throw SecItemError(
                    errSecInvalidKeychain,
                    "creating the keychain's state row changed \(created.affected) rows: the state table in schema "
                        + "\(sql.schema) does not behave as secitem created it (a rule or trigger added outside secitem?)")
            }
            uncommitted = nil
            try run("COMMIT")
            return (header, kek.kek, RowCodec(keys: keys))
        } catch {
            _ = try? pq.run("ROLLBACK", timeout: bound)
            if let uncommitted { KeyEncryptionKey.discard(uncommitted, configuration.keySource, configuration.keyContext) }
            throw error
        }
    }
}
