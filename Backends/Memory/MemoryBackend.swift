public import SecItemCore
import Foundation
import Synchronization

/// A process-local store that behaves exactly like the persistent backends: the
/// reference implementation of `SecItemBackend`, and the store for tests.
///
/// Thread-safe: lookups share a readers–writer lock, so threads read in parallel;
/// an add, update or delete has the store to itself. Every instance is its own
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

    private struct Storage {
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

        mutating func insert(_ item: StoredItem) {
            insert(item, primaryKey: item.primaryKey, indexKeys: Self.indexKeys(of: item))
        }

        /// ``insert(_:)`` with the item's primary key and ``indexKeys(of:)`` computed by the caller.
        mutating func insert(_ item: StoredItem, primaryKey: PrimaryKey, indexKeys: [AttributeIndexKey]) {
            let entry = Entry(seq: nextSeq, item: item)
            items[item.id] = entry
            nextSeq += 1
            order.append(item.id)
            byPrimaryKey[primaryKey] = entry
            for key in indexKeys { byAttribute[key, default: []].insert(item.id) }
        }

        /// Replaces `old` by `new` (the same id) in every index. `old`'s primary key
        /// must already be gone from ``byPrimaryKey``: an update removes every old key
        /// first, so that updated items may take each other's keys.
        mutating func replace(_ old: StoredItem, with new: StoredItem) {
            for key in Self.indexKeys(of: old) { byAttribute[key]?.remove(old.id) }
            for key in Self.indexKeys(of: new) { byAttribute[key, default: []].insert(new.id) }
            guard let seq = items[new.id]?.seq else { return }
            let entry = Entry(seq: seq, item: new)
            items[new.id] = entry
            byPrimaryKey[new.primaryKey] = entry
        }

        mutating func remove(_ item: StoredItem) {
            byPrimaryKey[item.primaryKey] = nil
            items[item.id] = nil
            for key in Self.indexKeys(of: item) {
                byAttribute[key]?.remove(item.id)
                if byAttribute[key]?.isEmpty == true { byAttribute[key] = nil }
            }
            if order.count > 64 && order.count > 2 * items.count {
                order.removeAll { items[$0] == nil }
            }
        }
    }

    private let storage = ReadWriteLock(Storage())
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
    public var count: Int { storage.read { $0.pointee.items.count } }

    /// Stores `item`; errSecDuplicateItem when its primary key is taken.
    public func add(_ item: StoredItem) throws(SecItemError) {
        try checkFault(.add)
        // The key and the index keys are computed before the lock: readers wait only
        // for the hashing.
        let key = item.primaryKey
        let indexKeys = Storage.indexKeys(of: item)
        try storage.write { (s: inout Storage) throws(SecItemError) in
            guard s.byPrimaryKey[key] == nil else { throw SecItemError(errSecDuplicateItem) }
            s.insert(item, primaryKey: key, indexKeys: indexKeys)
        }
    }

    /// Matches oldest first; by primary key when the query pins it, else by scan.
    /// Lookups run in parallel with each other (a shared lock).
    public func fetch(matching query: ItemQuery, limit: Int?) throws(SecItemError) -> [StoredItem] {
        try checkFault(.fetch)
        return storage.read { s in s.pointee.matching(query, limit: limit) }
    }

    /// Replaces every match under one lock; nothing changes on a collision.
    public func update(matching query: ItemQuery, _ transform: (StoredItem) -> StoredItem) throws(SecItemError) -> Int {
        try checkFault(.update)
        return try storage.write { (s: inout Storage) throws(SecItemError) in
            let old = s.matching(query, limit: nil)
            let new = old.map(transform)
            try checkUpdateCollisions(new) { key in s.byPrimaryKey[key]?.item.id }
            for item in old { s.byPrimaryKey[item.primaryKey] = nil }
            for (before, after) in zip(old, new) { s.replace(before, with: after) }
            return new.count
        }
    }

    /// Deletes every match.
    public func delete(matching query: ItemQuery) throws(SecItemError) -> Int {
        try checkFault(.delete)
        return try storage.write { (s: inout Storage) throws(SecItemError) in
            let doomed = s.matching(query, limit: nil)
            guard !doomed.isEmpty else { return 0 }
            for item in doomed { s.remove(item) }
            return doomed.count
        }
    }
}

/// An attribute and its canonical value, the key of the memory backend's secondary index.
struct AttributeIndexKey: Hashable {
    var key: String
    var value: [UInt8]
}
