public import Foundation
import SecItemSecurity

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
    public var accessGroup: String { attributes[SecConstant.kSecAttrAccessGroup]?.stringValue ?? "" }

    /// Whether the item is synchronizable (`sync` ≠ 0).
    public var isSynchronizable: Bool { (attributes[SecConstant.kSecAttrSynchronizable]?.numberValue ?? 0) != 0 }

    /// The item's primary key: what must be unique among items (contract §3).
    public var primaryKey: PrimaryKey { PrimaryKey(of: self) }

    /// Whether a key item may leave the keychain as data (`kSecAttrIsExtractable`, absent: yes).
    package var isExtractableKey: Bool { (attributes[SecConstant.kSecAttrIsExtractable]?.numberValue ?? 1) != 0 }

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
        let keyKinds = itemClass.primaryKeyKinds
        self = withUnsafeTemporaryAllocation(of: AttributeValue.self, capacity: keyKinds.count) { values in
            for (i, key) in keyKinds.enumerated() {
                values.initializeElement(at: i, to: attributes[key.name] ?? Schema.defaultValue(for: key.name))
            }
            defer { values.baseAddress!.deinitialize(count: keyKinds.count) }
            return PrimaryKey(bytes: Self.encode(itemClass, UnsafeBufferPointer(values)))
        }
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

    /// ``bytes`` for an item of `itemClass` whose primary-key attributes
    /// (``ItemClass/primaryKeyAttributes``, in that order) have `values`: measured
    /// first, written on the stack, then copied into the one array allocated (3.3–3.6×
    /// faster than appending to a growing array, Benchmarks/SchemaTricks).
    private static func encode(_ itemClass: ItemClass, _ values: UnsafeBufferPointer<AttributeValue>) -> [UInt8] {
        withEncoded(itemClass, values) { [UInt8]($0) }
    }

    /// ``encode(_:_:)``'s bytes, written on the stack and handed to `body` (no array).
    private static func withEncoded<R>(
        _ itemClass: ItemClass, _ values: UnsafeBufferPointer<AttributeValue>, _ body: (UnsafeBufferPointer<UInt8>) -> R
    ) -> R {
        let keyKinds = itemClass.primaryKeyKinds
        precondition(values.count == keyKinds.count)
        // Each attribute: its name (4 bytes: the code, big-endian), a 4-byte length, the value.
        var count = itemClass.rawValue.utf8.count
        for (i, key) in keyKinds.enumerated() {
            count += 4 + 4 + values[i].canonicalByteCount(kind: key.kind)
        }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { buffer in
            var writer = ByteWriter(buffer)
            writer.write(itemClass.rawValue)
            for (i, key) in keyKinds.enumerated() {
                writer.writeBigEndian(key.code.rawValue)
                let length = writer.skip(4)
                values[i].writeCanonicalBytes(kind: key.kind, to: &writer)
                writer.patchBigEndian(UInt32(writer.count - length - 4), at: length)
            }
            precondition(writer.count == count)
            return body(UnsafeBufferPointer(buffer))
        }
    }

    /// Calls `body` with the primary key of an item of `itemClass` whose class
    /// attributes are `attributes`, in each of `groups` and each synchronizable
    /// state of `syncValues`, in that order. `agrp` and `sync` come last in every
    /// class's key.
    /// - Returns: `false`, without calling `body`, when `attributes` lacks one of
    ///   the class's key attributes.
    static func forEachCandidate(
        itemClass: ItemClass, attributes: [String: AttributeValue], groups: some Collection<String>,
        syncValues: [Int64], _ body: (PrimaryKey) -> Void
    ) -> Bool {
        forEachCandidateBytes(itemClass: itemClass, attributes: attributes, groups: groups, syncValues: syncValues) {
            body(PrimaryKey(bytes: [UInt8]($0)))
        }
    }

    /// ``forEachCandidate(itemClass:attributes:groups:syncValues:_:)`` handing `body` each
    /// key's ``bytes`` on the stack, valid during the call only (no array per key).
    static func forEachCandidateBytes(
        itemClass: ItemClass, attributes: [String: AttributeValue], groups: some Collection<String>,
        syncValues: [Int64], _ body: (UnsafeBufferPointer<UInt8>) -> Void
    ) -> Bool {
        let keyKinds = itemClass.classKeyKinds
        let keyCount = keyKinds.count
        // A class without a primary key (kSecClassIdentity has no schema) has no candidates.
        guard itemClass.primaryKeyKinds.count == keyCount + 2, attributes.count >= keyCount else { return false }
        // The key's values, gathered on the stack: the class's own, then agrp and sync.
        return withUnsafeTemporaryAllocation(of: AttributeValue.self, capacity: keyCount + 2) { values in
            // The class's own in one pass over the attributes, by code (no hashing);
            // bit i of `found` says values[i] is initialized.
            var found: UInt64 = 0
            defer {
                for i in 0..<keyCount where found & (1 << i) != 0 { (values.baseAddress! + i).deinitialize(count: 1) }
            }
            for (key, value) in attributes {
                guard let code = Schema.attributeCode(key), let i = keyKinds.firstIndex(where: { $0.code == code }),
                    found & (1 << i) == 0
                else { continue }
                values.initializeElement(at: i, to: value)
                found |= 1 << i
            }
            guard found == (1 << keyCount) - 1 else { return false }
            for group in groups {
                for sync in syncValues {
                    values.initializeElement(at: keyCount, to: .string(group))
                    values.initializeElement(at: keyCount + 1, to: .number(sync))
                    withEncoded(itemClass, UnsafeBufferPointer(values), body)
                    (values.baseAddress! + keyCount).deinitialize(count: 2)
                }
            }
            return true
        }
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
        guard let id = UUID(bytes: bytes[4..<20]) else { return nil }
        return (cls, id)
    }
}
