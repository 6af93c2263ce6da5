public import SecItemCore
import Synchronization

/// The smallest store that keeps every rule of `SecItemBackend`: all items in one
/// array, oldest first, behind one lock. A new backend starts from this shape and
/// replaces the array with its file, database or service.
///
/// What each rule costs here:
/// - one matcher: results are `ItemQuery.matches` over the stored items;
/// - one primary key: `StoredItem.primaryKey` decides duplicates;
/// - atomic calls: an update checks every collision (`checkUpdateCollisions`)
///   before it changes anything;
/// - threads: every call holds the lock for its whole read-check-write.
public final class ArrayBackend: SecItemBackend {
    private let items = Mutex<[StoredItem]>([])

    /// An empty store.
    public init() {}

    public var kind: BackendKind { "array" }

    public func add(_ item: StoredItem) throws(SecItemError) {
        try items.withLock { (items: inout [StoredItem]) throws(SecItemError) in
            guard !items.contains(where: { $0.primaryKey == item.primaryKey }) else { throw SecItemError(errSecDuplicateItem) }
            items.append(item)
        }
    }

    public func fetch(matching query: ItemQuery, limit: Int?) throws(SecItemError) -> [StoredItem] {
        let found = items.withLock { $0.filter(query.matches) }
        return Array(found.prefix(limit ?? found.count))
    }

    public func update(matching query: ItemQuery, _ transform: (StoredItem) -> StoredItem) throws(SecItemError) -> Int {
        try items.withLock { (items: inout [StoredItem]) throws(SecItemError) in
            let matched = items.indices.filter { query.matches(items[$0]) }
            let updated = matched.map { transform(items[$0]) }
            try checkUpdateCollisions(updated) { key in items.first { $0.primaryKey == key }?.id }
            for (index, item) in zip(matched, updated) { items[index] = item }
            return matched.count
        }
    }

    public func delete(matching query: ItemQuery) throws(SecItemError) -> Int {
        items.withLock { items in
            let before = items.count
            items.removeAll(where: query.matches)
            return before - items.count
        }
    }
}

/// Makes the store selectable by name: register it once, before the first keychain
/// call, with `SecItemBackendRegistry.register(ArrayBackendProvider())` (module
/// `SecItem`), and `SECITEM_BACKEND=array` or `backend = array` then opens it.
public struct ArrayBackendProvider: SecItemBackendProvider {
    public init() {}

    public var kind: BackendKind { "array" }
    /// Never chosen automatically: it keeps nothing across processes.
    public var automaticRank: Int? { nil }
    public var displayName: String { "the array store" }

    public func open(_ configuration: SecItemConfiguration) throws(SecItemError) -> any SecItemBackend {
        ArrayBackend()
    }

    public func probe(_ configuration: SecItemConfiguration) -> BackendAvailability {
        BackendAvailability(usable: true, summary: "always usable", notes: ["each open is a new, empty store in memory"])
    }
}
