import Foundation
package import SecItemCore

/// A row a search found: where it is, the item it opened to, and what a write that
/// replaces it needs (its primary-key HMAC, and the row as the commitment counts it).
package struct SealedMatch {
    /// The row's position in the store's order (`seq`).
    package var seq: Int64
    package var item: StoredItem
    package var primaryKeyMAC: [UInt8]
    /// The row as the row-set commitment counts it; `nil` for a format-1 row (no commitment).
    package var element: RowSetCommitment.Element?

    package init(seq: Int64, item: StoredItem, primaryKeyMAC: [UInt8], element: RowSetCommitment.Element?) {
        self.seq = seq
        self.item = item
        self.primaryKeyMAC = primaryKeyMAC
        self.element = element
    }
}

/// The state row as a store keeps it: the commitment's generation, row count and
/// cells, and the MAC sealing them under the data key's HMAC key.
package struct StoredRowSetState: Equatable {
    package var generation: Int64
    package var count: Int64
    package var cells: [UInt8]
    package var mac: [UInt8]

    package init(generation: Int64, count: Int64, cells: [UInt8], mac: [UInt8]) {
        self.generation = generation
        self.count = count
        self.cells = cells
        self.mac = mac
    }
}

extension RowSetCommitment {
    /// The state row that stores this commitment, sealed under `mac`.
    package func sealed(_ mac: MACContext) throws(SecItemError) -> StoredRowSetState {
        StoredRowSetState(generation: generation, count: count, cells: cells, mac: try self.mac(mac))
    }

    /// The commitment a stored state row holds, when its MAC authenticates it under `mac`;
    /// `nil` when it was altered (or made under another key).
    package static func authenticated(_ stored: StoredRowSetState, _ mac: MACContext) throws(SecItemError)
        -> RowSetCommitment?
    {
        guard let commitment = RowSetCommitment(generation: stored.generation, count: stored.count, cells: stored.cells),
            stored.mac == (try commitment.mac(mac))
        else { return nil }
        return commitment
    }
}

extension HighWaterMark {
    /// The mark of a state row: its generation and the first 16 bytes of its MAC.
    package init(_ state: StoredRowSetState, storeID: [UInt8]?) {
        self.init(generation: state.generation, digest: Array(state.mac.prefix(16)), storeID: storeID)
    }
}

/// Where a sealed store keeps its rows, its header and its state row: what the file
/// (SQLite) and PostgreSQL backends implement, each as a thin adapter over its own
/// tables, and what the sealed store's own tests implement in memory.
///
/// The rules an adapter keeps:
/// - **Inside the caller's write.** The row and header methods run inside the write
///   transaction ``withWriteTransaction(_:)`` opened; they never commit or roll back.
///   A write that throws leaves the store as it was.
/// - **Rows as given.** A row is stored with every column of ``EncodedRow`` byte for
///   byte; a row read back is handed to the codec as ``RowColumns``, in place.
/// - **One unique primary-key HMAC.** Inserting or replacing a row whose primary-key
///   HMAC another row holds throws `errSecDuplicateItem` and changes nothing.
/// - **Exact counts.** A replace or delete of a row that is not there is an error
///   (`errSecIO` or `errSecInvalidKeychain`), never a silent success: something
///   changed the store behind the transaction's back.
/// - **Order.** `seq` grows with every insert; searches return rows oldest first.
///
/// What is written once, here, for every adapter: sealing an item into a row and
/// keeping the commitment in step (``insertItem(_:)``, ``replaceItems(_:with:)``,
/// ``removeItems(_:)``), an update whose new keys collide with the old ones
/// (``updateItems(matching:_:)``), the state row's authentication
/// (``authenticatedState()``, ``storeCommitment()``), the header (``readHeader(source:)``,
/// ``writeHeader(_:)``), re-encrypting every row (``reencrypt(_:under:version:moving:beforeRow:)``)
/// and comparing the rows with the commitment (``RowSetComparison``).
package protocol SealedRowStorage: AnyObject {
    /// The codec of the store's current data key.
    var codec: RowCodec { get }
    /// Inside a write: the commitment as locked when the write began, updated by every
    /// row change; the adapter stores it (``storeCommitment()``) before it commits.
    var commitment: RowSetCommitment { get set }

    /// Runs `body` as one write transaction: the store's state is current and locked
    /// against other writers when `body` starts, and the commitment `body`'s changes
    /// produced is stored before the commit. Rolls back on any error and rethrows it.
    func withWriteTransaction<R>(_ body: () throws(SecItemError) -> R) throws(SecItemError) -> R

    /// The rows matching `query`, oldest first, at most `limit`. With `forWrite`, inside a
    /// write transaction, each carries its commitment element.
    func matches(_ query: ItemQuery, limit: Int?, forWrite: Bool) throws(SecItemError) -> [SealedMatch]

    /// The position the next inserted row gets, when rows are sealed with it (format 3);
    /// `nil` when the store numbers its rows itself and the format does not bind them.
    func nextRowPosition() throws(SecItemError) -> Int64?
    /// Stores a new row (at `seq`, when given).
    /// - Throws: `errSecDuplicateItem` when another row holds its primary-key HMAC.
    func insertRow(_ row: EncodedRow, at seq: Int64?) throws(SecItemError)
    /// Replaces every column of the row at `seq`, keeping its place in the order.
    /// - Throws: `errSecDuplicateItem` when another row holds the new primary-key HMAC.
    func replaceRow(at seq: Int64, with row: EncodedRow) throws(SecItemError)
    /// Deletes the rows at `seqs`.
    func deleteRows(at seqs: [Int64]) throws(SecItemError)
    /// Sets the primary-key HMAC of the rows at `seqs` to their UUIDs (unique, and never
    /// an HMAC), so that rows being rewritten can take each other's keys.
    func clearPrimaryKeys(at seqs: [Int64]) throws(SecItemError)

    /// The header's values as stored (the `meta` rows).
    func readHeaderValues() throws(SecItemError) -> [String: KeychainHeader.MetaValue]
    /// Stores `values`, first removing the `scrypt_*` and `kek_*` rows (a rekey may drop them).
    func writeHeaderValues(_ values: [(key: String, value: KeychainHeader.MetaValue)]) throws(SecItemError)

    /// The state row as stored, `nil` when there is none.
    func readStateRow() throws(SecItemError) -> StoredRowSetState?
    /// Stores the state row.
    func writeStateRow(_ state: StoredRowSetState) throws(SecItemError)
}

extension SealedRowStorage {
    /// The version rows written by the current write get: the committed generation plus one.
    package var writeVersion: Int64 { commitment.generation + 1 }

    // MARK: Rows

    /// Inside a write: seals `item` into a new row after the last one.
    /// - Throws: `errSecDuplicateItem` when an item with its primary key is stored.
    package func insertItem(_ item: StoredItem) throws(SecItemError) {
        let seq = try nextRowPosition()
        let row = try codec.encode(item, version: writeVersion, seq: seq)
        try insertRow(row, at: seq)
        try commitment.insert(row.element, codec.keys.mac)
    }

    /// Inside a write: rewrites each row of `old` with the item at the same index of `new`.
    ///
    /// Rows are rewritten one by one under the unique primary-key HMAC; when one takes a
    /// key another is about to give up, their keys are cleared first
    /// (``clearPrimaryKeys(at:)``), so the rewrite fails only on a real collision.
    package func replaceItems(_ old: [SealedMatch], with new: [StoredItem]) throws(SecItemError) {
        precondition(old.count == new.count, "one new item per row")
        if old.count > 1 {
            let oldKeys = Set(old.map(\.primaryKeyMAC))
            var takesAnOldKey = false
            for item in new where !takesAnOldKey {
                takesAnOldKey = oldKeys.contains(try codec.primaryKeyMAC(item.primaryKey))
            }
            if takesAnOldKey { try clearPrimaryKeys(at: old.map(\.seq)) }
        }
        for (match, item) in zip(old, new) {
            let row = try codec.encode(item, version: writeVersion, seq: codec.format >= 3 ? match.seq : nil)
            try replaceRow(at: match.seq, with: row)
            if let element = match.element { try commitment.remove(element, codec.keys.mac) }
            try commitment.insert(row.element, codec.keys.mac)
        }
    }

    /// Inside a write: deletes the rows of `doomed`.
    package func removeItems(_ doomed: [SealedMatch]) throws(SecItemError) {
        guard !doomed.isEmpty else { return }
        try deleteRows(at: doomed.map(\.seq))
        for match in doomed {
            if let element = match.element { try commitment.remove(element, codec.keys.mac) }
        }
    }

    // MARK: The backend's calls

    /// ``SecItemBackend/add(_:)``: one write that inserts `item`.
    package func addItem(_ item: StoredItem) throws(SecItemError) {
        try withWriteTransaction { () throws(SecItemError) in try insertItem(item) }
    }

    /// ``SecItemBackend/update(matching:_:)``: one write that rewrites every match.
    package func updateItems(matching query: ItemQuery, _ transform: (StoredItem) -> StoredItem) throws(SecItemError)
        -> Int
    {
        try withWriteTransaction { () throws(SecItemError) -> Int in
            let old = try matches(query, limit: nil, forWrite: true)
            guard !old.isEmpty else { return 0 }
            try replaceItems(old, with: old.map { transform($0.item) })
            return old.count
        }
    }

    /// ``SecItemBackend/delete(matching:)``: one write that deletes every match.
    package func deleteItems(matching query: ItemQuery) throws(SecItemError) -> Int {
        try withWriteTransaction { () throws(SecItemError) -> Int in
            let doomed = try matches(query, limit: nil, forWrite: true)
            try removeItems(doomed)
            return doomed.count
        }
    }

    // MARK: Header and state row

    /// The header as stored, checked (`source` names the store in errors).
    package func readHeader(source: String) throws(SecItemError) -> KeychainHeader {
        try KeychainHeader.parse(try readHeaderValues(), source: source)
    }

    /// Inside a write: stores `header` (its `scrypt_*` and `kek_*` rows replaced).
    package func writeHeader(_ header: KeychainHeader) throws(SecItemError) {
        try writeHeaderValues(header.metaValues)
    }

    /// The stored commitment, authenticated under the current data key, and its state row.
    /// - Throws: `errSecInvalidKeychain` when the state row is missing or does not
    ///   authenticate (`store` names the store).
    package func authenticatedState(store: String) throws(SecItemError) -> (RowSetCommitment, StoredRowSetState) {
        guard let stored = try readStateRow() else {
            throw SecItemError(errSecInvalidKeychain, "the keychain \(store) lost its row-set commitment (altered outside secitem)")
        }
        guard let commitment = try RowSetCommitment.authenticated(stored, codec.keys.mac) else {
            throw SecItemError(
                errSecInvalidKeychain,
                "the keychain \(store) was altered outside secitem: its row-set commitment does not authenticate")
        }
        return (commitment, stored)
    }

    /// Inside a write: stamps the commitment with this write's generation and stores it.
    /// - Returns: The state row written (its MAC is what the rollback evidence keeps).
    @discardableResult
    package func storeCommitment() throws(SecItemError) -> StoredRowSetState {
        commitment.generation = writeVersion
        let state = try commitment.sealed(codec.keys.mac)
        try writeStateRow(state)
        return state
    }

    // MARK: Rotation

    /// Inside a write: seals every item of `rows` again under `newCodec`, each at its own
    /// place (`moving`: inserted, into a table the old rows are not in; else replacing
    /// its row), stamped `version`.
    /// - Parameter beforeRow: Called with each row's index before it is written (tests
    ///   inject a failure or a pause there).
    /// - Returns: The commitment to the rewritten rows.
    package func reencrypt(
        _ rows: [SealedMatch], under newCodec: RowCodec, version: Int64, moving: Bool,
        beforeRow: (Int) throws(SecItemError) -> Void = { _ throws(SecItemError) in }
    ) throws(SecItemError) -> RowSetCommitment {
        var fresh = RowSetCommitment(generation: version)
        for (index, match) in rows.enumerated() {
            try beforeRow(index)
            let row = try newCodec.encode(match.item, version: version, seq: newCodec.format >= 3 ? match.seq : nil)
            if moving {
                try insertRow(row, at: match.seq)
            } else {
                try replaceRow(at: match.seq, with: row)
            }
            try fresh.insert(row.element, newCodec.keys.mac)
        }
        return fresh
    }
}

/// The rows a store holds compared with its commitment: what `verify` reports.
package struct RowSetComparison {
    /// One row on one side only, or on both at different versions.
    package enum Finding: Equatable {
        /// A committed row is not in the store: deleted outside secitem.
        case missing(RowSetCommitment.Element)
        /// The store holds an older version (`present`) of a committed row: restored from an earlier copy.
        case older(committed: RowSetCommitment.Element, present: RowSetCommitment.Element, seq: Int64?)
        /// The store holds another box of a committed row at the same or a newer version.
        case replaced(committed: RowSetCommitment.Element, present: RowSetCommitment.Element, seq: Int64?)
        /// A row the commitment does not know: copied in from elsewhere.
        case unknown(RowSetCommitment.Element, seq: Int64?)
        /// Too many rows differ to list them one by one.
        case unlisted
    }

    /// The rows present less the rows committed.
    package var rowCountDifference: Int64
    /// Each difference, the committed rows' first (by version), then the unknown (by position).
    package var findings: [Finding]

    package var isIntact: Bool { rowCountDifference == 0 && findings.isEmpty }

    /// Compares the rows `present` (each with its position, when the store has one) with `committed`.
    package init(committed: RowSetCommitment, present: [(seq: Int64?, element: RowSetCommitment.Element)], _ mac: MACContext)
        throws(SecItemError)
    {
        var actual = RowSetCommitment(generation: committed.generation)
        for (_, element) in present { try actual.insert(element, mac) }
        rowCountDifference = actual.count - committed.count
        findings = []
        guard actual.cells != committed.cells else { return }
        guard let (onlyCommitted, onlyPresent) = try committed.difference(actual, mac) else {
            findings = [.unlisted]
            return
        }
        var seqByElement: [RowSetCommitment.Element: Int64] = [:]
        for (seq, element) in present where seqByElement[element] == nil { seqByElement[element] = seq }
        var presentByID = Dictionary(onlyPresent.map { ($0.uuid, $0) }, uniquingKeysWith: { a, _ in a })
        for element in onlyCommitted.sorted(by: { $0.version < $1.version }) {
            if let found = presentByID.removeValue(forKey: element.uuid) {
                findings.append(
                    found.version < element.version
                        ? .older(committed: element, present: found, seq: seqByElement[found])
                        : .replaced(committed: element, present: found, seq: seqByElement[found]))
            } else {
                findings.append(.missing(element))
            }
        }
        for element in presentByID.values.sorted(by: { (seqByElement[$0] ?? 0) < (seqByElement[$1] ?? 0) }) {
            findings.append(.unknown(element, seq: seqByElement[element]))
        }
    }
}
