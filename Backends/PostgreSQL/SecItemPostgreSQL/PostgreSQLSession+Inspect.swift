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
        notes += durability(pq, configuration)
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

    /// The server's replication and commit settings, and a warning for each way an
    /// acknowledged write could be lost: `synchronous_commit = off` (a crash of the
    /// server), `local` or an asynchronous standby (a failover), `fsync = off`.
    static func durability(_ pq: PQConnection, _ configuration: PostgreSQLBackend.Configuration) -> [String] {
        let query = """
            SELECT current_setting('synchronous_commit'), current_setting('synchronous_standby_names'),             pg_is_in_recovery()::text, (SELECT count(*) FROM pg_stat_replication)::text,             (SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum'))::text,             current_setting('fsync'),             coalesce((SELECT max(extract(epoch FROM replay_lag))::text FROM pg_stat_replication), '')
            """
        guard let r = try? pq.execute(query, prepare: false, timeout: bound(configuration)), r.rows == 1 else {
            return ["replication: the server did not say (pg_stat_replication and settings unreadable)"]
        }
        let commit = r.text(0, 0) ?? "?", names = r.text(0, 1) ?? "", standbyServer = r.text(0, 2) == "true"
        let standbys = Int(r.text(0, 3) ?? "") ?? 0, synchronous = Int(r.text(0, 4) ?? "") ?? 0
        let fsync = r.text(0, 5) ?? "on", lag = r.text(0, 6) ?? ""
        if standbyServer {
            return [
                "replication: this server is a standby (reads only; writes fail with errSecReadOnly); a read may miss "
                    + "writes the primary acknowledged, by its replay lag (docs/postgresql.md, \"Standby reads\"); "
                    + "synchronous_commit here is \(commit), the primary's decides"
            ]
        }
        var notes = [
            "replication: \(standbys) standby(s) streaming, \(synchronous) synchronous; synchronous_standby_names '\(names)', "
                + "synchronous_commit \(commit)" + (lag.isEmpty ? "" : ", replay lag \(lag) s")
        ]
        if fsync != "on" {
            notes.append("warning: fsync is off: a crash of the server can lose or corrupt acknowledged writes")
        }
        switch commit {
        case "off":
            notes.append(
                "warning: synchronous_commit is off: a crash of the server loses the last acknowledged writes (up to 3 × wal_writer_delay), and a failover more")
        case "local":
            notes.append(
                "warning: synchronous_commit is local: a write is acknowledged before any standby has it, so a failover can lose acknowledged writes")
        default:
            if standbys == 0 {
                notes.append("no standby is streaming: a failover has nothing up to date to promote")
            } else if names.isEmpty || synchronous == 0 {
                notes.append(
                    "warning: replication is asynchronous (no synchronous standby\(names.isEmpty ? "" : " connected, or this role cannot see pg_stat_replication: grant pg_monitor")): "
                        + "a failover can lose acknowledged writes; set synchronous_standby_names on the primary")
            }
        }
        if !names.isEmpty && standbys == 0 {
            notes.append("warning: synchronous_standby_names is set but no standby is connected: every write waits (and fails at the statement timeout)")
        }
        return notes
    }
}
