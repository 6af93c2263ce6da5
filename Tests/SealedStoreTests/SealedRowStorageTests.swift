import Foundation
import SecItemConformance
import SecItemCore
import SecItemSealedStore
import Testing

/// The sealed store's logic (sealing items, the commitment kept in step, updates whose
/// keys collide, the state row, the header, rotation, the comparison `verify` reports)
/// through its storage protocol, on ``MemoryRowStorage``: no SQLite, no PostgreSQL.
@Suite struct SealedRowStorageTests {
    /// Format 2 (PostgreSQL's rows: not sealed with their position) and 3 (the file's).
    static let formats = [2, 3]

    private func password(_ account: String, service: String = "svc", data: String = "secret") -> StoredItem {
        StoredItem(
            itemClass: .genericPassword, id: UUID(),
            attributes: [
                SecConstant.kSecAttrService: .string(service), SecConstant.kSecAttrAccount: .string(account),
                SecConstant.kSecAttrAccessGroup: .string("group"),
            ],
            data: Data(data.utf8))
    }

    private func query(account: String? = nil) -> ItemQuery {
        var attributes: [String: AttributeValue] = [SecConstant.kSecAttrService: .string("svc")]
        if let account { attributes[SecConstant.kSecAttrAccount] = .string(account) }
        return ItemQuery(itemClass: .genericPassword, attributes: attributes, accessGroups: ["group"])
    }

    private func store(_ format: Int) throws -> (MemoryRowStorage, SecretBytes) {
        let kek = try SecretBytes(random: 32)
        return (try MemoryRowStorage(format: format, kek: kek), kek)
    }

    private func accounts(_ storage: MemoryRowStorage) throws -> [String] {
        try storage.matches(query(), limit: nil, forWrite: false).compactMap {
            $0.item.attributes[SecConstant.kSecAttrAccount]?.stringValue
        }
    }

    @Test("add, find, update and delete keep the commitment in step with the rows", arguments: formats)
    func writes(format: Int) throws {
        let (storage, _) = try store(format)
        for account in ["a", "b", "c"] { try storage.addItem(password(account)) }
        #expect(try accounts(storage) == ["a", "b", "c"])
        #expect(try storage.updateItems(matching: query(account: "b")) { var i = $0; i.data = Data("new".utf8); return i } == 1)
        #expect(try storage.deleteItems(matching: query(account: "a")) == 1)
        #expect(try storage.deleteItems(matching: query(account: "nobody")) == 0)
        #expect(try accounts(storage) == ["b", "c"])
        let (committed, state) = try storage.authenticatedState(store: "memory")
        #expect(state.generation == 6)  // one per write: three adds, an update, two deletes (this store writes the state row every time)
        #expect(committed.count == 2)
        let comparison = try RowSetComparison(
            committed: committed, present: storage.tables.rows.map { (seq: $0.seq, element: $0.row.element) },
            storage.codec.keys.mac)
        #expect(comparison.isIntact)
        let found = try storage.matches(query(account: "b"), limit: 1, forWrite: false)
        #expect(found.first?.item.data == Data("new".utf8))
    }

    @Test("a duplicate add and a colliding update change nothing", arguments: formats)
    func collisions(format: Int) throws {
        let (storage, _) = try store(format)
        try storage.addItem(password("a"))
        try storage.addItem(password("b"))
        let before = storage.tables.rows.map(\.row.sealed)
        let beforeState = storage.tables.state
        #expect(throws: SecItemError.self) { try storage.addItem(password("a")) }
        // Both items would become account "x": two items with one primary key.
        #expect(throws: SecItemError.self) {
            _ = try storage.updateItems(matching: query()) { var i = $0; i.attributes[SecConstant.kSecAttrAccount] = .string("x"); return i }
        }
        #expect(storage.tables.rows.map(\.row.sealed) == before)
        #expect(storage.tables.state == beforeState)
        #expect(try accounts(storage) == ["a", "b"])
    }

    @Test("an update that swaps two items' keys clears them first and succeeds", arguments: formats)
    func swap(format: Int) throws {
        let (storage, _) = try store(format)
        try storage.addItem(password("a", data: "was a"))
        try storage.addItem(password("b", data: "was b"))
        let updated = try storage.updateItems(matching: query()) { item in
            var i = item
            let account = item.attributes[SecConstant.kSecAttrAccount]?.stringValue
            i.attributes[SecConstant.kSecAttrAccount] = .string(account == "a" ? "b" : "a")
            return i
        }
        #expect(updated == 2)
        #expect(storage.clearedKeys == 1)
        let a = try storage.matches(query(account: "a"), limit: nil, forWrite: false)
        #expect(a.map(\.item.data) == [Data("was b".utf8)])
        // The cleared keys did not survive: every row holds its item's primary-key HMAC.
        for entry in storage.tables.rows {
            #expect(entry.row.primaryKeyMAC != entry.row.uuid)
        }
        let (committed, _) = try storage.authenticatedState(store: "memory")
        let comparison = try RowSetComparison(
            committed: committed, present: storage.tables.rows.map { (seq: $0.seq, element: $0.row.element) },
            storage.codec.keys.mac)
        #expect(comparison.isIntact)
    }

    @Test("rows deleted, rolled back or copied in behind the store's back are each named", arguments: formats)
    func comparison(format: Int) throws {
        let (storage, _) = try store(format)
        for account in ["a", "b", "c", "d"] { try storage.addItem(password(account)) }
        let old = storage.tables.rows
        _ = try storage.updateItems(matching: query(account: "b")) { var i = $0; i.data = Data("v2".utf8); return i }
        // Someone with write access and no key: deletes c, puts b's older row back, and copies in
        // a row sealed under this key that the store never committed (from another copy of it).
        var tampered = storage.tables.rows.filter { $0.seq != old[2].seq }
        let b = try #require(tampered.firstIndex { $0.seq == old[1].seq })
        tampered[b] = old[1]
        tampered.append((seq: 99, row: try storage.codec.encode(password("z"), version: 1, seq: format >= 3 ? 99 : nil)))
        let (committed, _) = try storage.authenticatedState(store: "memory")
        let comparison = try RowSetComparison(
            committed: committed, present: tampered.map { (seq: $0.seq, element: $0.row.element) }, storage.codec.keys.mac)
        #expect(!comparison.isIntact)
        var kinds: [String] = []
        for finding in comparison.findings {
            switch finding {
            case .missing: kinds.append("missing")
            case .older(_, _, let seq): kinds.append("older@\(seq ?? -1)")
            case .replaced: kinds.append("replaced")
            case .unknown(_, let seq): kinds.append("unknown@\(seq ?? -1)")
            case .unlisted: kinds.append("unlisted")
            }
        }
        #expect(kinds.sorted() == ["missing", "older@\(old[1].seq)", "unknown@99"])
        #expect(comparison.rowCountDifference == 0)
    }

    @Test("a state row altered or missing does not authenticate; nothing is written past it", arguments: formats)
    func stateRow(format: Int) throws {
        let (storage, _) = try store(format)
        try storage.addItem(password("a"))
        var state = try #require(storage.tables.state)
        state.count += 1
        storage.tables.state = state
        #expect(throws: SecItemError.self) { try storage.authenticatedState(store: "memory") }
        #expect(throws: SecItemError.self) { try storage.addItem(password("b")) }
        storage.tables.state = nil
        #expect(throws: SecItemError.self) { try storage.addItem(password("b")) }
        #expect(storage.tables.rows.count == 1)
    }

    @Test("the header round-trips through the store; a rekey's header drops the old key source's rows", arguments: formats)
    func header(format: Int) throws {
        let (storage, kek) = try store(format)
        var header = try storage.readHeader(source: "memory")
        #expect(header.format == Int64(format))
        #expect(try header.unwrap(kek: kek)?.equals(storage.codec.keys.dataKey) == true)
        storage.tables.meta["scrypt_salt"] = .bytes([1, 2, 3])
        storage.tables.meta["kek_tpm_blob"] = .bytes([4])
        header.epoch += 1
        try storage.withWriteTransaction { () throws(SecItemError) in try storage.writeHeader(header) }
        #expect(storage.tables.meta["scrypt_salt"] == nil)
        #expect(storage.tables.meta["kek_tpm_blob"] == nil)
        #expect(try storage.readHeader(source: "memory").epoch == header.epoch)
        storage.tables.meta["magic"] = .text("something else")
        #expect(throws: SecItemError.self) { try storage.readHeader(source: "memory") }
    }

    @Test("rotation seals every row again under a new key, in its place, and the old key opens none", arguments: formats)
    func rotation(format: Int) throws {
        let (storage, _) = try store(format)
        for account in ["a", "b", "c"] { try storage.addItem(password(account, data: "data-\(account)")) }
        let oldCodec = storage.codec
        let newCodec = RowCodec(keys: try ItemKeys.generate(format: format))
        let seqs = storage.tables.rows.map(\.seq)
        try storage.withWriteTransaction { () throws(SecItemError) in
            let rows = try storage.matches(query(), limit: nil, forWrite: true)
            let version = storage.writeVersion
            var fresh = try storage.reencrypt(rows, under: newCodec, version: version, moving: false)
            fresh.generation = version - 1
            storage.use(newCodec)
            storage.commitment = fresh
        }
        #expect(storage.tables.rows.map(\.seq) == seqs)
        #expect(try accounts(storage) == ["a", "b", "c"])
        for entry in storage.tables.rows {
            let row = StoredRow(entry.row, seq: entry.seq, bindsPosition: format >= 3)
            if case .item = try oldCodec.decode(row, maxVersion: .max) { Issue.record("the old key opened row \(entry.seq)") }
        }
        let (committed, _) = try storage.authenticatedState(store: "memory")
        let comparison = try RowSetComparison(
            committed: committed, present: storage.tables.rows.map { (seq: $0.seq, element: $0.row.element) }, newCodec.keys.mac)
        #expect(comparison.isIntact)
    }

    @Test("a failure half-way through a rotation leaves every row as it was", arguments: formats)
    func failedRotation(format: Int) throws {
        let (storage, _) = try store(format)
        for account in ["a", "b", "c", "d"] { try storage.addItem(password(account)) }
        let before = storage.tables.rows.map(\.row.sealed)
        let newCodec = RowCodec(keys: try ItemKeys.generate(format: format))
        #expect(throws: SecItemError.self) {
            try storage.withWriteTransaction { () throws(SecItemError) in
                let rows = try storage.matches(query(), limit: nil, forWrite: true)
                _ = try storage.reencrypt(rows, under: newCodec, version: storage.writeVersion, moving: false) {
                    (index: Int) throws(SecItemError) in
                    if index == 2 { throw SecItemError(errSecIO, "injected") }
                }
            }
        }
        #expect(storage.tables.rows.map(\.row.sealed) == before)
        #expect(try accounts(storage) == ["a", "b", "c", "d"])
    }
}
