public import Foundation

/// One keychain item as a backend stores it: its class, its identity, every
/// attribute (defaults filled in by the core), and its optional data.
///
/// Backends store and return these whole; they never decide what an attribute
/// means. The core builds them (``SecItemClient``) and derives what backends
/// need from them: the ``primaryKey`` and ``persistentReference``.
public struct StoredItem: Sendable, Hashable {
    /// The item class.
    public var itemClass: ItemClass
    /// The item's identity for its whole life; the last 16 bytes of its persistent ref.
    public var id: UUID
    /// Every stored attribute, keyed by its four-letter name: the caller's, plus
    /// `agrp`, `pdmn`, `sync`, `cdat`, `mdat` and the class's primary-key defaults.
    public var attributes: [String: AttributeValue]
    /// The secret (`kSecValueData`), or `nil` for an item stored without data.
    public var data: Data?

    public init(itemClass: ItemClass, id: UUID, attributes: [String: AttributeValue], data: Data?) {
        self.itemClass = itemClass
        self.id = id
        self.attributes = attributes
        self.data = data
    }

    /// The access group (`agrp`).
    public var accessGroup: String { attributes["agrp"]?.stringValue ?? "" }

    /// Whether the item is synchronizable (`sync` ≠ 0).
    public var isSynchronizable: Bool { (attributes["sync"]?.numberValue ?? 0) != 0 }

    /// The item's primary key: what must be unique among items (contract §3).
    public var primaryKey: PrimaryKey { PrimaryKey(of: self) }

    /// The 20-byte persistent reference: the class name then the UUID bytes.
    public var persistentReference: Data { PersistentReference.encode(itemClass, id) }
}

/// The canonical bytes of an item's primary key.
///
/// Two items collide (errSecDuplicateItem) exactly when their primary keys are
/// equal. ``bytes`` is stable across processes and versions, so a backend may
/// store it or a keyed hash of it under a unique index.
public struct PrimaryKey: Sendable, Hashable {
    /// Class name, then for each primary-key attribute in canonical order its
    /// name, a 4-byte big-endian length and its canonical value bytes.
    public let bytes: Data

    public init(of item: StoredItem) {
        self.init(itemClass: item.itemClass, attributes: item.attributes)
    }

    /// The primary key an item of `itemClass` with these attributes has (absent
    /// primary-key attributes count as their defaults).
    public init(itemClass: ItemClass, attributes: [String: AttributeValue]) {
        var out = Array(itemClass.rawValue.utf8)
        for key in itemClass.primaryKeyAttributes {
            let value = attributes[key] ?? Schema.defaultValue(for: key)
            let valueBytes = value.canonicalBytes(kind: Schema.kind(of: key))
            out += Array(key.utf8)
            let n = UInt32(valueBytes.count)
            out += [UInt8(n >> 24), UInt8((n >> 16) & 0xFF), UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF)]
            out += valueBytes
        }
        bytes = Data(out)
    }
}

/// Encoding and decoding of persistent references (20 bytes: class + UUID).
public enum PersistentReference {
    public static func encode(_ itemClass: ItemClass, _ id: UUID) -> Data {
        var out = Data(itemClass.rawValue.utf8)
        withUnsafeBytes(of: id.uuid) { out.append(contentsOf: $0) }
        return out
    }

    /// Splits a persistent reference, or returns `nil` when it is not one.
    public static func decode(_ data: Data) -> (ItemClass, UUID)? {
        guard data.count == 20 else { return nil }
        let bytes = Array(data)
        guard let name = String(bytes: bytes[0..<4], encoding: .utf8), let cls = ItemClass(rawValue: name) else {
            return nil
        }
        let u = Array(bytes[4..<20])
        let id = UUID(uuid: (u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
                             u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]))
        return (cls, id)
    }
}
