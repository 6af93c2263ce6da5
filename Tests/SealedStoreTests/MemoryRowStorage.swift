import Foundation
import SecItemCore
import SecItemSealedStore

/// A row kept in memory, handed to the codec in place as a store hands back a row it read.
final class StoredRow: RowColumns {
    let row: EncodedRow
    let position: Int64
    let bindsPosition: Bool
    private let allocations: [UnsafeMutableRawBufferPointer]
    private let buffers: [UnsafeRawBufferPointer]

    init(_ row: EncodedRow, seq: Int64 = 0, bindsPosition: Bool = false) {
        self.row = row
        position = seq
        self.bindsPosition = bindsPosition
        let columns = [row.uuid, row.primaryKeyMAC, row.sealed] + row.indexMACs.map { $0 ?? [] }
        allocations = columns.map { bytes in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
            buffer.copyBytes(from: bytes)
            return buffer
        }
        buffers = zip(allocations, columns).map { UnsafeRawBufferPointer(rebasing: $0[0..<$1.count]) }
    }

    deinit { for buffer in allocations { buffer.deallocate() } }

    var uuid: UnsafeRawBufferPointer? { buffers[0] }
    var itemClass: String? { row.itemClass }
    var primaryKeyMAC: UnsafeRawBufferPointer? { buffers[1] }
    func indexMAC(_ index: Int) -> UnsafeRawBufferPointer? { row.indexMACs[index] == nil ? nil : buffers[3 + index] }
    var version: Int64 { row.version }
    var sealed: UnsafeRawBufferPointer? { buffers[2] }
    var seq: Int64? { bindsPosition ? position : nil }
}

/// The sealed store's storage protocol kept in arrays: no SQLite, no PostgreSQL. A
/// write works on copies and keeps them only when its body and the state row's write
/// succeed, as a database transaction does; `tables` is what a reader (or someone
/// editing the store behind its back) sees.
final class MemoryRowStorage: SealedRowStorage {
    struct Tables {
        var rows: [(seq: Int64, row: EncodedRow)] = []
        var meta: [String: KeychainHeader.MetaValue] = [:]
        var state: StoredRowSetState?
        var lastSeq: Int64 = 0
    }

    /// The committed tables.
    var tables = Tables()
    /// Inside a write: the tables as the write changed them so far.
    private var working: Tables?
    private(set) var codec: RowCodec
    var commitment = RowSetCommitment(generation: 0)
    /// Format 3 seals each row with its position; format 2 does not.
    let format: Int
    /// How many times rows had their primary keys cleared (an update swapping keys).
    private(set) var clearedKeys = 0

    /// A new, empty store: a header under `kek` and the empty commitment.
    init(format: Int, kek: SecretBytes) throws(SecItemError) {
        self.format = format
        let keys = try ItemKeys.generate(format: format)
        codec = RowCodec(keys: keys)
        var header = KeychainHeader(protection: .key, wrappedDataKey: [], epoch: 1, format: Int64(format))
        header.storeID = try KeychainHeader.newStoreID()
        try header.wrap(keys.dataKey, kek: kek)
        tables.meta = Dictionary(uniqueKeysWithValues: header.metaValues.map { ($0.key, $0.value) })
        tables.state = try RowSetCommitment(generation: 0).sealed(keys.mac)
    }

    /// Replaces the codec (after a rotation the caller committed).
    func use(_ codec: RowCodec) { self.codec = codec }

    private var current: Tables {
        get { working ?? tables }
        set { if working != nil { working = newValue } else { tables = newValue } }
    }

    func withWriteTransaction<R>(_ body: () throws(SecItemError) -> R) throws(SecItemError) -> R {
        precondition(working == nil, "writes do not nest")
        working = tables
        defer { working = nil }
        let (locked, _) = try authenticatedState(store: "memory")
        commitment = locked
        let result = try body()
        try storeCommitment()
        tables = working!
        return result
    }

    func matches(_ query: ItemQuery, limit: Int?, forWrite: Bool) throws(SecItemError) -> [SealedMatch] {
        if let limit, limit <= 0 { return [] }
        let maxVersion = forWrite ? commitment.generation : (current.state?.generation ?? 0)
        var out: [SealedMatch] = []
        for (seq, row) in current.rows.sorted(by: { $0.seq < $1.seq }) {
            let stored = StoredRow(row, seq: seq, bindsPosition: format >= 3)
            guard case .item(let item, _) = try codec.decode(stored, maxVersion: maxVersion), query.matches(item) else {
                continue
            }
            out.append(SealedMatch(seq: seq, item: item, primaryKeyMAC: row.primaryKeyMAC, element: row.element))
            if let limit, out.count >= limit { break }
        }
        return out
    }

    func nextRowPosition() throws(SecItemError) -> Int64? { format >= 3 ? current.lastSeq + 1 : nil }

    func insertRow(_ row: EncodedRow, at seq: Int64?) throws(SecItemError) {
        let seq = seq ?? current.lastSeq + 1
        guard !current.rows.contains(where: { $0.row.primaryKeyMAC == row.primaryKeyMAC || $0.row.uuid == row.uuid }) else {
            throw SecItemError(errSecDuplicateItem, "an item with the same primary key is already in the store")
        }
        guard !current.rows.contains(where: { $0.seq == seq }) else { throw SecItemError(errSecIO, "row \(seq) is taken") }
        current.rows.append((seq, row))
        current.lastSeq = max(current.lastSeq, seq)
    }

    func replaceRow(at seq: Int64, with row: EncodedRow) throws(SecItemError) {
        guard let index = current.rows.firstIndex(where: { $0.seq == seq }) else {
            throw SecItemError(errSecIO, "the row being updated vanished")
        }
        guard !current.rows.contains(where: { $0.seq != seq && $0.row.primaryKeyMAC == row.primaryKeyMAC }) else {
            throw SecItemError(errSecDuplicateItem, "the update would give two items the same primary key")
        }
        current.rows[index].row = row
    }

    func deleteRows(at seqs: [Int64]) throws(SecItemError) {
        for seq in seqs {
            guard let index = current.rows.firstIndex(where: { $0.seq == seq }) else {
                throw SecItemError(errSecIO, "the row being deleted vanished")
            }
            current.rows.remove(at: index)
        }
    }

    func clearPrimaryKeys(at seqs: [Int64]) throws(SecItemError) {
        clearedKeys += 1
        for (i, entry) in current.rows.enumerated() where seqs.contains(entry.seq) {
            current.rows[i].row.primaryKeyMAC = entry.row.uuid
        }
    }

    func readHeaderValues() throws(SecItemError) -> [String: KeychainHeader.MetaValue] { current.meta }

    func writeHeaderValues(_ values: [(key: String, value: KeychainHeader.MetaValue)]) throws(SecItemError) {
        current.meta = current.meta.filter { !$0.key.hasPrefix("scrypt_") && !$0.key.hasPrefix("kek_") }
        for (key, value) in values { current.meta[key] = value }
    }

    func readStateRow() throws(SecItemError) -> StoredRowSetState? { current.state }

    func writeStateRow(_ state: StoredRowSetState) throws(SecItemError) { current.state = state }
}
