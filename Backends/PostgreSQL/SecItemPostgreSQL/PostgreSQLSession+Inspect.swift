import Foundation
import SecItemCore
import SecItemSealedStore

extension PostgreSQLSession {
    /// What `secitem diagnose` says: where the connection goes, whether the server
    /// answers and is writable, whether the keychain exists and the key unlocks it.
    /// Creates nothing; bounded by the connect and statement timeouts.
    static func inspect(_ configuration: PostgreSQLBackend.Configuration) -> (usable: Bool, notes: [String]) {
        var notes = ["connection: \(ConnectionString.redacted(configuration.connection))", "schema: \(configuration.schema)"]
        notes.append("key: \(configuration.keySource)")
        if configuration.keySource.isGenerated {
            notes.append("a generated key cannot be shared: set SECITEM_KEY_FILE or a passphrase")
            return (false, notes)
        }
        let sql: SQL
        let pq: PQConnection
        do throws(SecItemError) {
            sql = try SQL(schema: configuration.schema)
            let env = ProcessInfo.processInfo.environment
            let parameters = try ConnectionString.parameters(
                configuration.connection, connectTimeout: configuration.connectTimeout, environment: env)
            pq = try connect(parameters, ConnectionString.secrets(configuration.connection, environment: env), configuration)
        } catch {
            notes.append("cannot connect: \(error)")
            return (false, notes)
        }
        notes.append("server: \(pq.endpoint), PostgreSQL \(pq.serverVersion)\(pq.reportsReadOnly ? ", read-only (writes fail with errSecReadOnly)" : "")")
        let store = configuration.keyContext.store
        let meta: [String: KeychainHeader.MetaValue]
        do {
            meta = PostgreSQLSession.metaValues(try pq.execute(sql.readMeta, prepare: false, timeout: bound(configuration)))
        } catch where error.sqlState == "42P01" || error.sqlState == "3F000" {
            notes.append("no keychain in schema \(configuration.schema) yet: it is created on first use (needs CREATE on the database)")
            return (!pq.reportsReadOnly, notes)
        } catch {
            notes.append("cannot read the keychain: \(error.message)")
            return (false, notes)
        }
        do throws(SecItemError) {
            if case .integer(let version)? = meta["schema"] { notes.append("schema version \(version)") }
            let header = try PostgreSQLSession.header(meta, store: store)
            let kek = try KeyEncryptionKey.forExisting(
                configuration.keySource, configuration.keyContext, header: header)
            guard try header.unwrap(kek: kek.kek) != nil else {
                notes.append("the key does not unlock the keychain")
                return (false, notes)
            }
            notes.append("key epoch \(header.epoch); unlocked with the key")
            let r = try? pq.execute(sql.alterations, prepare: false, timeout: bound(configuration))
            let altered = r.map { r in (0..<r.rows).compactMap { r.text($0, 0) } } ?? []
            if !altered.isEmpty {
                notes.append("altered outside secitem, so refused: \(altered.joined(separator: "; ")) (docs/postgresql.md)")
                return (false, notes)
            }
            return (true, notes)
        } catch {
            notes.append("cannot be opened: \(error)")
            return (false, notes)
        }
    }
}
