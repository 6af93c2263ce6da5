import Foundation
import SecItemCore

/// The sealed contents of a row: every attribute and the data, in a small
/// deterministic binary encoding (format v1, `docs/file-format.md`).
enum ItemCodec {
    static let version: UInt8 = 1

    /// Encodes attributes (sorted by key) and data.
    static func encode(_ item: StoredItem) -> [UInt8] {
        var out: [UInt8] = [version]
        appendU32(&out, UInt32(item.attributes.count))
        for key in item.attributes.keys.sorted() {
            let keyBytes = Array(key.utf8)
            appendU32(&out, UInt32(keyBytes.count))
            out += keyBytes
            switch item.attributes[key]! {
            case .string(let s):
                out.append(0x73)  // s
                let b = Array(s.utf8)
                appendU32(&out, UInt32(b.count))
                out += b
            case .data(let d):
                out.append(0x62)  // b
                appendU32(&out, UInt32(d.count))
                out += d
            case .number(let n):
                out.append(0x6E)  // n
                appendU32(&out, 8)
                appendU64(&out, UInt64(bitPattern: n))
            case .date(let d):
                out.append(0x64)  // d
                appendU32(&out, 8)
                appendU64(&out, d.timeIntervalSinceReferenceDate.bitPattern)
            }
        }
        if let data = item.data {
            out.append(1)
            appendU32(&out, UInt32(data.count))
            out += data
        } else {
            out.append(0)
        }
        return out
    }

    /// Decodes what ``encode(_:)`` wrote, or returns `nil` for malformed bytes.
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> (attributes: [String: AttributeValue], data: Data?)? {
        var reader = Reader(bytes: bytes)
        guard reader.u8() == version, let count = reader.u32() else { return nil }
        var attributes: [String: AttributeValue] = [:]
        attributes.reserveCapacity(Int(min(count, 64)))
        for _ in 0..<count {
            guard let keyLength = reader.u32(), let keyBytes = reader.take(Int(keyLength)),
                let key = String(validating: keyBytes, as: UTF8.self), let tag = reader.u8(), let length = reader.u32(),
                let value = reader.take(Int(length))
            else { return nil }
            switch tag {
            case 0x73:
                guard let s = String(validating: value, as: UTF8.self) else { return nil }
                attributes[key] = .string(s)
            case 0x62:
                attributes[key] = .data(Data(value))
            case 0x6E:
                guard value.count == 8 else { return nil }
                attributes[key] = .number(Int64(bitPattern: u64(value)))
            case 0x64:
                guard value.count == 8 else { return nil }
                attributes[key] = .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: u64(value))))
            default:
                return nil
            }
        }
        guard let hasData = reader.u8() else { return nil }
        var data: Data?
        if hasData == 1 {
            guard let length = reader.u32(), let bytes = reader.take(Int(length)) else { return nil }
            data = Data(bytes)
        } else if hasData != 0 {
            return nil
        }
        guard reader.atEnd else { return nil }
        return (attributes, data)
    }

    static func appendU32(_ out: inout [UInt8], _ v: UInt32) {
        out += [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
    }

    static func appendU64(_ out: inout [UInt8], _ v: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }

    private static func u64(_ b: UnsafeBufferPointer<UInt8>) -> UInt64 {
        b.reduce(0) { $0 << 8 | UInt64($1) }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var offset = 0

        var atEnd: Bool { offset == bytes.count }

        /// A view of the next `n` bytes (no copy: the decoder runs on the buffer it was given).
        mutating func take(_ n: Int) -> UnsafeBufferPointer<UInt8>? {
            guard n >= 0, n <= bytes.count - offset else { return nil }
            defer { offset += n }
            return UnsafeBufferPointer(rebasing: bytes[offset..<offset + n])
        }

        mutating func u8() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func u32() -> UInt32? {
            guard let b = take(4) else { return nil }
            return b.reduce(0) { $0 << 8 | UInt32($1) }
        }
    }
}

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

    /// HMAC(class ‖ 0 ‖ name ‖ 0 ‖ value): domain-separated per class and attribute.
    func mac(_ itemClass: String, _ name: String, _ value: [UInt8]) throws(SecItemError) -> [UInt8] {
        var message = Array("v1\u{0}".utf8)
        message += Array(itemClass.utf8)
        message.append(0)
        message += Array(name.utf8)
        message.append(0)
        message += value
        return try Crypto.hmac(keys.macKey, message)
    }

    func primaryKeyMAC(_ key: PrimaryKey) throws(SecItemError) -> [UInt8] {
        try mac("", "primary-key", Array(key.bytes))
    }

    func attributeMAC(_ itemClass: ItemClass, _ name: String, _ value: AttributeValue) throws(SecItemError) -> [UInt8] {
        try mac(itemClass.rawValue, name, value.canonicalBytes(kind: Schema.kind(of: name)))
    }

    /// Memoised per data key: every lookup and every row check needs it, and an
    /// app has a handful of access groups.
    func accessGroupMAC(_ itemClass: ItemClass, _ group: String) throws(SecItemError) -> [UInt8] {
        let key = itemClass.rawValue + "\u{0}" + group
        if let known = keys.memo[key] { return known }
        let value = try mac(itemClass.rawValue, "agrp", Array(group.utf8))
        if keys.memo.count >= 256 { keys.memo.removeAll() }
        keys.memo[key] = value
        return value
    }

    /// Memoised per data key (two values per class).
    func syncMAC(_ itemClass: ItemClass, _ synchronizable: Bool) throws(SecItemError) -> [UInt8] {
        let key = itemClass.rawValue + (synchronizable ? "\u{1}sync" : "\u{1}nosync")
        if let known = keys.memo[key] { return known }
        let value = try mac(itemClass.rawValue, "sync", [synchronizable ? 1 : 0])
        keys.memo[key] = value
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
        var plain = ItemCodec.encode(item)
        defer { wipe(&plain) }
        let aad = Self.associatedData(uuid: uuid, itemClass: item.itemClass.rawValue, primaryKeyMAC: pk)
        let sealed = try plain.withUnsafeBufferPointer { (p: UnsafeBufferPointer<UInt8>) throws(SecItemError) in
            try Crypto.seal(keys.encKey, p, aad: aad)
        }
        return EncodedRow(
            uuid: uuid, itemClass: item.itemClass.rawValue, primaryKeyMAC: pk, indexMACs: try indexMACs(of: item),
            sealed: sealed)
    }

    /// Opens and checks a row: the box must authenticate against the row's UUID,
    /// class and primary-key HMAC, and every HMAC column must be what the contents give.
    /// - Returns: The item, or the reason the row is damaged.
    func decode(_ row: EncodedRow) throws(SecItemError) -> Result<StoredItem, RowDamage> {
        guard row.uuid.count == 16 else { return .failure(.init("its UUID column is not 16 bytes")) }
        guard let itemClass = ItemClass(rawValue: row.itemClass) else {
            return .failure(.init("its class column is not a known class"))
        }
        let aad = Self.associatedData(uuid: row.uuid, itemClass: row.itemClass, primaryKeyMAC: row.primaryKeyMAC)
        let opened = try Crypto.open(keys.encKey, row.sealed, aad: aad) { p in ItemCodec.decode(p) }
        guard let opened else {
            return .failure(.init("its ciphertext does not authenticate (edited, or moved from another row)"))
        }
        guard let (attributes, data) = opened else {
            return .failure(.init("its contents do not decode"))
        }
        let u = row.uuid
        let id = UUID(uuid: (u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
                             u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]))
        let item = StoredItem(itemClass: itemClass, id: id, attributes: attributes, data: data)
        guard try primaryKeyMAC(item.primaryKey) == row.primaryKeyMAC else {
            return .failure(.init("its primary-key HMAC does not match its contents"))
        }
        let expected = try indexMACs(of: item)
        for (i, column) in IndexedColumns.columns.enumerated() where expected[i] != row.indexMACs[i] {
            return .failure(.init("its \(column) column does not match its contents"))
        }
        return .success(item)
    }
}

/// Why a row cannot be returned.
struct RowDamage: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}
