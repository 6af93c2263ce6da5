import Foundation
import SecItemCore
import SecItemSealedStore

/// Writes in one statement: an add, or an update or delete after the read that finds its
/// rows, sends the row change and the new row-set commitment together, in autocommit,
/// from the state this session committed last (``PostgreSQLSession/known``). One round
/// trip and one commit where a write transaction takes five or six (`BEGIN`, the state
/// row `FOR UPDATE`, the rows, the state row, `COMMIT`), and the state row is locked only
/// while that one statement commits.
///
/// Each holds what ``PostgreSQLSession/write(_:)`` holds:
/// - **The same state.** The statement changes nothing unless the state row still
///   holds `known` (generation and MAC) under this session's key epoch and the tables
///   are as secitem created them (``SQL/mayBeAltered``): no other write committed since
///   (every write moves the state row), so rows read earlier are as they were. The
///   state row's lock serializes it with every other write, on every host.
/// - **Authenticated, rollback-checked.** `known` was sealed by this session; it is
///   checked against this host's high-water mark read now, before the statement.
/// - **Whole or nothing.** The statement fails (and so changes nothing) unless it
///   touched exactly the rows it names; the commit is confirmed (no WARNING from a
///   cancelled wait for the synchronous standby) before the new state becomes the mark.
///
/// When the state moved (another host wrote, a rotation, an alteration to report), the
/// statement changes nothing and the call runs as a write transaction, which reads the
/// state afresh: a wasted round trip, after which this session knows the state again.
extension PostgreSQLSession {
    /// Adds `item` in one statement.
    /// - Returns: `false` when the state moved (nothing changed; run a write transaction).
    /// - Throws: `errSecDuplicateItem` (nothing changed), or what a write throws.
    func addInOneStatement(_ item: StoredItem) throws(SecItemError) -> Bool {
        guard let known, known.epoch == header.epoch else { return false }
        let row = try codec.encode(item, version: known.stored.generation + 1)
        var next = known.commitment
        try next.insert(row.element, codec.keys.mac)
        return try writeInOneStatement(sql.insertInOneStatement, rowValues(row), next: next, rows: 1, what: "adding an item")
    }

    /// Updates the items matching `query` in one statement after the read that finds them,
    /// when that read saw the state this session knows and found at most one item (several
    /// may swap primary keys: a write transaction handles that).
    /// - Returns: How many items changed, or `nil` when the state moved (nothing changed;
    ///   run a write transaction).
    func updateInOneStatement(matching query: ItemQuery, _ transform: (StoredItem) -> StoredItem) throws(SecItemError)
        -> Int?
    {
        guard let found = try matchesAtKnownState(query), found.count <= 1 else { return nil }
        guard let old = found.first, let known, let element = old.element else { return found.isEmpty ? 0 : nil }
        let row = try codec.encode(transform(old.item), version: known.stored.generation + 1)
        var next = known.commitment
        try next.remove(element, codec.keys.mac)
        try next.insert(row.element, codec.keys.mac)
        let done = try writeInOneStatement(
            sql.rewriteInOneStatement, rowValues(row) + [.int64(old.seq)], next: next, rows: 1, what: "updating an item")
        return done ? 1 : nil
    }

    /// Deletes the items matching `query` in one statement after the read that finds them,
    /// when that read saw the state this session knows.
    /// - Returns: How many items were deleted, or `nil` when the state moved (nothing
    ///   changed; run a write transaction).
    func deleteInOneStatement(matching query: ItemQuery) throws(SecItemError) -> Int? {
        guard let doomed = try matchesAtKnownState(query), let known else { return nil }
        if doomed.isEmpty { return 0 }
        var next = known.commitment
        for match in doomed {
            guard let element = match.element else { return nil }
            try next.remove(element, codec.keys.mac)
        }
        let done = try writeInOneStatement(
            sql.deleteInOneStatement, [.text(Self.arrayLiteral(doomed.map(\.seq))), .int64(Int64(doomed.count))],
            next: next, rows: doomed.count, what: "deleting items")
        return done ? doomed.count : nil
    }

    /// The items matching `query`, read outside a write, when the read saw the state this
    /// session knows; `nil` when it saw another (or the session knows none).
    private func matchesAtKnownState(_ query: ItemQuery) throws(SecItemError) -> [Match]? {
        guard known != nil else { return nil }
        lastRead = nil
        let found = try matches(query, limit: nil, inWrite: false)
        // No read (no row can match the query): nothing to change.
        guard let read = lastRead else { return found.isEmpty ? [] : nil }
        guard let known, known.epoch == header.epoch, read.generation == known.stored.generation, read.mac == known.stored.mac
        else { return nil }
        return found
    }

    /// Runs `statement` (``SQL/inOneStatement(_:after:expected:)``) with `values` and the
    /// state parameters: the move from ``known`` to `next`, stamped one generation on.
    /// - Returns: `false` when the state row had moved (nothing changed).
    private func writeInOneStatement(
        _ statement: String, _ values: [PQValue], next: RowSetCommitment, rows: Int, what: String
    ) throws(SecItemError) -> Bool {
        guard let known else { return false }
        // Checked before the statement, against a mark read now: the statement runs only
        // on this very state, and every mark recorded so far is of a state at or below it.
        // A mark beyond it (another process of this host saw a newer state) is no
        // finding yet: the store has most likely moved on, which the write transaction
        // reads and checks (and reports if it did not).
        guard try rollbackAdmits(HighWaterMark(known.stored, storeID: header.storeID)) else {
            self.known = nil
            return false
        }
        var next = next
        next.generation = known.stored.generation + 1
        let state = try next.sealed(codec.keys.mac)
        let warnings = pq?.warnings ?? 0
        let r: PQResult
        do throws(SecItemError) {
            r = try exec(
                statement,
                values + [
                    .int64(state.generation), .int64(state.count), .bytes(state.cells), .bytes(state.mac),
                    .int64(known.stored.generation), .bytes(known.stored.mac), .int64(known.epoch),
                ])
        } catch {
            switch lastSQLState {
            case "23505"?:
                throw error  // rolled back whole: the state is still `known`
            case "0A000"?:
                // A rule on the tables (not allowed in a statement with WITH): the write
                // transaction checks the tables and names what was added.
                self.known = nil
                return false
            case "22012"?:
                self.known = nil
                throw Self.misbehaving(what, schema: sql.schema)
            default:
                self.known = nil
                throw error
            }
        }
        guard r.rows == 1, let moved = r.int64(0, 0), let changed = r.int64(0, 1) else {
            self.known = nil
            throw SecItemError(errSecInvalidKeychain, "the PostgreSQL server answered \(what) with an unexpected result")
        }
        if moved == 0 {
            self.known = nil
            return false
        }
        guard moved == 1, changed == Int64(rows) else {
            self.known = nil
            throw Self.misbehaving(what, schema: sql.schema)
        }
        if (pq?.warnings ?? 0) != warnings {
            self.known = nil
            throw SecItemError(
                errSecNotAvailable,
                "the PostgreSQL server committed the write (\(what)) without confirming it: its wait for the "
                    + "synchronous standby was cancelled, so a failover may lose it; it may or may not be in the keychain")
        }
        self.known = KnownState(stored: state, commitment: next, epoch: header.epoch)
        rollback.committed(HighWaterMark(state, storeID: header.storeID))
        return true
    }

    /// Whether the rollback check would take `state` (this session's own last commit) as
    /// the store's state now: not below what this connection saw, nor below or beside
    /// this host's mark, read now. Records nothing (the state is this session's own,
    /// recorded when it committed it).
    private func rollbackAdmits(_ state: HighWaterMark) throws(SecItemError) -> Bool {
        guard rollback.mode != .off, let witness = rollback.witness else { return true }
        if let seen = rollback.lastEvidence, RollbackCheck.problem(state, against: seen) != nil { return false }
        if let mark = try witness.mark(for: rollback.store), RollbackCheck.problem(state, against: mark) != nil { return false }
        return true
    }

    /// The error for a statement that moved the state row but touched other rows than it named.
    static func misbehaving(_ what: String, schema: String) -> SecItemError {
        SecItemError(
            errSecInvalidKeychain,
            "\(what) touched other rows than it named in the PostgreSQL keychain (schema \(schema)): its tables do not "
                + "behave as secitem created them (a rule, trigger or row-level security policy added outside secitem?); "
                + "nothing was changed")
    }
}
