public import SecItemCore
import Foundation
import Synchronization

/// A process-local store that behaves exactly like the persistent backends: the
/// reference implementation of `SecItemBackend`, and the store for tests.
///
/// Thread-safe: lookups never wait, neither for each other nor for a writer (the
/// store's indexes are kept twice, `LeftRight`: lookups read one copy while a
/// writer changes the other, the items themselves shared); adds, updates and deletes
/// run one at a time, each applied to both copies. Every instance is its own
/// isolated store.
///
/// Fault injection lets an app test its error paths:
///
/// ```swift
/// let store = MemoryBackend()
/// store.injectFault(errSecInteractionNotAllowed)            // the next call fails
/// store.injectFault(errSecIO, on: [.add], persistent: true) // every add fails
/// store.injectFault(errSecIO, on: [.add], after: 2)          // the third add fails
/// ```
public final class MemoryBackend: SecItemBackend {
    /// The backend operations a fault can target.
    public enum Operation: Sendable, Hashable, CaseIterable {
        case add, fetch, update, delete
    }

    private struct Fault {
        var error: SecItemError
        var operations: Set<Operation>
        var persistent: Bool
        /// Matching calls still to let through before the fault fires.
        var skip: Int
    }

    /// A stored item with its insertion sequence number (the order results come in).
    /// One immutable object shared by every index, so an index hit copies a reference,
    /// not the item; an update files a new entry.
    private final class Entry {
        let seq: Int
        let item: StoredItem

        init(seq: Int, item: StoredItem) {
            self.seq = seq
            self.item = item
        }

        /// ``ItemQuery/matchesBeyondPrimaryKey(_:)`` of the item, which it reads in place.
        func matchesBeyondPrimaryKey(_ query: ItemQuery) -> Bool {
            query.matchesBeyondPrimaryKey(item)
        }
    }

    /// One copy of the store. A class, so a lookup reads it in place (a struct read
    /// through a pointer was copied, four retains and releases of the shared index
    /// buffers per lookup), and changed only as ``LeftRight`` allows.
    private final class Storage {
        var items: [UUID: Entry] = [:]
        /// Ids in insertion order; may hold ids of deleted items, skipped and compacted lazily.
        var order: [UUID] = []
        var nextSeq = 0
        /// The same entries as ``items`` by primary key, so a lookup by key is one hash.
        var byPrimaryKey: [PrimaryKey: Entry] = [:]
        /// Items by the value of an attribute queries often constrain (the same
        /// ones the file backend indexes), so such queries need not scan.
        var byAttribute: [AttributeIndexKey: Set<UUID>] = [:]

        static let indexedAttributes = Schema.indexedAttributes

        static func indexKeys(of item: StoredItem) -> [AttributeIndexKey] {
            indexedAttributes.compactMap { key in
                item.attributes[key].map { AttributeIndexKey(key: key, value: $0.canonicalBytes(kind: .blob)) }
            }
        }

        /// The ids that can match `query` by its indexed constraints, when it has any.
        func indexedCandidates(_ query: ItemQuery) -> Set<UUID>? {
            guard !query.caseInsensitive else { return nil }
            var best: Set<UUID>?
            for key in Self.indexedAttributes {
                guard let value = query.attributes[key] else { continue }
                let ids = byAttribute[AttributeIndexKey(key: key, value: value.canonicalBytes(kind: .blob))] ?? []
                if best == nil || ids.count < best!.count { best = ids }
            }
            return best
        }

        func matching(_ query: ItemQuery, limit: Int?) -> [StoredItem] {
            if let id = query.persistentReferenceID {
                guard let entry = items[id], query.matches(entry.item) else { return [] }
                return [entry.item]
            }
            // Indexed: at most one item per candidate key, and usually one key.
            var first: Entry?
            var more: [Entry] = []
            let pinned = query.forEachPrimaryKeyCandidate { key in
                guard let entry = byPrimaryKey[key], entry.matchesBeyondPrimaryKey(query) else { return }
                if first == nil { first = entry } else { more.append(entry) }
            }
            if pinned {
                guard let first else { return [] }
                guard !more.isEmpty else { return [first.item] }
                more.append(first)
                more.sort { $0.seq < $1.seq }
                return more.prefix(limit ?? more.count).map(\.item)
            }
            if let ids = indexedCandidates(query) {
                var found = ids.compactMap { items[$0] }.filter { query.matches($0.item) }
                found.sort { $0.seq < $1.seq }
                return found.prefix(limit ?? found.count).map(\.item)
            }
            var out: [StoredItem] = []
            for id in order {
                if let limit, out.count >= limit { break }
                if let entry = items[id], query.matches(entry.item) { out.append(entry.item) }
            }
            return out
        }

        /// Files `entry` (its seq is ``nextSeq``) under its primary key and ``indexKeys(of:)``
        /// of its item, both computed by the caller.
        func insert(_ entry: Entry, primaryKey: PrimaryKey, indexKeys: [AttributeIndexKey]) {
            let id = entry.item.id
            items[id] = entry
            nextSeq = entry.seq + 1
            order.append(id)
            byPrimaryKey[primaryKey] = entry
            for key in indexKeys { byAttribute[key, default: []].insert(id) }
        }

        /// Replaces the item `new` updates (the same id and seq) by `new` in every
        /// index. The old item's primary key must already be gone from ``byPrimaryKey``:
        /// an update removes every old key first, so that updated items may take each
        /// other's keys.
        func replace(_ new: Change) {
            let id = new.entry.item.id
            for key in new.oldIndexKeys { byAttribute[key]?.remove(id) }
            for key in new.indexKeys { byAttribute[key, default: []].insert(id) }
            guard items[id] != nil else { return }
            items[id] = new.entry
            byPrimaryKey[new.primaryKey] = new.entry
        }

        /// Removes `item`, whose primary key and ``indexKeys(of:)`` the caller computed.
        func remove(_ item: StoredItem, primaryKey: PrimaryKey, indexKeys: [AttributeIndexKey]) {
            byPrimaryKey[primaryKey] = nil
            items[item.id] = nil
            for key in indexKeys {
                byAttribute[key]?.remove(item.id)
                if byAttribute[key]?.isEmpty == true { byAttribute[key] = nil }
            }
            if order.count > 64 && order.count > 2 * items.count {
                order.removeAll { items[$0] == nil }
            }
        }
    }

    /// An item's new entry and its keys, computed once for both copies.
    private struct Change {
        var entry: Entry
        var primaryKey: PrimaryKey
        var indexKeys: [AttributeIndexKey]
        /// Before the change: the item's primary key, ``Storage/indexKeys(of:)``.
        var oldPrimaryKey: PrimaryKey
        var oldIndexKeys: [AttributeIndexKey]
    }

    private let storage = LeftRight { Storage() }
    /// Injected faults, apart from the items so that lookups need not take the
    /// write lock; ``faultCount`` lets a call skip this lock when there are none.
    private let faults = Mutex<[Fault]>([])
    private let faultCount = Atomic<Int>(0)

    private func checkFault(_ operation: Operation) throws(SecItemError) {
        guard faultCount.load(ordering: .acquiring) > 0 else { return }
        try faults.withLock { (faults: inout [Fault]) throws(SecItemError) in
            guard let index = faults.firstIndex(where: { $0.operations.contains(operation) }) else { return }
            if faults[index].skip > 0 {
                faults[index].skip -= 1
                return
            }
            let fault = faults[index]
            if !fault.persistent {
                faults.remove(at: index)
                faultCount.wrappingSubtract(1, ordering: .releasing)
            }
            throw fault.error
        }
    }

    /// `memory`: what users choose it by, and what diagnostics print.
    public var kind: BackendKind { .memory }

    /// Creates an empty store.
    public init() {}

    /// Makes a later call fail with `status`, without touching the store.
    /// - Parameters:
    ///   - status: The status the failing call returns.
    ///   - operations: Which backend operations fail; all by default.
    ///   - after: How many matching calls succeed first (0: the very next one fails), to fail mid-way through a sequence.
    ///   - persistent: `false` (default): only one call fails; `true`: every later one until ``clearFaults()``.
    public func injectFault(
        _ status: OSStatus, on operations: Set<Operation> = Set(Operation.allCases), after: Int = 0,
        persistent: Bool = false
    ) {
        let fault = Fault(
            error: SecItemError(status, "fault injected by MemoryBackend.injectFault"), operations: operations,
            persistent: persistent, skip: max(0, after))
        faults.withLock {
            $0.append(fault)
            faultCount.wrappingAdd(1, ordering: .releasing)
        }
    }

    /// Removes every injected fault.
    public func clearFaults() {
        faults.withLock {
            $0.removeAll()
            faultCount.store(0, ordering: .releasing)
        }
    }

    /// The number of items stored, in every group and class.
    public var count: Int { storage.read { $0.items.count } }

    /// Stores `item`; errSecDuplicateItem when its primary key is taken.
    public func add(_ item: StoredItem) throws(SecItemError) {
        try checkFault(.add)
        // The key and the index keys are computed before the writers' lock, once for
        // both copies.
        let key = item.primaryKey
        let indexKeys = Storage.indexKeys(of: item)
        try storage.write { (s: Storage) throws(SecItemError) in
            guard s.byPrimaryKey[key] == nil else { throw SecItemError(errSecDuplicateItem) }
            let entry = Entry(seq: s.nextSeq, item: item)
            return ((), { $0.insert(entry, primaryKey: key, indexKeys: indexKeys) })
        }
    }

    /// Matches oldest first; by primary key when the query pins it, else by scan.
    /// Lookups run in parallel with each other and with a writer, waiting for neither.
    public func fetch(matching query: ItemQuery, limit: Int?) throws(SecItemError) -> [StoredItem] {
        try checkFault(.fetch)
        return storage.read { s in s.matching(query, limit: limit) }
    }

    /// Replaces every match at once (lookups see all of it or none); nothing changes
    /// on a collision.
    public func update(matching query: ItemQuery, _ transform: (StoredItem) -> StoredItem) throws(SecItemError) -> Int {
        try checkFault(.update)
        return try storage.write { (s: Storage) throws(SecItemError) in
            let old = s.matching(query, limit: nil)
            let new = old.map(transform)
            try checkUpdateCollisions(new) { key in s.byPrimaryKey[key]?.item.id }
            // The transform runs once, the keys are computed once: both copies get the
            // same entries.
            let changes = zip(old, new).map { before, after in
                Change(
                    entry: Entry(seq: s.items[after.id]?.seq ?? s.nextSeq, item: after), primaryKey: after.primaryKey,
                    indexKeys: Storage.indexKeys(of: after), oldPrimaryKey: before.primaryKey,
                    oldIndexKeys: Storage.indexKeys(of: before))
            }
            return (new.count, { s in
                for change in changes { s.byPrimaryKey[change.oldPrimaryKey] = nil }
                for change in changes { s.replace(change) }
            })
        }
    }

    /// Deletes every match at once.
    public func delete(matching query: ItemQuery) throws(SecItemError) -> Int {
        try checkFault(.delete)
        return try storage.write { (s: Storage) throws(SecItemError) in
            let doomed = s.matching(query, limit: nil)
            guard !doomed.isEmpty else { return (0, nil) }
            let keys = doomed.map { ($0, $0.primaryKey, Storage.indexKeys(of: $0)) }
            return (doomed.count, { s in for (item, key, indexKeys) in keys { s.remove(item, primaryKey: key, indexKeys: indexKeys) } })
        }
    }
}

/// An attribute and its canonical value, the key of the memory backend's secondary index.
struct AttributeIndexKey: Hashable {
    var key: String
    var value: [UInt8]
}
