import Foundation
package import SecItemCore
package import SecItemSealedStore

/// One open keychain: the connection (re-made when lost), the keys, and the SQL.
///
/// `@unchecked Sendable`: a session is used by one thread at a time, the one that
/// took it from the backend's ``SessionPool`` (which hands it over under its lock).
package final class PostgreSQLSession: @unchecked Sendable {
    let configuration: PostgreSQLBackend.Configuration
    package let sql: SQL
    private let parameters: [(String, String)]
    private let redactions: [String]
    /// The connection; `nil` after it was lost (the next call reconnects). Set only
    /// by the session (this file and its extensions).
    var pq: PQConnection?
    var header: KeychainHeader
    var kek: SecretBytes
    package var codec: RowCodec
    /// Inside a write: the row-set commitment as locked, updated by every row change
    /// (PostgreSQLSession+Rows.swift) and by a rotation (+Keys.swift).
    package var commitment = RowSetCommitment(generation: 0)
    /// Inside a write: the version stamped on every row it writes.
    var writeVersion: Int64 { commitment.generation + 1 }
    /// What the current call is doing, for messages.
    private var during = ""
    /// Set when a statement saw another key epoch: the call reloads the keys and runs again.
    private var sawStaleKeys = false
    /// Set on a serialization failure or deadlock: the call runs again.
    private var sawRetryable = false
    /// The rollback evidence: each new state of the store against this host's high-water mark.
    let rollback: RollbackCheck
    /// Set when a statement lost its connection (not when connecting failed).
    private var lostConnection = false
    /// Whether writes check the tables for ``SQL/alterations`` (off only in tests of
    /// the row-count checks behind it).
    var checksSchema = true
    /// The ``PublishedKeys/version`` this session's keys came from or were published as.
    var keysVersion = 0
    /// The state row as this session last committed it, while no read has shown it
    /// moved since: what a write in one statement (PostgreSQLSession+OneStatement.swift)
    /// starts from.
    var known: KnownState?
    /// The state row a read outside a write saw last (its generation and MAC).
    var lastRead: (generation: Int64, mac: [UInt8])?
    /// The statements ``select(_:inWrite:)`` rendered, by the shape of their filter.
    var selects: [SelectShape: String] = [:]
    /// A filter's shape: what its select statement depends on (not the values).
    struct SelectShape: Hashable {
        var inWrite: Bool
        var columns: [String]
        /// Per value: 0 bytes, 1 text; 2 ends a condition.
        var kinds: [UInt8]
    }
    /// The SQLSTATE of the last statement that failed (``exec(_:_:)``).
    private(set) var lastSQLState: String?

    /// The state row this session committed last, authenticated by construction, with
    /// the commitment it seals and the key epoch it was written under.
    struct KnownState {
        var stored: StoredRowSetState
        var commitment: RowSetCommitment
        var epoch: Int64
    }

    /// The error a statement that saw another key epoch throws; the call then
    /// reloads the keys and runs again (it is only seen when that keeps happening).
    func staleKeys() -> SecItemError {
        sawStaleKeys = true
        return SecItemError(errSecIO, "the keychain's key epoch kept changing during the call")
    }

    private init(
        configuration: PostgreSQLBackend.Configuration, sql: SQL, parameters: [(String, String)], redactions: [String],
        pq: PQConnection, header: KeychainHeader, kek: SecretBytes, codec: RowCodec, rollback: RollbackCheck
    ) {
        self.rollback = rollback
        self.configuration = configuration
        self.sql = sql
        self.parameters = parameters
        self.redactions = redactions
        self.pq = pq
        self.header = header
        self.kek = kek
        self.codec = codec
    }

    /// What a session of the same keychain needs besides the keys.
    struct Prototype: @unchecked Sendable {
        // @unchecked: plain values (the configuration holds no secret once released).
        var configuration: PostgreSQLBackend.Configuration
        var sql: SQL
        var parameters: [(String, String)]
        var redactions: [String]
        /// The rollback evidence's mode, witness and store: each session checks on its own
        /// (a ``RollbackCheck`` is one connection's), against the same witness.
        var rollbackMode: RollbackCheckMode
        var rollbackWitness: (any RollbackWitness)?
        var rollbackStore: WitnessedStore
    }

    var prototype: Prototype {
        Prototype(
            configuration: configuration, sql: sql, parameters: parameters, redactions: redactions,
            rollbackMode: rollback.mode, rollbackWitness: rollback.witness, rollbackStore: rollback.store)
    }

    /// Another connection to an open keychain, with the keys a session of it holds
    /// (no bootstrap: the keychain exists and `keys` unlock it).
    static func sibling(of prototype: Prototype, keys: PublishedKeys) throws(SecItemError) -> PostgreSQLSession {
        let pq = try connect(prototype.parameters, prototype.redactions, prototype.configuration)
        let codec = RowCodec(keys: try ItemKeys(dataKey: keys.dataKey, format: Int(keys.header.format)))
        let session = PostgreSQLSession(
            configuration: prototype.configuration, sql: prototype.sql, parameters: prototype.parameters,
            redactions: prototype.redactions, pq: pq, header: keys.header, kek: keys.kek, codec: codec,
            rollback: RollbackCheck(
                mode: prototype.rollbackMode, witness: prototype.rollbackWitness, store: prototype.rollbackStore,
                confirmsOnlyPredecessors: true))
        session.keysVersion = keys.version
        if session.rollback.mode != .off {
            try session.call(during: "checking the rollback evidence") { () throws(SecItemError) in
                try session.rollback.prime()
                try session.rollback.check(try session.currentState())
            }
        }
        return session
    }

    /// This session's keys, for the other sessions of its pool.
    func published(version: Int) -> PublishedKeys {
        PublishedKeys(header: header, kek: kek, dataKey: codec.keys.dataKey, version: version)
    }

    /// Takes the keys another session of the pool published (newer than this one's).
    func adopt(_ keys: PublishedKeys) throws(SecItemError) {
        if keys.header.epoch != header.epoch || !keys.dataKey.equals(codec.keys.dataKey) {
            if !keys.dataKey.equals(codec.keys.dataKey) {
                codec = RowCodec(keys: try ItemKeys(dataKey: keys.dataKey, format: Int(keys.header.format)))
            }
            header = keys.header
            kek = keys.kek
        }
        keysVersion = keys.version
    }

    /// Connects, creates what is missing, and unlocks the keychain.
    package static func open(_ configuration: PostgreSQLBackend.Configuration) throws(SecItemError) -> PostgreSQLSession {
        if configuration.keySource.isGenerated {
            throw SecItemError(
                errSecParam,
                "the PostgreSQL backend needs a key every host shares (a key file or passphrase), not a generated one")
        }
        let sql = try SQL(schema: configuration.schema)
        let environment = ProcessInfo.processInfo.environment
        let parameters = try ConnectionString.parameters(
            configuration.connection, connectTimeout: configuration.connectTimeout, environment: environment)
        let redactions = ConnectionString.secrets(configuration.connection, environment: environment)
        let pq = try connect(parameters, redactions, configuration)
        let store = configuration.keyContext.store
        // A bootstrap session: keys are filled in once the header is read or made.
        let (header, kek, codec) = try Bootstrap(pq: pq, sql: sql, configuration: configuration, store: store).run()
        let rollback = RollbackCheck.make(
            mode: configuration.rollbackCheck, witness: configuration.rollbackWitness, keySource: configuration.keySource,
            store: WitnessedStore(identity: witnessIdentity(configuration, environment), location: store),
            unlocked: UnlockedStoreKey(kek: kek, header: header), environment: configuration.environment ?? environment,
            confirmsOnlyPredecessors: true)
        // The passphrase (or raw key) was used by Bootstrap and is not kept (see reloadKeys).
        let session = PostgreSQLSession(
            configuration: configuration.released, sql: sql, parameters: parameters, redactions: redactions, pq: pq,
            header: header, kek: kek, codec: codec, rollback: rollback)
        if rollback.mode != .off {
            try session.call(during: "checking the rollback evidence") { () throws(SecItemError) in
                try rollback.prime()
                try rollback.check(try session.currentState())
            }
        }
        return session
    }

    /// What this host files the store's high-water mark under: where the configuration
    /// points (hosts, port, database, as given or from the `PG*` environment) and the
    /// schema. Not the server it happens to reach: a failover keeps the mark.
    static func witnessIdentity(_ configuration: PostgreSQLBackend.Configuration, _ env: [String: String]) -> String {
        let options = configuration.connection.flatMap(ConnectionString.options) ?? [:]
        func value(_ key: String, _ variable: String) -> String { options[key] ?? env[variable] ?? "" }
        return "postgresql host=\(value("host", "PGHOST")) port=\(value("port", "PGPORT")) "
            + "dbname=\(value("dbname", "PGDATABASE")) schema=\(configuration.schema)"
    }

    /// The committed state as it is now, authenticated (one query).
    /// - Throws: `errSecInvalidKeychain` when it does not authenticate.
    func currentState() throws(SecItemError) -> HighWaterMark {
        HighWaterMark(try authenticatedState(store: configuration.keyContext.store).1, storeID: header.storeID)
    }

    /// A read saw the store at `observed` (generation and MAC from its own statement):
    /// nothing to do when it is the state last checked (no I/O, no query); else the
    /// mark is read, then the state again (authenticated), and compared (RollbackCheck).
    func observeRead(_ observed: HighWaterMark) throws(SecItemError) {
        guard rollback.mode != .off, rollback.isNew(observed) else { return }
        if let seen = rollback.lastSeen, RollbackCheck.problem(observed, against: seen) != nil {
            return try rollback.check(observed)
        }
        try rollback.prime()
        try rollback.check(try currentState())
    }

    static func connect(
        _ parameters: [(String, String)], _ redactions: [String], _ configuration: PostgreSQLBackend.Configuration
    ) throws(SecItemError) -> PQConnection {
        let pq: PQConnection
        do {
            pq = try PQConnection.connect(parameters, redactions: redactions, prepares: configuration.preparedStatements)
        } catch {
            throw SecItemError(
                errSecNotAvailable,
                "cannot connect to the PostgreSQL server (\(ConnectionString.redacted(configuration.connection))): "
                    + error.message)
        }
        // Behind a pooler in transaction mode a session setting would stay on whichever
        // server connection ran it (other clients' too): the client's bound alone applies.
        if !configuration.preparedStatements { return pq }
        let ms = configuration.statementTimeout.wholeMilliseconds
        do {
            _ = try pq.run("SET statement_timeout = \(max(1, ms))", timeout: bound(configuration))
        } catch {
            throw SecItemError(errSecNotAvailable, "the PostgreSQL server did not accept the session settings: \(error.message)")
        }
        return pq
    }

    /// The client's bound on one statement: the server's `statement_timeout` fires
    /// first with a clean error; this catches a server that stopped answering at all.
    static func bound(_ configuration: PostgreSQLBackend.Configuration) -> Duration {
        configuration.statementTimeout + .seconds(2)
    }

    // MARK: Calls

    /// Runs one backend call: reconnects first when the connection was lost or
    /// closed by the server, and runs `body` again when another host changed the
    /// keys under it (after reloading them) or the server asked for a retry. A call
    /// that only reads (`readOnly`) whose connection was lost (a failover, a
    /// restart) runs once more on a new connection: it changed nothing, so running
    /// it again is safe. A write is never run again after a lost connection: its
    /// `COMMIT` may have been applied (docs/postgresql.md, "During a failover").
    func call<R>(during what: String, readOnly: Bool = false, _ body: () throws(SecItemError) -> R) throws(SecItemError) -> R {
        during = what
        var attempt = 0
        while true {
            attempt += 1
            sawStaleKeys = false
            sawRetryable = false
            lostConnection = false
            do throws(SecItemError) {
                try ensureConnected()
                return try body()
            } catch {
                if sawStaleKeys, attempt < 8 {
                    try reloadKeys()
                    continue
                }
                if sawRetryable, attempt < 8 {
                    usleep(UInt32(1000 * attempt * attempt))
                    continue
                }
                if readOnly, lostConnection, attempt == 1, error.status == errSecNotAvailable {
                    continue
                }
                throw error
            }
        }
    }

    private func ensureConnected() throws(SecItemError) {
        if let pq, pq.isAlive { return }
        pq = nil
        pq = try Self.connect(parameters, redactions, configuration)
    }

    /// Runs `body` as one write transaction: it first locks the row-set
    /// commitment's row (so writes from every host are serialized and a rotation
    /// excludes them), checks the key epoch is this session's and the commitment
    /// authenticates, and at the end stores the commitment the body's row changes
    /// produced. Rolls back, and restores this session's keys, on any error.
    ///
    /// Success is reported only when `COMMIT` returned without a warning. With a
    /// synchronous standby, the server answers `COMMIT` once the standby has the
    /// transaction; if that wait is cancelled (`pg_cancel_backend`), it answers
    /// success anyway, with a WARNING, for a transaction committed on the primary
    /// alone, which a failover loses. That `COMMIT` fails the call with
    /// `errSecNotAvailable`, as a lost connection after `COMMIT` does: it may or may
    /// not be applied (docs/postgresql.md, "During a failover"). (`statement_timeout`
    /// does not end that wait: PostgreSQL stops the statement's timer before
    /// committing. The client's bound on the statement does, and drops the connection.)
    package func write<R>(_ body: () throws(SecItemError) -> R) throws(SecItemError) -> R {
        let saved = (header, kek, codec)
        _ = try exec(sql.begin)
        let result: R
        let committed: HighWaterMark
        let written: StoredRowSetState
        var unconfirmed = false
        do throws(SecItemError) {
            let r = try exec(sql.lockState)
            guard r.rows == 1, let generation = r.int64(0, 0), let count = r.int64(0, 1), let cells = r.array(0, 2),
                let mac = r.array(0, 3), let epoch = r.int64(0, 4)
            else {
                throw SecItemError(errSecInvalidKeychain, "the PostgreSQL keychain lost its row-set commitment (state row)")
            }
            if epoch != header.epoch { throw staleKeys() }
            if checksSchema, (r.int64(0, 5) ?? 1) != 0 {
                let found = try alterations()
                if !found.isEmpty { throw Self.altered(found, schema: sql.schema) }
            }
            let stored = StoredRowSetState(generation: generation, count: count, cells: cells, mac: mac)
            guard let locked = try RowSetCommitment.authenticated(stored, codec.keys.mac) else {
                throw SecItemError(
                    errSecInvalidKeychain,
                    "the PostgreSQL keychain was altered outside secitem: its row-set commitment does not authenticate")
            }
            // The row is locked: every mark recorded so far is of a state at or below it.
            try rollback.check(HighWaterMark(stored, storeID: header.storeID))
            commitment = locked
            result = try body()
            let state = try storeCommitment()
            let warnings = pq?.warnings ?? 0
            _ = try exec(sql.commit)
            unconfirmed = (pq?.warnings ?? 0) != warnings
            committed = HighWaterMark(state, storeID: header.storeID)
            written = state
        } catch {
            (header, kek, codec) = saved
            known = nil
            if let pq, (try? pq.run("ROLLBACK", timeout: Self.bound(configuration))) == nil { self.pq = nil }
            throw error
        }
        if unconfirmed {
            known = nil
            // Committed on this server, so this session's keys stay as the write left
            // them; but not this host's mark (a failover may lose it), and not a success.
            throw SecItemError(
                errSecNotAvailable,
                "the PostgreSQL server committed the write (\(during)) without confirming it: its wait for the "
                    + "synchronous standby was cancelled, so a failover may lose it; it may or may not be in the keychain")
        }
        // Committed (and confirmed): only now may it become this host's mark.
        rollback.committed(committed)
        known = KnownState(stored: written, commitment: commitment, epoch: header.epoch)
        return result
    }

    /// The key epoch.
    func currentEpoch(lock: Bool) throws(SecItemError) -> Int64 {
        let r = try exec(sql.epoch)
        guard r.rows == 1, let epoch = r.int64(0, 0) else {
            throw SecItemError(errSecInvalidKeychain, "the PostgreSQL keychain lost its key epoch (meta row 'epoch')")
        }
        return epoch
    }

    /// Inside a write: runs a statement that must change exactly `rows` rows. A
    /// rule (`DO INSTEAD NOTHING`), a trigger returning `NULL` or a row-level security
    /// policy makes PostgreSQL report success with fewer (or more): that fails the
    /// write, which is then rolled back whole.
    /// - Throws: `errSecInvalidKeychain` naming what was done and the counts.
    @discardableResult
    func change(_ statement: String, _ values: [PQValue] = [], rows: Int, _ what: String) throws(SecItemError) -> PQResult {
        let r = try exec(statement, values)
        guard r.affected == rows else {
            throw SecItemError(
                errSecInvalidKeychain,
                "\(what) changed \(r.affected) of \(rows) row(s) in the PostgreSQL keychain (schema \(sql.schema)): "
                    + "its tables do not behave as secitem created them (a rule, trigger or row-level security policy "
                    + "added outside secitem?); nothing was changed")
        }
        return r
    }

    /// What was added to the keychain's tables outside secitem (``SQL/alterations``).
    func alterations() throws(SecItemError) -> [String] {
        let r = try exec(sql.alterations)
        return (0..<r.rows).compactMap { r.text($0, 0) }
    }

    /// The error for tables someone altered: names each alteration and how to undo it.
    static func altered(_ found: [String], schema: String) -> SecItemError {
        let list = found.joined(separator: "; ")
        return SecItemError(
            errSecInvalidKeychain,
            "the PostgreSQL keychain in schema \(schema) was altered outside secitem (\(list)): writes could report "
                + "success and change nothing, or something else, so it is refused until they are removed "
                + "(DROP RULE / DROP TRIGGER / DROP POLICY, ALTER TABLE … DISABLE ROW LEVEL SECURITY; docs/postgresql.md)")
    }

    /// Runs a prepared statement; a failure becomes a ``SecItemError`` (and a lost
    /// connection is dropped, so the next call reconnects).
    package func exec(_ statement: String, _ values: [PQValue] = []) throws(SecItemError) -> PQResult {
        guard let pq else { throw SecItemError(errSecNotAvailable, "the PostgreSQL server is not available") }
        lastSQLState = nil
        do {
            return try pq.execute(statement, values, timeout: Self.bound(configuration))
        } catch {
            lastSQLState = error.sqlState
            throw mapped(error)
        }
    }

    private func mapped(_ failure: PQFailure) -> SecItemError {
        if failure.connectionLost {
            pq = nil
            lostConnection = true
            return SecItemError(
                errSecNotAvailable, "the PostgreSQL server is not available (\(during)): \(failure.message)")
        }
        switch failure.sqlState ?? "" {
        case "23505":
            return SecItemError(errSecDuplicateItem, "an item with the same primary key is already in the keychain")
        case "25006":
            // A standby, or default_transaction_read_only: a later call may reach the primary.
            pq = nil
            return SecItemError(
                errSecReadOnly,
                "the PostgreSQL server is read-only (a standby, or default_transaction_read_only is on); writes need "
                    + "the primary (with several hosts in the URI, add target_session_attrs=read-write)")
        case "40001", "40P01":
            sawRetryable = true
            return SecItemError(errSecIO, "the PostgreSQL server could not serialize the call (\(during)): \(failure.message)")
        case "57014":
            return SecItemError(
                errSecNotAvailable,
                "the PostgreSQL server did not finish within the statement timeout (\(during)): \(failure.message)")
        case let s where s.hasPrefix("53") || s.hasPrefix("08") || s.hasPrefix("57P"):
            pq = nil
            lostConnection = true
            return SecItemError(errSecNotAvailable, "the PostgreSQL server is not available (\(during)): \(failure.message)")
        case "42501":
            return SecItemError(
                errSecAuthFailed, "the PostgreSQL role may not do this (\(during)): \(failure.message)")
        case let s:
            return SecItemError(errSecIO, "PostgreSQL error \(s) (\(during)): \(failure.message)")
        }
    }
}
