import SecItemCore
import SecItemSealedStore

/// Staying current without a query per operation, and the transactions every call runs in.
///
/// SQLite's data version (`SQLITE_FCNTL_DATA_VERSION`, a C call) changes with every
/// commit and is brought up to date when a transaction starts. A read runs without
/// BEGIN and then looks at it: unchanged since this connection last synchronised (or
/// committed) means the snapshot it read is the state it knows; changed means it
/// synchronises (schema, header, keys, commitment) and reads again inside one
/// snapshot. A write looks at it right after `BEGIN IMMEDIATE`, under the write lock.
extension SQLiteConnection {
    /// The state the rollback evidence compares: generation, digest, store id.
    func observed(_ state: StoredRowSetState) -> HighWaterMark {
        HighWaterMark(state, storeID: header.storeID)
    }

    /// Inside a transaction: brings this connection up to the file's current state
    /// when another connection committed since it last looked (or when `force`).
    ///
    /// A format-2 state read is compared with the high-water mark (``RollbackCheck``)
    /// before this connection takes it as known; `checking: false` only for the
    /// operator's acceptance of a restore.
    func synchronise(force: Bool, checking: Bool = true) throws(SecItemError) {
        let dataVersion = db.fileDataVersion
        guard force || dataVersion != knownDataVersion else { return }
        synchronisations += 1
        let schemaVersion = try db.pragma("schema_version")
        let fresh = try db.readHeader()
        let schemaChanged = schemaVersion != knownSchemaVersion || fresh.format != header.format
        if schemaChanged {
            try KeychainSchema.check(db, format: fresh.format)
            try KeychainSchema.checkIndexRoots(db, format: fresh.format)
        }
        if fresh.epoch != header.epoch || fresh.format != header.format || fresh.wrappedDataKey != header.wrappedDataKey {
            guard let dataKey = try fresh.unwrap(kek: kek) else {
                throw SecItemError(
                    errSecAuthFailed, "the keychain \(db.path) was rekeyed by another process; open it with the new key")
            }
            codec = RowCodec(keys: try ItemKeys(dataKey: dataKey, format: Int(fresh.format)))
            forgetStatements()
        }
        header = fresh
        if fresh.format >= 2 {
            let state: StoredRowSetState
            (commitment, state) = try authenticatedState(store: db.path)
            if checking && !bulk { try rollback.check(observed(state)) }
        }
        knownSchemaVersion = schemaVersion
        knownDataVersion = dataVersion
        if schemaChanged && !force { try checkIndexesAgreeWithRows() }
    }

    /// Before a connection's first write, and after a schema change: every index entry of
    /// the items table against its row (`PRAGMA integrity_check(sealed_items)`), when the
    /// store holds at most ``SQLiteBackend/Configuration/openIntegrityCheckItemLimit`` rows
    /// (the committed count; a format-1 file is always checked, on open). Larger stores get
    /// the index-root check alone, and the full check in `verify`.
    ///
    /// A write needs it: a damaged UNIQUE index lets a duplicate in, a stale entry makes
    /// an update or delete reach another row. A read does not: every row a read returns
    /// is compared with what was asked for (the primary-key HMAC the box binds, or every
    /// attribute with the core's matcher), so a damaged index can make a read fail or
    /// miss, never hand out another item; and a miss is what deleting the row does, which
    /// reads do not notice either (docs/file-format.md). So `find -w` on a store of 1,000
    /// items skips ~14 million instructions of checking on open.
    func checkIndexesAgreeWithRows() throws(SecItemError) {
        if format < 2 || commitment.count <= Int64(integrityCheckItemLimit) {
            try KeychainSchema.checkIntegrity(db, table: table)
        }
        indexesChecked = true
    }

    /// A read: no BEGIN (one SELECT is its own snapshot); then the data version
    /// says whether the snapshot read is the state this connection knows. If not,
    /// the read runs again inside one snapshot after synchronising.
    func read<R>(_ body: () throws(SecItemError) -> R) throws(SecItemError) -> R {
        if bulk { return try body() }
        let first: Result<R, SecItemError>
        do { first = .success(try body()) } catch { first = .failure(error) }
        if db.fileDataVersion == knownDataVersion { return try first.get() }
        // Another connection committed: the state read next is checked against a mark
        // read before its snapshot begins (RollbackCheck says why).
        try rollback.prime()
        return try db.transaction(write: false) { () throws(SecItemError) -> R in
            try synchronise(force: false)
            return try body()
        }
    }

    /// A write in one `BEGIN IMMEDIATE` transaction: synchronises under the write
    /// lock, upgrades a format-1 file first, and rewrites the state row when the
    /// row set changed. On any failure the connection forgets what it cached.
    func write<R>(_ body: () throws(SecItemError) -> R) throws(SecItemError) -> R {
        let saved = (header, kek, codec, commitment)
        do {
            if bulk { return try writeSteps(body) }
            rowsReplaced = false
            writtenState = nil
            let result = try db.transaction(write: true) { () throws(SecItemError) -> R in try writeSteps(body) }
            // This commit moved the data version; what this connection holds is that state.
            knownDataVersion = db.fileDataVersion
            // Only now, committed, may the state become this host's mark.
            if let state = writtenState {
                writtenState = nil
                rollback.committed(state)
            }
            if rowsReplaced {
                // secure_delete zeroed the old contents in the pages this commit wrote;
                // the WAL still holds the pages as they were before. Empty it now
                // (without waiting: when another connection reads, the next checkpoint
                // or the last close does it).
                rowsReplaced = false
                db.checkpointTruncate()
            }
            return result
        } catch {
            (header, kek, codec, commitment) = saved
            rowSetChanged = false
            forgetState()
            throw error
        }
    }

    private func writeSteps<R>(_ body: () throws(SecItemError) -> R) throws(SecItemError) -> R {
        try synchronise(force: false)
        if !indexesChecked { try checkIndexesAgreeWithRows() }
        rowSetChanged = false
        if format < KeychainHeader.fileFormatVersion {
            try rewriteEverything(newKEK: nil, beforeRow: beforeUpgradedRow)
        }
        let result = try body()
        if rowSetChanged {
            let state = try storeCommitment()
            if !bulk { writtenState = observed(state) }
            rowSetChanged = false
        }
        return result
    }

    /// Makes the next operation synchronise from the file (after a rollback).
    func forgetState() {
        knownDataVersion = -1
        knownSchemaVersion = -1
    }
}
