import Foundation
import SecItemCore

/// The attributes kept as keyed-HMAC columns for indexed lookup, in column order.
///
/// `agrp` and `sync` hold the item's effective access group and synchronizable
/// state (what ``ItemQuery/matches(_:)`` compares); the others hold the HMAC of
/// the attribute's canonical bytes, or NULL when the item lacks it.
enum IndexedColumns {
    /// Attributes that queries constrain by equality and that get a column.
    static let attributes = ["svce", "acct", "srvr", "labl"]
    /// All HMAC columns: the attributes above, then access group and sync state.
    static let columns = attributes.map { "h_" + $0 } + ["h_agrp", "h_sync"]
}

/// A row as it is written: every column but `rowid`.
struct EncodedRow {
    var uuid: [UInt8]
    var itemClass: String
    var primaryKeyMAC: [UInt8]
    /// One per ``IndexedColumns/columns``.
    var indexMACs: [[UInt8]?]
    var sealed: [UInt8]
}

/// The row-level format: keyed HMACs and the sealed box, under one data key.
struct RowCodec {
    static let formatVersion: UInt8 = 1
    let keys: ItemKeys

    /// Buffers reused by every row this codec reads (under the backend's mutex only).
    let scratch = Scratch()

    final class Scratch {
        var message: [UInt8] = []
        var aad: [UInt8] = []
        /// Plaintext of the row being read; zeroed after every use.
        var plain: [UInt8] = []
        /// The last access-group HMAC asked for (a process reads one group's items).
        var lastGroup: (itemClass: ItemClass, group: String, mac: [UInt8])?
        var syncMACs: [ItemClass: [UInt8]] = [:]
        var noSyncMACs: [ItemClass: [UInt8]] = [:]

        init() {
            message.reserveCapacity(256)
            aad.reserveCapacity(128)
        }

        deinit { wipe(&plain) }
    }

    /// HMAC(class ‖ 0 ‖ name ‖ 0 ‖ value): domain-separated per class and attribute.
    func mac(_ itemClass: String, _ name: String, _ value: [UInt8]) throws(SecItemError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        try out.withUnsafeMutableBufferPointer { (o: inout UnsafeMutableBufferPointer<UInt8>) throws(SecItemError) in
            try mac(itemClass, name, into: o.baseAddress!) { $0.append(contentsOf: value) }
        }
        return out
    }

    /// The same HMAC into the 32 bytes at `out`, the value appended by `value`
    /// to the message buffer (no intermediate arrays).
    @inline(__always)
    func mac(
        _ itemClass: String, _ name: String, into out: UnsafeMutablePointer<UInt8>, _ value: (inout [UInt8]) -> Void
    ) throws(SecItemError) {
        let scratch = self.scratch
        scratch.message.removeAll(keepingCapacity: true)
        scratch.message.append(0x76)  // "v1" 0
        scratch.message.append(0x31)
        scratch.message.append(0)
        scratch.message.append(contentsOf: itemClass.utf8)
        scratch.message.append(0)
        scratch.message.append(contentsOf: name.utf8)
        scratch.message.append(0)
        value(&scratch.message)
        let key = keys.macKey
        try scratch.message.withUnsafeBufferPointer { (m: UnsafeBufferPointer<UInt8>) throws(SecItemError) in
            try Crypto.hmac(key, m, into: out)
        }
    }

    func primaryKeyMAC(_ key: PrimaryKey) throws(SecItemError) -> [UInt8] {
        try mac("", "primary-key", key.bytes)
    }

    func attributeMAC(_ itemClass: ItemClass, _ name: String, _ value: AttributeValue) throws(SecItemError) -> [UInt8] {
        let kind = Schema.kind(of: name)
        var out = [UInt8](repeating: 0, count: 32)
        try out.withUnsafeMutableBufferPointer { (o: inout UnsafeMutableBufferPointer<UInt8>) throws(SecItemError) in
            try mac(itemClass.rawValue, name, into: o.baseAddress!) { value.appendCanonicalBytes(kind: kind, to: &$0) }
        }
        return out
    }

    /// Memoised per data key: every lookup and every row check needs it, and an
    /// app has a handful of access groups.
    func accessGroupMAC(_ itemClass: ItemClass, _ group: String) throws(SecItemError) -> [UInt8] {
        if let last = scratch.lastGroup, last.itemClass == itemClass, last.group == group { return last.mac }
        let key = itemClass.rawValue + "\u{0}" + group
        let value: [UInt8]
        if let known = keys.memo[key] {
            value = known
        } else {
            value = try mac(itemClass.rawValue, "agrp", Array(group.utf8))
            if keys.memo.count >= 256 { keys.memo.removeAll() }
            keys.memo[key] = value
        }
        scratch.lastGroup = (itemClass, group, value)
        return value
    }

    /// Memoised per data key (two values per class).
    func syncMAC(_ itemClass: ItemClass, _ synchronizable: Bool) throws(SecItemError) -> [UInt8] {
        if let known = synchronizable ? scratch.syncMACs[itemClass] : scratch.noSyncMACs[itemClass] { return known }
        let value = try mac(itemClass.rawValue, "sync", [synchronizable ? 1 : 0])
        if synchronizable { scratch.syncMACs[itemClass] = value } else { scratch.noSyncMACs[itemClass] = value }
        return value
    }

    /// The HMAC columns an item's row must hold.
    func indexMACs(of item: StoredItem) throws(SecItemError) -> [[UInt8]?] {
        var out: [[UInt8]?] = []
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

    /// The associated data: format version, UUID, class and primary-key HMAC.
    static func associatedData(uuid: [UInt8], itemClass: String, primaryKeyMAC: [UInt8]) -> [UInt8] {
        var out = Array("secitem-file".utf8)
        out.append(formatVersion)
        out += uuid
        let cls = Array(itemClass.utf8)
        out.append(UInt8(truncatingIfNeeded: cls.count))
        out += cls
        out += primaryKeyMAC
        return out
    }

    func encode(_ item: StoredItem) throws(SecItemError) -> EncodedRow {
        let uuid = withUnsafeBytes(of: item.id.uuid) { Array($0) }
        let pk = try primaryKeyMAC(item.primaryKey)
        var plain = ItemPlaintext.encode(item)
        defer { wipe(&plain) }
        let aad = Self.associatedData(uuid: uuid, itemClass: item.itemClass.rawValue, primaryKeyMAC: pk)
        let sealed = try plain.withUnsafeBufferPointer { (p: UnsafeBufferPointer<UInt8>) throws(SecItemError) in
            try Crypto.seal(keys.encKey, p, aad: aad)
        }
        return EncodedRow(
            uuid: uuid, itemClass: item.itemClass.rawValue, primaryKeyMAC: pk, indexMACs: try indexMACs(of: item),
            sealed: sealed)
    }

    /// What reading a row gives.
    enum Decoded {
        case item(StoredItem)
        /// The row is damaged: why.
        case damaged(String)
    }

    /// Opens and checks the current row of `stmt` (columns in the order of
    /// `SQLiteConnection.selectColumns`), reading the columns in place: the box must
    /// authenticate against the row's UUID, class and primary-key HMAC, and every
    /// HMAC column must be what the contents give.
    /// - Returns: The item, or the reason the row is damaged.
    func decode(_ stmt: Statement) throws(SecItemError) -> Decoded {
        guard let uuid = stmt.blob(1), uuid.count == 16 else { return .damaged("its UUID column is not 16 bytes") }
        guard let classText = stmt.text(2), let itemClass = ItemClass(rawValue: classText) else {
            return .damaged("its class column is not a known class")
        }
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        let pk = stmt.blob(3) ?? empty
        let sealed = stmt.blob(Int32(4 + IndexedColumns.columns.count)) ?? empty
        let scratch = self.scratch
        // The associated data: format version, UUID, class and primary-key HMAC.
        scratch.aad.removeAll(keepingCapacity: true)
        scratch.aad.append(contentsOf: Self.associatedDataPrefix)
        scratch.aad.append(Self.formatVersion)
        scratch.aad.append(contentsOf: uuid)
        scratch.aad.append(UInt8(truncatingIfNeeded: classText.utf8.count))
        scratch.aad.append(contentsOf: classText.utf8)
        scratch.aad.append(contentsOf: pk)
        let key = keys.encKey
        let length = try scratch.aad.withUnsafeBufferPointer { (a: UnsafeBufferPointer<UInt8>) throws(SecItemError) in
            try Crypto.open(key, sealed, aad: a, into: &scratch.plain)
        }
        guard let length else {
            return .damaged("its ciphertext does not authenticate (edited, or moved from another row)")
        }
        let opened = scratch.plain.withUnsafeBufferPointer { p in
            ItemPlaintext.decode(UnsafeBufferPointer(rebasing: p[0..<length]))
        }
        Crypto.cleanse(&scratch.plain, count: length)
        guard let (attributes, data) = opened else { return .damaged("its contents do not decode") }
        let item = StoredItem(
            itemClass: itemClass, id: UUID(uuid: uuid.loadUnaligned(as: uuid_t.self)), attributes: attributes, data: data)
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) {
            (digest: UnsafeMutableBufferPointer<UInt8>) throws(SecItemError) -> Decoded in
            let d = digest.baseAddress!
            let primaryKey = item.primaryKey.bytes
            try mac("", "primary-key", into: d) { $0.append(contentsOf: primaryKey) }
            guard Self.same(d, pk) else { return .damaged("its primary-key HMAC does not match its contents") }
            for (i, name) in IndexedColumns.attributes.enumerated() {
                let column = stmt.blob(Int32(4 + i))
                if let value = attributes[name] {
                    let kind = Schema.kind(of: name)
                    try mac(itemClass.rawValue, name, into: d) { value.appendCanonicalBytes(kind: kind, to: &$0) }
                    if let column, Self.same(d, column) { continue }
                } else if column == nil {
                    continue
                }
                return .damaged("its \(IndexedColumns.columns[i]) column does not match its contents")
            }
            let n = IndexedColumns.attributes.count
            guard Self.same(try accessGroupMAC(itemClass, item.accessGroup), stmt.blob(Int32(4 + n))) else {
                return .damaged("its \(IndexedColumns.columns[n]) column does not match its contents")
            }
            guard Self.same(try syncMAC(itemClass, item.isSynchronizable), stmt.blob(Int32(5 + n))) else {
                return .damaged("its \(IndexedColumns.columns[n + 1]) column does not match its contents")
            }
            return .item(item)
        }
    }

    static let associatedDataPrefix = Array("secitem-file".utf8)

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
