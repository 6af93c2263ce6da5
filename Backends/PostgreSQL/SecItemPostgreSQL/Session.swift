import Foundation
import SecItemCore
import SecItemSQLite

/// One open keychain: the connection (re-made when lost), the keys, and the SQL.
/// Used under the backend's mutex only.
final class Session {
    let configuration: PostgreSQLBackend.Configuration
    let sql: SQL
    private let parameters: [(String, String)]
    private let redactions: [String]
    /// The connection; `nil` after it was lost (the next call reconnects).
    private(set) var pq: PQConnection?
    var header: KeychainHeader
    var kek: SecretBytes
    var codec: RowCodec
    /// Inside a write: the row-set commitment as locked, updated by every row change.
    private(set) var commitment = RowSetCommitment(generation: 0)
    /// Inside a write: the version stamped on every row it writes.
    var writeVersion: Int64 { commitment.generation + 1 }
    /// What the current call is doing, for messages.
    private var during = ""
    /// Set when a statement saw another key epoch: the call reloads the keys and runs again.
    private var sawStaleKeys = false
    /// Set on a serialization failure or deadlock: the call runs again.
    private var sawRetryable = false

    /// The error a statement that saw another key epoch throws; the call then
    /// reloads the keys and runs again (it is only seen when that keeps happening).
    func staleKeys() -> SecItemError {
        sawStaleKeys = true
        return SecItemError(errSecIO, "the keychain's key epoch kept changing during the call")
    }

    private init(
        configuration: PostgreSQLBackend.Configuration, sql: SQL, parameters: [(String, String)], redactions: [String],
        pq: PQConnection, header: KeychainHeader, kek: SecretBytes, codec: RowCodec
    ) {
        self.configuration = configuration
        self.sql = sql
        self.parameters = parameters
        self.redactions = redactions
        self.pq = pq
        self.header = header
        self.kek = kek
        self.codec = codec
    }

    /// Connects, creates what is missing, and unlocks the keychain.
    static func open(_ configuration: PostgreSQLBackend.Configuration) throws(SecItemError) -> Session {
        if case .automatic = configuration.keySource {
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
        let store = configuration.fileConfiguration(configuration.keySource).path
        // A bootstrap session: keys are filled in once the header is read or made.
        let (header, kek, codec) = try Bootstrap(pq: pq, sql: sql, configuration: configuration, store: store).run()
        // The passphrase (or raw key) was used by Bootstrap and is not kept (see reloadKeys).
        return Session(
            configuration: configuration.released, sql: sql, parameters: parameters, redactions: redactions, pq: pq,
            header: header, kek: kek, codec: codec)
    }

    private static func connect(
        _ parameters: [(String, String)], _ redactions: [String], _ configuration: PostgreSQLBackend.Configuration
    ) throws(SecItemError) -> PQConnection {
        let pq: PQConnection
        do {
            pq = try PQConnection.connect(parameters, redactions: redactions)
        } catch {
            throw SecItemError(
                errSecNotAvailable,
                "cannot connect to the PostgreSQL server (\(ConnectionString.redacted(configuration.connection))): "
                    + error.message)
        }
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
    /// keys under it (after reloading them) or the server asked for a retry.
    func call<R>(during what: String, _ body: () throws(SecItemError) -> R) throws(SecItemError) -> R {
        during = what
        var attempt = 0
        while true {
            attempt += 1
            sawStaleKeys = false
            sawRetryable = false
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
    func write<R>(_ body: () throws(SecItemError) -> R) throws(SecItemError) -> R {
        let saved = (header, kek, codec)
        _ = try exec(sql.begin)
        do throws(SecItemError) {
            let r = try exec(sql.lockState)
            guard r.rows == 1, let generation = r.int64(0, 0), let count = r.int64(0, 1), let cells = r.array(0, 2),
                let stored = r.array(0, 3), let epoch = r.int64(0, 4)
            else {
                throw SecItemError(errSecInvalidKeychain, "the PostgreSQL keychain lost its row-set commitment (state row)")
            }
            if epoch != header.epoch { throw staleKeys() }
            guard let locked = RowSetCommitment(generation: generation, count: count, cells: cells),
                stored == (try locked.mac(codec.keys.mac))
            else {
                throw SecItemError(
                    errSecInvalidKeychain,
                    "the PostgreSQL keychain was altered outside secitem: its row-set commitment does not authenticate")
            }
            commitment = locked
            let result = try body()
            commitment.generation = writeVersion
            let state = commitment
            _ = try exec(
                sql.writeState,
                [
                    .int64(state.generation), .int64(state.count), .bytes(state.cells), .bytes(try state.mac(codec.keys.mac)),
                    .int64(header.epoch),
                ])
            _ = try exec(sql.commit)
            return result
        } catch {
            (header, kek, codec) = saved
            if let pq, (try? pq.run("ROLLBACK", timeout: Self.bound(configuration))) == nil { self.pq = nil }
            throw error
        }
    }

    /// The key epoch.
    func currentEpoch(lock: Bool) throws(SecItemError) -> Int64 {
        let r = try exec(sql.epoch)
        guard r.rows == 1, let epoch = r.int64(0, 0) else {
            throw SecItemError(errSecInvalidKeychain, "the PostgreSQL keychain lost its key epoch (meta row 'epoch')")
        }
        return epoch
    }

    /// Runs a prepared statement; a failure becomes a ``SecItemError`` (and a lost
    /// connection is dropped, so the next call reconnects).
    func exec(_ statement: String, _ values: [PQValue] = []) throws(SecItemError) -> PQResult {
        guard let pq else { throw SecItemError(errSecNotAvailable, "the PostgreSQL server is not available") }
        do {
            return try pq.execute(statement, values, timeout: Self.bound(configuration))
        } catch {
            throw mapped(error)
        }
    }

    private func mapped(_ failure: PQFailure) -> SecItemError {
        if failure.connectionLost {
            pq = nil
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
            return SecItemError(errSecNotAvailable, "the PostgreSQL server is not available (\(during)): \(failure.message)")
        case "42501":
            return SecItemError(
                errSecAuthFailed, "the PostgreSQL role may not do this (\(during)): \(failure.message)")
        case let s:
            return SecItemError(errSecIO, "PostgreSQL error \(s) (\(during)): \(failure.message)")
        }
    }

    // MARK: Keys

    /// Re-reads the header after another host changed it: a rotation gives a new
    /// data key under the same key-encryption key; a rekey needs the new key, so
    /// a key file is read again (a replaced key file is picked up). A passphrase
    /// is not kept after opening, so a host opened with one must be reopened with
    /// the new passphrase after a rekey.
    func reloadKeys() throws(SecItemError) {
        let fresh = try readHeader()
        if fresh.epoch == header.epoch { return }
        var kek = self.kek
        var dataKey = try fresh.unwrap(kek: kek)
        if dataKey == nil, case .keyFile = configuration.keySource {
            let resolved = try KeyEncryptionKey.forExisting(
                configuration.keySource, configuration.fileConfiguration(configuration.keySource), header: fresh)
            kek = resolved.kek
            dataKey = try fresh.unwrap(kek: kek)
        }
        guard let dataKey else {
            throw SecItemError(
                errSecAuthFailed,
                "the PostgreSQL keychain was rekeyed by another host and this host's key does not unlock it; "
                    + "give this host the new key (a passphrase: open the keychain again with the new one)")
        }
        header = fresh
        self.kek = kek
        if !dataKey.equals(codec.keys.dataKey) {
            codec = RowCodec(keys: try ItemKeys(dataKey: dataKey, format: Int(fresh.format)))
        }
    }

    func readHeader() throws(SecItemError) -> KeychainHeader {
        try Self.header(Self.metaValues(try exec(sql.readMeta)), store: configuration.fileConfiguration(configuration.keySource).path)
    }

    /// The header of a PostgreSQL keychain: the file format's, always format 2,
    /// with this backend's own schema version.
    static func header(_ meta: [String: KeychainHeader.MetaValue], store: String) throws(SecItemError) -> KeychainHeader {
        if case .integer(let version)? = meta["schema"], version > PostgreSQLBackend.schemaVersion {
            throw SecItemError(
                errSecInvalidKeychain,
                "\(store) has schema version \(version), newer than this library supports (\(PostgreSQLBackend.schemaVersion))")
        }
        let header = try KeychainHeader.parse(meta, source: store)
        guard header.format == KeychainHeader.formatVersion else {
            throw SecItemError(errSecInvalidKeychain, "\(store) holds format-\(header.format) rows; PostgreSQL keychains are format \(KeychainHeader.formatVersion)")
        }
        return header
    }

    static func metaValues(_ r: PQResult) -> [String: KeychainHeader.MetaValue] {
        var values: [String: KeychainHeader.MetaValue] = [:]
        for row in 0..<r.rows {
            guard let key = r.text(row, 0) else { continue }
            if let n = r.int64(row, 1) {
                values[key] = .integer(n)
            } else if let b = r.array(row, 2) {
                values[key] = .bytes(b)
            } else if let t = r.text(row, 3) {
                values[key] = .text(t)
            }
        }
        return values
    }

    /// Inside a write: bumps the key epoch (other hosts reload their keys on their
    /// next statement) and returns the header to rewrite.
    func bumpEpoch() throws(SecItemError) -> KeychainHeader {
        let r = try exec(sql.bumpEpoch)
        guard r.rows == 1, let epoch = r.int64(0, 0) else {
            throw SecItemError(errSecInvalidKeychain, "the PostgreSQL keychain lost its key epoch (meta row 'epoch')")
        }
        var bumped = header
        bumped.epoch = epoch
        return bumped
    }

    func writeHeader(_ header: KeychainHeader) throws(SecItemError) {
        _ = try exec(sql.deleteScryptMeta)
        for (key, value) in header.metaValues { try Self.putMeta(sql.putMeta, key, value, exec) }
    }

    static func putMeta(
        _ statement: String, _ key: String, _ value: KeychainHeader.MetaValue,
        _ exec: (String, [PQValue]) throws(SecItemError) -> PQResult
    ) throws(SecItemError) {
        switch value {
        case .integer(let n): _ = try exec(statement, [.text(key), .int64(n), .null, .null])
        case .bytes(let b): _ = try exec(statement, [.text(key), .null, .bytes(b), .null])
        case .text(let t): _ = try exec(statement, [.text(key), .null, .null, .text(t)])
        }
    }

    /// Inside a write: re-encrypts every row under a new random data key (wrapped
    /// under `newKEK`, or this session's key-encryption key), rebuilds the
    /// commitment under it, and bumps the epoch.
    /// - Throws: `errSecDecode` when a row is damaged: rotation would lose it.
    func rotate(newKEK: KeyEncryptionKey?) throws(SecItemError) {
        var header = try bumpEpoch()
        let scan = try scanAll(maxVersion: commitment.generation)
        guard scan.damaged == 0 else {
            throw SecItemError(errSecDecode, "cannot rotate the data key: \(scan.damaged) damaged rows would be lost")
        }
        let newCodec = RowCodec(keys: try ItemKeys.generate(format: Int(KeychainHeader.formatVersion)))
        var fresh = RowSetCommitment(generation: commitment.generation)
        for match in scan.items {
            let row = try newCodec.encode(match.item, version: writeVersion)
            _ = try exec(sql.rewrite, rowValues(row) + [.int64(match.seq)])
            try fresh.insert(row.element, newCodec.keys.mac)
        }
        if let newKEK {
            header.protection = newKEK.protection
            header.scrypt = newKEK.scrypt
            header.salt = newKEK.salt
            kek = newKEK.kek
        }
        try header.wrap(newCodec.keys.dataKey, kek: kek)
        try writeHeader(header)
        self.header = header
        codec = newCodec
        commitment = fresh
    }

    // MARK: Rows

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
        _ = try exec(sql.insert, rowValues(row))
        try commitment.insert(row.element, codec.keys.mac)
    }

    /// Inside a write: replaces a row's contents, keeping its place in the order.
    func rewrite(_ old: Match, with item: StoredItem) throws(SecItemError) {
        let row = try codec.encode(item, version: writeVersion)
        _ = try exec(sql.rewrite, rowValues(row) + [.int64(old.seq)])
        try commitment.remove(old.element, codec.keys.mac)
        try commitment.insert(row.element, codec.keys.mac)
    }

    /// Inside a write: deletes rows.
    func remove(_ doomed: [Match]) throws(SecItemError) {
        _ = try exec(sql.delete, [.text(Self.arrayLiteral(doomed.map(\.seq)))])
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

    /// Checks every row and the row-set commitment, in one snapshot.
    /// - Returns: What is wrong, one line each; empty when all is well.
    func verify() throws(SecItemError) -> [String] {
        _ = try exec("BEGIN ISOLATION LEVEL REPEATABLE READ")
        do throws(SecItemError) {
            let state = try exec("SELECT generation, count, cells, mac FROM \(sql.q).state WHERE id = 1")
            if try currentEpoch(lock: false) != header.epoch { throw staleKeys() }
            guard state.rows == 1, let generation = state.int64(0, 0), let count = state.int64(0, 1),
                let committed = RowSetCommitment(generation: generation, count: count, cells: state.array(0, 2) ?? []),
                state.array(0, 3) == (try committed.mac(codec.keys.mac))
            else {
                _ = try exec(sql.commit)
                return ["the row-set commitment is missing or does not authenticate (altered outside secitem)"]
            }
            let scanned = try scan(exec(sql.selectInWrite([])), maxVersion: generation)
            _ = try exec(sql.commit)
            var problems: [String] = []
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
            return problems
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

extension Session {
    /// What `secitem diagnose` says: where the connection goes, whether the server
    /// answers and is writable, whether the keychain exists and the key unlocks it.
    /// Creates nothing; bounded by the connect and statement timeouts.
    static func inspect(_ configuration: PostgreSQLBackend.Configuration) -> (usable: Bool, notes: [String]) {
        var notes = ["connection: \(ConnectionString.redacted(configuration.connection))", "schema: \(configuration.schema)"]
        notes.append("key: \(configuration.keySource)")
        if case .automatic = configuration.keySource {
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
        let store = configuration.fileConfiguration(configuration.keySource).path
        let meta: [String: KeychainHeader.MetaValue]
        do {
            meta = Session.metaValues(try pq.execute(sql.readMeta, prepare: false, timeout: bound(configuration)))
        } catch where error.sqlState == "42P01" || error.sqlState == "3F000" {
            notes.append("no keychain in schema \(configuration.schema) yet: it is created on first use (needs CREATE on the database)")
            return (!pq.reportsReadOnly, notes)
        } catch {
            notes.append("cannot read the keychain: \(error.message)")
            return (false, notes)
        }
        do throws(SecItemError) {
            if case .integer(let version)? = meta["schema"] { notes.append("schema version \(version)") }
            let header = try Session.header(meta, store: store)
            let kek = try KeyEncryptionKey.forExisting(
                configuration.keySource, configuration.fileConfiguration(configuration.keySource), header: header)
            guard try header.unwrap(kek: kek.kek) != nil else {
                notes.append("the key does not unlock the keychain")
                return (false, notes)
            }
            notes.append("key epoch \(header.epoch); unlocked with the key")
            return (true, notes)
        } catch {
            notes.append("cannot be opened: \(error)")
            return (false, notes)
        }
    }
}

/// Opening a keychain: reads the header, or creates the schema and the keychain
/// under an advisory lock when they are missing.
private struct Bootstrap {
    let pq: PQConnection
    let sql: SQL
    let configuration: PostgreSQLBackend.Configuration
    let store: String

    func run() throws(SecItemError) -> (KeychainHeader, SecretBytes, RowCodec) {
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
        let resolved = try KeyEncryptionKey.forExisting(
            configuration.keySource, configuration.fileConfiguration(configuration.keySource), header: header)
        guard let dataKey = try header.unwrap(kek: resolved.kek) else {
            let what = header.protection == .passphrase ? "passphrase" : "key"
            throw SecItemError(errSecAuthFailed, "the \(what) does not unlock the keychain \(store)")
        }
        return (header, resolved.kek, RowCodec(keys: try ItemKeys(dataKey: dataKey, format: Int(header.format))))
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
        try Session.header(meta, store: store)
    }

    /// The meta rows; `nil` when the tables do not exist (and `allowMissing`).
    private func readMeta(allowMissing: Bool) throws(SecItemError) -> [String: KeychainHeader.MetaValue]? {
        do {
            let r = try pq.execute(sql.readMeta, prepare: false, timeout: Session.bound(configuration))
            return Session.metaValues(r)
        } catch where allowMissing && (error.sqlState == "42P01" || error.sqlState == "3F000") {
            return nil
        } catch {
            throw fail(error)
        }
    }

    /// Creates the schema and, when no other host did first, the keychain.
    /// - Returns: The new keychain's keys, or `nil` when another host made it.
    private func create() throws(SecItemError) -> (KeychainHeader, SecretBytes, RowCodec)? {
        let bound = Session.bound(configuration)
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
        do throws(SecItemError) {
            // Many hosts starting at once: one creates, the others wait here and then find it made.
            _ = try q(sql.advisoryLock, [.int64(sql.lockKey)])
            try run(sql.createSchema)
            if try q(sql.readMeta).rows > 0 {
                try run("COMMIT")
                return nil
            }
            let kek = try KeyEncryptionKey.forNewWrapping(
                configuration.keySource, configuration.fileConfiguration(configuration.keySource))
            let keys = try ItemKeys.generate(format: Int(KeychainHeader.formatVersion))
            var header = KeychainHeader(
                protection: kek.protection, scrypt: kek.scrypt, salt: kek.salt, wrappedDataKey: [], epoch: 1)
            try header.wrap(keys.dataKey, kek: kek.kek)
            try Session.putMeta(sql.putMeta, "schema", .integer(PostgreSQLBackend.schemaVersion), q)
            for (key, value) in header.metaValues { try Session.putMeta(sql.putMeta, key, value, q) }
            let empty = RowSetCommitment(generation: 0)
            _ = try q(sql.createState, [.int64(0), .int64(0), .bytes(empty.cells), .bytes(try empty.mac(keys.mac)), .int64(header.epoch)])
            try run("COMMIT")
            return (header, kek.kek, RowCodec(keys: keys))
        } catch {
            _ = try? pq.run("ROLLBACK", timeout: bound)
            throw error
        }
    }
}
