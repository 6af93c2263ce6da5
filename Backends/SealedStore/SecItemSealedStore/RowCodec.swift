package import Foundation
package import SecItemCore

/// The attributes kept as keyed-HMAC columns for indexed lookup, in column order.
///
/// `agrp` and `sync` hold the item's effective access group and synchronizable
/// state (what ``ItemQuery/matches(_:)`` compares); the others hold the HMAC of
/// the attribute's canonical bytes, or NULL when the item lacks it.
package enum IndexedColumns {
    /// Attributes that queries constrain by equality and that get a column.
    /// (The file format: svce, acct, srvr, labl, in this order; the schema names these columns.)
    package static let attributes = Schema.indexedAttributes
    /// All HMAC columns: the attributes above, then access group and sync state.
    package static let columns = attributes.map(column(for:)) + [accessGroup, synchronizable]
    /// The column of the item's effective access group (`h_agrp`).
    package static let accessGroup = column(for: SecConstant.kSecAttrAccessGroup)
    /// The column of the item's synchronizable state (`h_sync`).
    package static let synchronizable = column(for: SecConstant.kSecAttrSynchronizable)

    /// The HMAC column of attribute `code` (`h_svce`): the file format's column names.
    package static func column(for code: String) -> String { "h_" + code }
}

/// A row as it is written.
package struct EncodedRow {
    /// The columns of a sealed row, in the order every store writes them (the file's
    /// `sealed_items` and PostgreSQL's `items`; a store adds its own `seq`).
    package static let columns = ["uuid", "class", "pk"] + IndexedColumns.columns + ["version", "ct"]

    package var uuid: [UInt8]
    package var itemClass: String
    package var primaryKeyMAC: [UInt8]
    /// One per ``IndexedColumns/columns``.
    package var indexMACs: [[UInt8]?]
    /// The write's generation (format 2).
    package var version: Int64
    package var sealed: [UInt8]

    package var element: RowSetCommitment.Element {
        sealed.withUnsafeBytes { RowSetCommitment.Element(uuid: uuid, version: version, sealed: $0) }
    }
}

/// A stored row's columns, read in place: what ``RowCodec/decode(_:maxVersion:)``
/// reads. The SQLite backend reads them from a statement; another store (issue 17's
/// PostgreSQL) from its own result rows, with the same codec.
package protocol RowColumns {
    var uuid: UnsafeRawBufferPointer? { get }
    var itemClass: String? { get }
    var primaryKeyMAC: UnsafeRawBufferPointer? { get }
    /// The HMAC column `index` of ``IndexedColumns/columns``, `nil` for NULL.
    func indexMAC(_ index: Int) -> UnsafeRawBufferPointer?
    /// The row's version (format 2; 0 in format 1).
    var version: Int64 { get }
    var sealed: UnsafeRawBufferPointer? { get }
    /// The row's position in the store's order (`seq`), bound into the box from
    /// format 3; `nil` for a store whose rows have none (the default).
    var seq: Int64? { get }
}

extension RowColumns {
    package var seq: Int64? { nil }
}

/// The row-level format: keyed HMACs and the sealed box, under one data key.
///
/// Format 2 binds every column into the box's associated data (UUID, class,
/// primary-key HMAC, every HMAC column and the version), so a row whose box
/// opens is trusted whole: reading it is one AES-256-GCM open, no HMAC. Format 1
/// bound only UUID, class and primary-key HMAC, so reading a format-1 row also
/// recomputes and compares every HMAC column; format 1 is only read (a file is
/// upgraded to format 2 on its first write).
///
/// Independent of SQLite: a store gives it ``RowColumns`` and gets items.
package struct RowCodec {
    package let keys: ItemKeys
    package var format: Int { keys.format }

    /// Buffers reused by every row this codec reads (under the backend's mutex only).
    package let scratch = Scratch()

    package final class Scratch {
        var message: [UInt8] = []
        var aad: [UInt8] = []
        /// Plaintext of the row being read; zeroed after every use.
        var plain: [UInt8] = []
        /// The last access-group HMAC asked for (a process reads one group's items).
        var lastGroup: (itemClass: ItemClass, group: String, mac: [UInt8])?
        var syncMACs: [ItemClass: [UInt8]] = [:]
        /// The last sync-state HMAC asked for (a process reads one state's items).
        var lastSync: (itemClass: ItemClass, synchronizable: Bool, mac: [UInt8])?
        var noSyncMACs: [ItemClass: [UInt8]] = [:]
        /// What a data-alone read keeps of the attributes, and the dictionary it last built.
        let kept = ItemPlaintext.KeptAttributes(ItemProjection.accessAttributes)

        /// The associated data of the row being read (not secret: the row's columns),
        /// written in place (``RowCodec/writeAssociatedData(of:uuid:classText:version:)``).
        private(set) var rowAAD = UnsafeMutablePointer<UInt8>.allocate(capacity: 512)
        private var rowAADCapacity = 512
        private(set) var rowAADCount = 0

        init() {
            message.reserveCapacity(256)
            aad.reserveCapacity(400)
        }

        deinit {
            wipe(&plain)
            rowAAD.deallocate()
        }

        var rowAssociatedData: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: rowAAD, count: rowAADCount) }

        func resetRowAAD() { rowAADCount = 0 }

        // The appends below write without checking the capacity: the caller reserved it
        // (``reserveRowAAD(_:)``) for everything it writes.

        @inline(__always)
        func appendRowAADUnchecked(_ byte: UInt8) {
            rowAAD[rowAADCount] = byte
            rowAADCount += 1
        }

        @inline(__always)
        func appendRowAADUnchecked(_ bytes: UnsafeRawBufferPointer) {
            guard let source = bytes.baseAddress, bytes.count > 0 else { return }
            UnsafeMutableRawPointer(rowAAD + rowAADCount).copyMemory(from: source, byteCount: bytes.count)
            rowAADCount += bytes.count
        }

        @inline(__always)
        func appendRowAADUnchecked(bigEndian value: UInt64) {
            UnsafeMutableRawPointer(rowAAD + rowAADCount).storeBytes(of: value.bigEndian, as: UInt64.self)
            rowAADCount += 8
        }

        /// Makes room for `more` bytes after those written.
        func reserveRowAAD(_ more: Int) {
            guard rowAADCount + more > rowAADCapacity else { return }
            let capacity = max(rowAADCapacity * 2, rowAADCount + more)
            let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
            grown.update(from: rowAAD, count: rowAADCount)
            rowAAD.deallocate()
            rowAAD = grown
            rowAADCapacity = capacity
        }
    }

    /// The start of every primary-key HMAC's message (``mac(_:_:into:_:)``'s, for class ""
    /// and name "primary-key"): the key's bytes follow it.
    private let primaryKeyPrefix: [UInt8]

    package init(keys: ItemKeys) {
        self.keys = keys
        primaryKeyPrefix = [0x76, 0x30 + UInt8(truncatingIfNeeded: keys.format), 0, 0] + Array("primary-key".utf8) + [0]
    }

    /// HMAC("v<format>" ‖ 0 ‖ class ‖ 0 ‖ name ‖ 0 ‖ value): domain-separated per
    /// format, class and attribute.
    package func mac(_ itemClass: String, _ name: String, _ value: [UInt8]) throws(SecItemError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        try out.withUnsafeMutableBufferPointer { (o: inout UnsafeMutableBufferPointer<UInt8>) throws(SecItemError) in
            try mac(itemClass, name, into: o.baseAddress!) { $0.append(contentsOf: value) }
        }
        return out
    }

    /// The same HMAC into the 32 bytes at `out`, the value appended by `value`
    /// to the message buffer (no intermediate arrays).
    @inline(__always)
    package func mac(
        _ itemClass: String, _ name: String, into out: UnsafeMutablePointer<UInt8>, _ value: (inout [UInt8]) -> Void
    ) throws(SecItemError) {
        let scratch = self.scratch
        scratch.message.removeAll(keepingCapacity: true)
        scratch.message.append(0x76)  // "v" format 0
        scratch.message.append(0x30 + UInt8(truncatingIfNeeded: format))
        scratch.message.append(0)
        scratch.message.append(contentsOf: itemClass.utf8)
        scratch.message.append(0)
        scratch.message.append(contentsOf: name.utf8)
        scratch.message.append(0)
        value(&scratch.message)
        let context = keys.mac
        try scratch.message.withUnsafeBufferPointer { (m: UnsafeBufferPointer<UInt8>) throws(SecItemError) in
            try context.run(m, into: out)
        }
    }

    package func primaryKeyMAC(_ key: PrimaryKey) throws(SecItemError) -> [UInt8] {
        try mac("", "primary-key", key.bytes)
    }

    /// ``primaryKeyMAC(_:)`` into the 32 bytes at `out`.
    package func primaryKeyMAC(_ key: PrimaryKey, into out: UnsafeMutablePointer<UInt8>) throws(SecItemError) {
        try key.bytes.withUnsafeBufferPointer { (bytes: UnsafeBufferPointer<UInt8>) throws(SecItemError) in
            try primaryKeyMAC(bytes: bytes, into: out)
        }
    }

    /// The HMAC of the primary key whose ``PrimaryKey/bytes`` are `bytes` into the 32
    /// bytes at `out`: the fixed start of the message and the key's bytes go to the HMAC
    /// as they are (no message is assembled).
    package func primaryKeyMAC(bytes: UnsafeBufferPointer<UInt8>, into out: UnsafeMutablePointer<UInt8>) throws(SecItemError) {
        let context = keys.mac
        try primaryKeyPrefix.withUnsafeBufferPointer { (prefix: UnsafeBufferPointer<UInt8>) throws(SecItemError) in
            try context.run(prefix, bytes, into: out)
        }
    }

    package func attributeMAC(_ itemClass: ItemClass, _ name: String, _ value: AttributeValue) throws(SecItemError) -> [UInt8] {
        let kind = Schema.kind(of: name)
        var out = [UInt8](repeating: 0, count: 32)
        try out.withUnsafeMutableBufferPointer { (o: inout UnsafeMutableBufferPointer<UInt8>) throws(SecItemError) in
            try mac(itemClass.rawValue, name, into: o.baseAddress!) { value.appendCanonicalBytes(kind: kind, to: &$0) }
        }
        return out
    }

    /// Memoised per data key: every lookup and every row check needs it, and an
    /// app has a handful of access groups.
    package func accessGroupMAC(_ itemClass: ItemClass, _ group: String) throws(SecItemError) -> [UInt8] {
        if let last = scratch.lastGroup, last.itemClass == itemClass, last.group == group { return last.mac }
        let key = itemClass.rawValue + "\u{0}" + group
        let value: [UInt8]
        if let known = keys.memo[key] {
            value = known
        } else {
            value = try mac(itemClass.rawValue, SecConstant.kSecAttrAccessGroup, Array(group.utf8))
            if keys.memo.count >= 256 { keys.memo.removeAll() }
            keys.memo[key] = value
        }
        scratch.lastGroup = (itemClass, group, value)
        return value
    }

    /// Memoised per data key (two values per class).
    package func syncMAC(_ itemClass: ItemClass, _ synchronizable: Bool) throws(SecItemError) -> [UInt8] {
        if let last = scratch.lastSync, last.itemClass == itemClass, last.synchronizable == synchronizable { return last.mac }
        let value = try syncMACMemoised(itemClass, synchronizable)
        scratch.lastSync = (itemClass, synchronizable, value)
        return value
    }

    private func syncMACMemoised(_ itemClass: ItemClass, _ synchronizable: Bool) throws(SecItemError) -> [UInt8] {
        if let known = synchronizable ? scratch.syncMACs[itemClass] : scratch.noSyncMACs[itemClass] { return known }
        let value = try mac(itemClass.rawValue, SecConstant.kSecAttrSynchronizable, [synchronizable ? 1 : 0])
        if synchronizable { scratch.syncMACs[itemClass] = value } else { scratch.noSyncMACs[itemClass] = value }
        return value
    }

    /// The HMAC columns an item's row must hold.
    package func indexMACs(of item: StoredItem) throws(SecItemError) -> [[UInt8]?] {
        var out: [[UInt8]?] = []
        out.reserveCapacity(IndexedColumns.columns.count)
        for name in IndexedColumns.attributes {
            if let value = item.attributes[name] {
                out.append(try attributeMAC(item.itemClass, name, value))
            } else {
                out.append(nil)
            }
        }
        out.append(try accessGroupMAC(item.itemClass, item.accessGroup))
        out.append(try syncMAC(item.itemClass, item.isSynchronizable))
        return out
    }

    package static let associatedDataPrefix = Array("secitem-file".utf8)

    /// Appends the box's associated data to `out`.
    ///
    /// Format 1: "secitem-file" ‖ 0x01 ‖ uuid ‖ len(class) ‖ class ‖ pk.
    /// Format 2: "secitem-file" ‖ 0x02 ‖ uuid ‖ len(class) ‖ class ‖ pk ‖ for each
    /// HMAC column 0x00 (NULL) or 0x01 ‖ length (1) ‖ its bytes; version (8, big-endian).
    /// Format 3: format 2's with 0x03, then seq (8, big-endian): swapping two rows'
    /// `seq` (which item a one-item search returns) makes both fail to open.
    @inline(__always)
    private func appendAssociatedData<U: Collection<UInt8>, P: Collection<UInt8>, M: Collection<UInt8>>(
        to out: inout [UInt8], uuid: U, itemClass: String, primaryKeyMAC: P, indexMAC: (Int) -> M?, version: Int64,
        seq: Int64?
    ) {
        out.append(contentsOf: Self.associatedDataPrefix)
        out.append(UInt8(truncatingIfNeeded: format))
        out.append(contentsOf: uuid)
        out.append(UInt8(truncatingIfNeeded: itemClass.utf8.count))
        out.append(contentsOf: itemClass.utf8)
        out.append(contentsOf: primaryKeyMAC)
        guard format >= 2 else { return }
        for i in 0..<IndexedColumns.columns.count {
            if let column = indexMAC(i) {
                out.append(1)
                out.append(UInt8(truncatingIfNeeded: column.count))
                out.append(contentsOf: column)
            } else {
                out.append(0)
            }
        }
        for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: UInt64(bitPattern: version) >> UInt64(56 - 8 * i))) }
        guard format >= 3 else { return }
        // A row without a seq cannot be format 3: -1 matches no real row's (they start at 1).
        let position = UInt64(bitPattern: seq ?? -1)
        for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: position >> UInt64(56 - 8 * i))) }
    }

    /// ``appendAssociatedData(to:uuid:itemClass:primaryKeyMAC:indexMAC:version:seq:)`` for a
    /// stored row, written in place into the scratch buffer
    /// (``Scratch/rowAssociatedData``): the same bytes, without growing an array. The
    /// columns are read once, the length is reserved once, then the bytes are copied.
    @inline(__always)
    private func writeAssociatedData<Row: RowColumns>(
        of row: Row, uuid: UnsafeRawBufferPointer, classText: String, version: Int64
    ) {
        let scratch = self.scratch
        let columnCount = IndexedColumns.columns.count
        var text = classText
        text.withUTF8 { utf8 in
            withUnsafeTemporaryAllocation(of: UnsafeRawBufferPointer?.self, capacity: columnCount) { columns in
                let pk = row.primaryKeyMAC
                var length = Self.associatedDataPrefix.count + 1 + uuid.count + 1 + utf8.count + (pk?.count ?? 0)
                if format >= 2 {
                    for i in 0..<columnCount {
                        let column = row.indexMAC(i)
                        columns.initializeElement(at: i, to: column)
                        length += column.map { 2 + $0.count } ?? 1
                    }
                    length += format >= 3 ? 16 : 8
                }
                scratch.resetRowAAD()
                scratch.reserveRowAAD(length)
                Self.associatedDataPrefix.withUnsafeBytes { scratch.appendRowAADUnchecked($0) }
                scratch.appendRowAADUnchecked(UInt8(truncatingIfNeeded: format))
                scratch.appendRowAADUnchecked(uuid)
                scratch.appendRowAADUnchecked(UInt8(truncatingIfNeeded: utf8.count))
                scratch.appendRowAADUnchecked(UnsafeRawBufferPointer(utf8))
                if let pk { scratch.appendRowAADUnchecked(pk) }
                guard format >= 2 else { return }
                for i in 0..<columnCount {
                    if let column = columns[i] {
                        scratch.appendRowAADUnchecked(1)
                        scratch.appendRowAADUnchecked(UInt8(truncatingIfNeeded: column.count))
                        scratch.appendRowAADUnchecked(column)
                    } else {
                        scratch.appendRowAADUnchecked(0)
                    }
                }
                scratch.appendRowAADUnchecked(bigEndian: UInt64(bitPattern: version))
                // A row without a seq cannot be format 3: -1 matches no real row's (they start at 1).
                if format >= 3 { scratch.appendRowAADUnchecked(bigEndian: UInt64(bitPattern: row.seq ?? -1)) }
                columns.baseAddress!.deinitialize(count: columnCount)
            }
        }
    }

    /// Seals an item into a row stamped with `version` (format 2 or 3: format-1
    /// files are upgraded before they are written), at position `seq` (format 3).
    package func encode(_ item: StoredItem, version: Int64, seq: Int64? = nil) throws(SecItemError) -> EncodedRow {
        precondition(format >= 2, "format-1 rows are never written")
        precondition(format < 3 || seq != nil, "a format-3 row is sealed with its seq")
        let uuid = withUnsafeBytes(of: item.id.uuid) { Array($0) }
        let pk = try primaryKeyMAC(item.primaryKey)
        let macs = try indexMACs(of: item)
        var plain = ItemPlaintext.encode(item)
        defer { wipe(&plain) }
        var aad: [UInt8] = []
        aad.reserveCapacity(400)
        appendAssociatedData(
            to: &aad, uuid: uuid, itemClass: item.itemClass.rawValue, primaryKeyMAC: pk, indexMAC: { macs[$0] },
            version: version, seq: seq)
        let context = keys.aead
        let sealed = try plain.withUnsafeBufferPointer { (p: UnsafeBufferPointer<UInt8>) throws(SecItemError) in
            try aad.withUnsafeBufferPointer { (a: UnsafeBufferPointer<UInt8>) throws(SecItemError) in
                try context.seal(p, aad: a)
            }
        }
        return EncodedRow(
            uuid: uuid, itemClass: item.itemClass.rawValue, primaryKeyMAC: pk, indexMACs: macs, version: version,
            sealed: sealed)
    }

    /// What reading a row gives.
    package enum Decoded {
        /// The item, and the row as the row-set commitment counts it.
        case item(StoredItem, version: Int64)
        /// The row is damaged: why.
        case damaged(String)
    }

    /// Format 2: opens one row and returns its data and its attributes the access check
    /// reads (``ItemProjection/accessAttributes``) alone: the others are authenticated
    /// with the box but not built. For a search by an exact primary key returning
    /// `kSecReturnData` alone (``ItemProjection/dataAndAccess``). `nil` when the row is damaged.
    package func decodeData<Row: RowColumns>(_ row: Row, maxVersion: Int64) throws(SecItemError)
        -> (data: Data?, id: UUID, attributes: [String: AttributeValue])?
    {
        guard format >= 2, let uuid = row.uuid, let id = UUID(bytes: uuid), let classText = row.itemClass else { return nil }
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        let version = row.version
        guard version <= maxVersion else { return nil }
        let scratch = self.scratch
        writeAssociatedData(of: row, uuid: uuid, classText: classText, version: version)
        let sealed = row.sealed ?? empty
        guard let length = try keys.aead.open(sealed, aad: scratch.rowAssociatedData, into: &scratch.plain) else { return nil }
        let kept = scratch.kept
        let data = scratch.plain.withUnsafeBufferPointer { p in
            ItemPlaintext.decodeData(UnsafeBufferPointer(rebasing: p[0..<length]), keeping: kept)
        }
        Crypto.cleanse(&scratch.plain, count: length)
        guard let data else { return nil }
        return (data.data, id, data.attributes)
    }

    /// Opens and checks one row, reading its columns in place.
    ///
    /// Format 2: the box must authenticate against every column (one GCM open),
    /// and the version must not exceed `maxVersion` (the committed generation: a
    /// row from the future was copied from elsewhere). Format 1: the box must
    /// authenticate against UUID, class and primary-key HMAC, and every HMAC
    /// column must be what the contents give.
    /// - Returns: The item, or the reason the row is damaged.
    package func decode<Row: RowColumns>(_ row: Row, maxVersion: Int64) throws(SecItemError) -> Decoded {
        guard let uuid = row.uuid, let id = UUID(bytes: uuid) else { return .damaged("its UUID column is not 16 bytes") }
        guard let classText = row.itemClass, let itemClass = ItemClass(rawValue: classText) else {
            return .damaged("its class column is not a known class")
        }
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        let pk = row.primaryKeyMAC ?? empty
        let sealed = row.sealed ?? empty
        let version = format >= 2 ? row.version : 0
        let scratch = self.scratch
        writeAssociatedData(of: row, uuid: uuid, classText: classText, version: version)
        guard let length = try keys.aead.open(sealed, aad: scratch.rowAssociatedData, into: &scratch.plain) else {
            return .damaged("its ciphertext does not authenticate (edited, or moved from another row)")
        }
        let opened = scratch.plain.withUnsafeBufferPointer { p in
            ItemPlaintext.decode(UnsafeBufferPointer(rebasing: p[0..<length]))
        }
        Crypto.cleanse(&scratch.plain, count: length)
        guard let (attributes, data) = opened else { return .damaged("its contents do not decode") }
        let item = StoredItem(
            itemClass: itemClass, id: id, attributes: attributes, data: data)
        if format >= 2 {
            // Every column is authenticated: only the version is compared with the commitment.
            guard version <= maxVersion else {
                return .damaged("its version \(version) is newer than the committed state (\(maxVersion)): copied from another file")
            }
            return .item(item, version: version)
        }
        return try checkFormat1Columns(item, row, pk)
    }

    /// Format 1: every HMAC column must equal what the contents give.
    private func checkFormat1Columns<Row: RowColumns>(_ item: StoredItem, _ row: Row, _ pk: UnsafeRawBufferPointer)
        throws(SecItemError) -> Decoded
    {
        let itemClass = item.itemClass
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) {
            (digest: UnsafeMutableBufferPointer<UInt8>) throws(SecItemError) -> Decoded in
            let d = digest.baseAddress!
            let primaryKey = item.primaryKey.bytes
            try mac("", "primary-key", into: d) { $0.append(contentsOf: primaryKey) }
            guard Self.same(d, pk) else { return .damaged("its primary-key HMAC does not match its contents") }
            for (i, name) in IndexedColumns.attributes.enumerated() {
                let column = row.indexMAC(i)
                if let value = item.attributes[name] {
                    let kind = Schema.kind(of: name)
                    try mac(itemClass.rawValue, name, into: d) { value.appendCanonicalBytes(kind: kind, to: &$0) }
                    if let column, Self.same(d, column) { continue }
                } else if column == nil {
                    continue
                }
                return .damaged("its \(IndexedColumns.columns[i]) column does not match its contents")
            }
            let n = IndexedColumns.attributes.count
            guard Self.same(try accessGroupMAC(itemClass, item.accessGroup), row.indexMAC(n)) else {
                return .damaged("its \(IndexedColumns.columns[n]) column does not match its contents")
            }
            guard Self.same(try syncMAC(itemClass, item.isSynchronizable), row.indexMAC(n + 1)) else {
                return .damaged("its \(IndexedColumns.columns[n + 1]) column does not match its contents")
            }
            return .item(item, version: 0)
        }
    }

    /// Whether the 32-byte HMAC at `mac` equals a column's bytes.
    private static func same(_ mac: UnsafeMutablePointer<UInt8>, _ column: UnsafeRawBufferPointer) -> Bool {
        guard column.count == 32, let base = column.baseAddress else { return false }
        return memcmp(mac, base, 32) == 0
    }

    private static func same(_ mac: [UInt8], _ column: UnsafeRawBufferPointer?) -> Bool {
        guard let column, column.count == mac.count else { return false }
        return mac.withUnsafeBytes { m in memcmp(m.baseAddress!, column.baseAddress!, m.count) == 0 }
    }
}
