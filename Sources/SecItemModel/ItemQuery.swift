public import Foundation
import SecItemSecurity

/// Which items a query sees by their `kSecAttrSynchronizable` state.
public enum SynchronizableFilter: Sendable, Hashable {
    /// `kSecAttrSynchronizable` absent or false: only non-synchronizable items.
    case no
    /// `kSecAttrSynchronizable` true: only synchronizable items.
    case yes
    /// `kSecAttrSynchronizableAny`: both.
    case any

    /// Whether an item with the given state passes.
    public func admits(_ synchronizable: Bool) -> Bool {
        switch self {
        case .no: return !synchronizable
        case .yes: return synchronizable
        case .any: return true
        }
    }

    /// The stored `sync` values that pass, in ascending order.
    var storedValues: [Int64] {
        switch self {
        case .no: return Self.notSynchronizable
        case .yes: return Self.synchronizable
        case .any: return Self.either
        }
    }

    // Shared, so the hot path builds no array.
    private static let notSynchronizable: [Int64] = [0]
    private static let synchronizable: [Int64] = [1]
    private static let either: [Int64] = [0, 1]
}

/// Which parts of each item ``SecItemBackend/fetch(matching:limit:)`` must fill:
/// a backend may skip reading what the caller will not use.
public enum ItemProjection: Sendable, Hashable {
    /// The whole item: every attribute, the ``StoredItem/id`` and the data.
    case everything
    /// The data and the attributes the core's access check (``AccessGate``)
    /// reads before it releases the data, ``ItemProjection/accessAttributes``
    /// (`pdmn`, `accc`), of every item that holds them: a search returning
    /// `kSecReturnData` alone. The other attributes and the ``StoredItem/id``
    /// may be left out (empty, or a placeholder). The core reads the store once
    /// per call: it never reads an item again for the attributes its check needs,
    /// so a backend that leaves out `pdmn` or `accc` releases protected data
    /// (the conformance kit's "one read per call" cases check both).
    case dataAndAccess

    /// The attributes ``dataAndAccess`` keeps: `kSecAttrAccessible` and
    /// `kSecAttrAccessControl`, the inputs of ``AccessRequirement``, and a key's
    /// `kSecAttrIsExtractable` (a non-extractable key's data is never returned).
    public static let accessAttributes: [String] = [
        SecConstant.kSecAttrAccessible, SecConstant.kSecAttrAccessControl, SecConstant.kSecAttrIsExtractable,
    ]
}

/// A parsed, validated search: what a backend needs to find items, and the one
/// matcher every backend uses (``matches(_:)``).
///
/// A backend may use ``itemClass``, ``persistentReferenceID``, ``accessGroups``,
/// ``synchronizable`` and the equality constraints in ``attributes`` to narrow
/// its native search (indexed columns, Secret Service attributes), but must
/// return only items for which ``matches(_:)`` is true.
public struct ItemQuery: Sendable, Hashable {
    /// The class, or `nil` for a query by persistent reference without `kSecClass`.
    public var itemClass: ItemClass?
    /// The item's UUID, when the query is by persistent reference.
    public var persistentReferenceID: UUID?
    /// Equality constraints on attributes other than `agrp` and `sync`.
    public var attributes: [String: AttributeValue]
    /// The access groups searched: the one given, or every entitled group.
    /// Ignored when ``coversEveryAccessGroup`` is true.
    public var accessGroups: Set<String>
    /// The query covers items of every access group present in the store (an
    /// operator tool's search that names no group). A backend narrowing its native
    /// search by ``accessGroups`` must not do so when this is set; one that
    /// ignores it finds nothing, never too much.
    public var coversEveryAccessGroup = false
    /// The request named its access group (`kSecAttrAccessGroup`), rather than
    /// searching every entitled group. A backend may let writes reach items that only
    /// a request naming their group (or the item, by ``persistentReferenceID``) should
    /// touch: the Secret Service's items of other tools are never reached by a
    /// class-wide delete.
    public var namesAccessGroup = false
    /// Which synchronizable states are visible.
    public var synchronizable: SynchronizableFilter
    /// `kSecMatchCaseInsensitive`: string comparisons ignore case.
    public var caseInsensitive: Bool
    /// `kSecUseAuthenticationUI` = allow: a backend may prompt (to unlock a keyring).
    public var allowsInteraction: Bool
    /// Which parts of the found items the caller reads (a projection, not a
    /// constraint): which items, how many, their order and their `data` are the
    /// same whatever it is. See ``ItemProjection``.
    public var projection: ItemProjection = .everything

    /// Creates a query; the core builds these from dictionaries, tests and backends may build their own.
    public init(
        itemClass: ItemClass?,
        persistentReferenceID: UUID? = nil,
        attributes: [String: AttributeValue] = [:],
        accessGroups: Set<String>,
        synchronizable: SynchronizableFilter = .no,
        caseInsensitive: Bool = false,
        allowsInteraction: Bool = false
    ) {
        self.itemClass = itemClass
        self.persistentReferenceID = persistentReferenceID
        self.attributes = attributes
        self.accessGroups = accessGroups
        self.synchronizable = synchronizable
        self.caseInsensitive = caseInsensitive
        self.allowsInteraction = allowsInteraction
    }

    /// Whether `item` is one this query selects. The only matcher: every backend
    /// filters with it, so every backend answers the same query the same way.
    public func matches(_ item: StoredItem) -> Bool {
        if let itemClass, item.itemClass != itemClass { return false }
        if let persistentReferenceID, item.id != persistentReferenceID { return false }
        guard coversEveryAccessGroup || accessGroups.contains(item.accessGroup) else { return false }
        guard synchronizable.admits(item.isSynchronizable) else { return false }
        for (key, wanted) in attributes {
            guard let stored = item.attributes[key] else { return false }
            if !Self.equal(stored, wanted, kind: Schema.kind(of: key), caseInsensitive: caseInsensitive) {
                return false
            }
        }
        return true
    }

    /// The primary keys a matching item must have, when the query pins every
    /// primary-key attribute of its class by case-sensitive equality: one key per
    /// searched access group and synchronizable state. A backend can then look
    /// items up by key (an index, a hash) instead of scanning; it must still filter
    /// the candidates with ``matches(_:)`` (other attributes may be constrained).
    /// `nil` when the query does not pin the whole key.
    public var primaryKeyCandidates: [PrimaryKey]? {
        var keys: [PrimaryKey] = []
        return forEachPrimaryKeyCandidate { keys.append($0) } ? keys : nil
    }

    /// Calls `body` with each of ``primaryKeyCandidates`` in order, without
    /// building the array (a lookup by one key then allocates nothing for it).
    /// - Returns: `false`, without calling `body`, when the query does not pin the whole key.
    public func forEachPrimaryKeyCandidate(_ body: (PrimaryKey) -> Void) -> Bool {
        guard let itemClass, !caseInsensitive, persistentReferenceID == nil, !coversEveryAccessGroup else { return false }
        let syncValues = synchronizable.storedValues
        if accessGroups.count == 1 {
            return PrimaryKey.forEachCandidate(
                itemClass: itemClass, attributes: attributes, groups: accessGroups, syncValues: syncValues, body)
        }
        return PrimaryKey.forEachCandidate(
            itemClass: itemClass, attributes: attributes, groups: accessGroups.sorted(), syncValues: syncValues, body)
    }

    /// The primary key an item must hold to match, when holding it is also
    /// enough: the query pins the whole key (class, key attributes, one access
    /// group, one synchronizable state, case-sensitively) and constrains nothing
    /// else. A backend can then answer from its primary-key index alone, without
    /// reading the item's other attributes. `nil` otherwise.
    public var exactPrimaryKey: PrimaryKey? {
        guard let itemClass, attributes.count <= itemClass.classKeyKinds.count else { return nil }
        var found: PrimaryKey?
        var count = 0
        guard forEachPrimaryKeyCandidate({ found = $0; count += 1 }), count == 1 else { return nil }
        return found
    }

    /// Calls `body` with ``exactPrimaryKey``'s ``PrimaryKey/bytes``, written on the stack
    /// (valid during the call only). A lookup's hot path: no array is made.
    /// - Returns: `false`, without calling `body`, when there is no exact primary key.
    package func withExactPrimaryKeyBytes(_ body: (UnsafeBufferPointer<UInt8>) -> Void) -> Bool {
        guard let itemClass, attributes.count <= itemClass.classKeyKinds.count, !caseInsensitive,
            persistentReferenceID == nil, !coversEveryAccessGroup, accessGroups.count == 1, synchronizable != .any
        else { return false }
        return PrimaryKey.forEachCandidateBytes(
            itemClass: itemClass, attributes: attributes, groups: accessGroups, syncValues: synchronizable.storedValues, body)
    }

    /// ``matches(_:)`` for an item found under one of ``primaryKeyCandidates``:
    /// class, group, synchronizable state and the key attributes are equal by
    /// construction, so only the query's other attributes are compared.
    public func matchesBeyondPrimaryKey(_ item: StoredItem) -> Bool {
        guard let itemClass, item.itemClass == itemClass else { return false }
        if attributes.count <= itemClass.classKeyKinds.count { return true }
        for (key, wanted) in attributes where !itemClass.classKeyKinds.contains(where: { $0.0 == key }) {
            guard let stored = item.attributes[key] else { return false }
            if !Self.equal(stored, wanted, kind: Schema.kind(of: key), caseInsensitive: caseInsensitive) {
                return false
            }
        }
        return true
    }

    /// Whether two values of an attribute are the same value under SecItem's rules.
    public static func equal(_ a: AttributeValue, _ b: AttributeValue, kind: AttributeKind, caseInsensitive: Bool)
        -> Bool
    {
        if a.isSameValue(as: b, kind: kind) { return true }
        guard caseInsensitive, kind == .blob || kind == .string else { return false }
        guard let sa = a.stringValue, let sb = b.stringValue else { return false }
        return sa.lowercased() == sb.lowercased()
    }
}
