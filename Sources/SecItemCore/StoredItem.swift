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

    /// Creates an item; the core fills in the defaults before a backend sees it.
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
    public let bytes: [UInt8]

    /// The primary key of `item`.
    public init(of item: StoredItem) {
        self.init(itemClass: item.itemClass, attributes: item.attributes)
    }

    /// The primary key an item of `itemClass` with these attributes has (absent
    /// primary-key attributes count as their defaults).
    public init(itemClass: ItemClass, attributes: [String: AttributeValue]) {
        var out: [UInt8] = []
        out.reserveCapacity(96)
        out.append(contentsOf: itemClass.rawValue.utf8)
        for (key, kind) in itemClass.primaryKeyKinds {
            Self.append(key, attributes[key] ?? Schema.defaultValue(for: key), kind, to: &out)
        }
        bytes = out
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Byte equality.
    public static func == (lhs: PrimaryKey, rhs: PrimaryKey) -> Bool {
        guard lhs.bytes.count == rhs.bytes.count else { return false }
        return lhs.bytes.withUnsafeBytes { l in
            rhs.bytes.withUnsafeBytes { r in l.count == 0 || memcmp(l.baseAddress!, r.baseAddress!, l.count) == 0 }
        }
    }

    /// Hashes the bytes in one call.
    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    static func append(_ key: String, _ value: AttributeValue, _ kind: AttributeKind, to out: inout [UInt8]) {
        out.append(contentsOf: key.utf8)
        let lengthAt = out.count
        out.append(0)
        out.append(0)
        out.append(0)
        out.append(0)
        value.appendCanonicalBytes(kind: kind, to: &out)
        let n = UInt32(out.count - lengthAt - 4)
        out[lengthAt] = UInt8(n >> 24)
        out[lengthAt + 1] = UInt8((n >> 16) & 0xFF)
        out[lengthAt + 2] = UInt8((n >> 8) & 0xFF)
        out[lengthAt + 3] = UInt8(n & 0xFF)
    }

    /// The primary keys of items of `itemClass` whose class attributes are
    /// `attributes` (which must hold every one of them), in each of `groups` and
    /// each synchronizable state of `syncValues`. `agrp` and `sync` come last in
    /// every class's key, so the shared prefix is built once.
    /// `nil` when `attributes` lacks one of the class's key attributes.
    static func candidates(
        itemClass: ItemClass, attributes: [String: AttributeValue], groups: some Collection<String>,
        syncValues: [Int64]
    ) -> [PrimaryKey]? {
        var prefix: [UInt8] = []
        prefix.reserveCapacity(96)
        prefix.append(contentsOf: itemClass.rawValue.utf8)
        for (key, kind) in itemClass.classKeyKinds {
            guard let value = attributes[key] else { return nil }
            append(key, value, kind, to: &prefix)
        }
        let prefixCount = prefix.count
        var keys: [PrimaryKey] = []
        keys.reserveCapacity(groups.count * syncValues.count)
        for group in groups {
            for sync in syncValues {
                prefix.removeSubrange(prefixCount...)
                append("agrp", .string(group), .string, to: &prefix)
                append("sync", .number(sync), .number, to: &prefix)
                keys.append(PrimaryKey(bytes: prefix))
            }
        }
        return keys
    }
}

/// Encoding and decoding of persistent references (20 bytes: class + UUID).
public enum PersistentReference {
    /// The 20-byte reference of the item of `itemClass` with identity `id`.
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
