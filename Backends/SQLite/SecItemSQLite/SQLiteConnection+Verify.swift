import Foundation
import SecItemCore
import SecItemSealedStore

/// Reading every row, and verifying the file against its commitment.
extension SQLiteConnection {
    /// Every row, decoded or reported damaged, with every row's commitment element.
    func scanAll() throws(SecItemError)
        -> (items: [Match], damaged: [SQLiteBackend.DamagedRow], elements: [(seq: Int64, element: RowSetCommitment.Element)])
    {
        // Room for every row at once: a growing array would leave copies of short
        // (inline) item data behind in the buffers it outgrew, beyond any wiping.
        let rows = try db.statement("SELECT count(*) FROM \(table)")
        _ = try rows.step(during: "counting the items")
        let count = Int(rows.int64(0))
        rows.reset()
        let stmt = try db.statement("SELECT \(selectColumns) FROM \(table) ORDER BY seq")
        defer { stmt.reset() }
        var items: [Match] = []
        items.reserveCapacity(count)
        var damaged: [SQLiteBackend.DamagedRow] = []
        var elements: [(seq: Int64, element: RowSetCommitment.Element)] = []
        while try stmt.step(during: "reading every item") {
            let seq = stmt.int64(0)
            let version = format >= 2 ? stmt.int64(10) : 0
            if format >= 2, let uuid = stmt.blob(1), let sealed = stmt.blob(11) {
                elements.append((seq, RowSetCommitment.Element(uuid: uuid, version: version, sealed: sealed)))
            }
            switch try decode(stmt) {
            case .item(let item, let version):
                items.append(Match(seq: seq, item: item, primaryKeyMAC: stmt.bytes(3) ?? [],
                                   element: element(stmt, version: version)))
            case .damaged(let reason):
                let u = stmt.bytes(1) ?? []
                let id = UUID(bytes: u)
                damaged.append(.init(row: seq, id: id, itemClass: stmt.text(2) ?? "", reason: reason))
            }
        }
        return (items, damaged, elements)
    }

    // MARK: Verification

    /// Inside a read transaction: every row, the schema, and (format 2) the row set
    /// against the commitment.
    func verify() throws(SecItemError) -> SQLiteBackend.VerificationReport {
        try synchronise(force: true)
        try KeychainSchema.check(db, format: format)
        // The whole file, every index entry against its row (quick_check would not see
        // an index out of step with its table).
        try KeychainSchema.checkIntegrity(db, table: nil)
        var scan = try scanAll()
        defer { for i in scan.items.indices { scan.items[i].item.wipeData() } }
        var report = SQLiteBackend.VerificationReport(format: Int(format), damaged: scan.damaged)
        guard format >= 2 else { return report }
        report.commitment = try commitmentValue()
        let comparison = try RowSetComparison(
            committed: commitment, present: scan.elements.map { (seq: $0.seq, element: $0.element) }, codec.keys.mac)
        if comparison.rowCountDifference != 0 { report.rowCountDifference = Int(comparison.rowCountDifference) }
        for finding in comparison.findings {
            switch finding {
            case .missing(let element):
                report.rowSet.append(.init(kind: .missing, id: element.id, committedVersion: element.version))
            case .older(let committed, let present, let seq), .replaced(let committed, let present, let seq):
                let kind: SQLiteBackend.RowSetDifference.Kind = present.version < committed.version ? .older : .replaced
                report.rowSet.append(.init(
                    kind: kind, id: committed.id, row: seq, fileVersion: present.version, committedVersion: committed.version))
            case .unknown(let element, let seq):
                report.rowSet.append(.init(kind: .unknown, id: element.id, row: seq, fileVersion: element.version))
            case .unlisted:
                report.rowSet.append(.init(kind: .unlisted))
            }
        }
        return report
    }

    /// Inside a read transaction: the file's state as it is, unchecked (an operator
    /// accepting it); `nil` for a format-1 file.
    func currentState() throws(SecItemError) -> HighWaterMark? {
        try synchronise(force: true, checking: false)
        guard format >= 2 else { return nil }
        return observed(try commitment.sealed(codec.keys.mac))
    }

    /// The value `secitem verify` prints and `--expect-commitment` compares:
    /// `<generation>:<first 16 bytes of the state MAC, hex>`.
    func commitmentValue() throws(SecItemError) -> String {
        observed(try commitment.sealed(codec.keys.mac)).description
    }
}
