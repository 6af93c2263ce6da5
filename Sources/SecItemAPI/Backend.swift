public import SecItemSecurity
public import SecItemModel
import Foundation

/// A store of keychain items: the small, storage-level contract every backend
/// implements. The SecItem semantics live in the core (``SecItemClient``);
/// a backend stores and finds ``StoredItem`` values and nothing more.
///
/// Rules a conforming type must keep (the conformance kit,
/// `SecItemConformance.ConformanceSuite`, checks every one of them; a backend is
/// done when it passes the whole kit):
///
/// - **No parsing, no statuses of its own invention.** A backend never sees a
///   query dictionary. It throws ``SecItemError`` with `errSecDuplicateItem` for a
///   primary-key collision and with an infrastructure status (`errSecIO`,
///   `errSecNotAvailable`, `errSecAuthFailed`, `errSecInteractionNotAllowed`,
///   `errSecDecode`, …) and a detail for a failure of its own. It returns counts;
///   the core turns zero matches into `errSecItemNotFound`.
/// - **One matcher.** Results are exactly the stored items for which
///   ``ItemQuery/matches(_:)`` is true. A backend may narrow its native search with
///   the query's fields first, but filters with `matches`.
/// - **One primary key.** Uniqueness is ``StoredItem/primaryKey``, nothing else.
/// - **Atomic calls.** A call that throws has changed nothing. ``update(matching:_:)``
///   changes every match or none: if any new primary key collides with another
///   item's, or two updated items would share one, it throws
///   `errSecDuplicateItem` and the store is as before.
/// - **Order.** ``fetch(matching:limit:)`` returns matches oldest first (insertion
///   order where the store keeps one), so `limit: 1` is deterministic.
/// - **One read per call.** ``fetch(matching:limit:)`` fills what the query's
///   ``ItemQuery/projection`` asks: everything, or for a search of data alone
///   (``ItemProjection/dataAndAccess``) at least the data and the item's `pdmn`
///   and `accc`, from which the core's access check decides without reading the
///   item again. Returning more (the whole item) is always correct.
/// - **Threads.** Every method may be called from many threads at once.
/// - **No secrets in errors.** Details name keys, files and causes, never data.
///
/// A backend opens its file or connection in its own (throwing) initializer;
/// the protocol demands none.
public protocol SecItemBackend: Sendable {
    /// What kind of backend this is: the name users choose it by (`SECITEM_BACKEND`,
    /// `secitem --backend`, its provider's ``SecItemBackendProvider/kind``) and the one
    /// diagnostics print ("memory", "file", "secret-service", "postgresql"). A string
    /// literal will do: `var kind: BackendKind { "array" }`.
    var kind: BackendKind { get }

    /// Stores a new item.
    /// - Throws: `errSecDuplicateItem` when an item with the same ``StoredItem/primaryKey`` exists.
    func add(_ item: StoredItem) throws(SecItemError)

    /// Returns up to `limit` items matching `query` (all when `limit` is `nil`), oldest first.
    func fetch(matching query: ItemQuery, limit: Int?) throws(SecItemError) -> [StoredItem]

    /// Replaces every item matching `query` with `transform(item)`, atomically.
    ///
    /// `transform` keeps the item's ``StoredItem/id``; the new item's primary key
    /// may differ from the old one's.
    /// - Returns: The number of items updated (0 when nothing matched).
    /// - Throws: `errSecDuplicateItem`, with nothing changed, on a collision.
    func update(matching query: ItemQuery, _ transform: (StoredItem) -> StoredItem) throws(SecItemError) -> Int

    /// Deletes every item matching `query`.
    /// - Returns: The number of items deleted (0 when nothing matched).
    func delete(matching query: ItemQuery) throws(SecItemError) -> Int
}

extension SecItemBackend {
    /// The backend's ``kind``, as text (it was the requirement before `kind`; both said the same).
    @available(*, deprecated, renamed: "kind")
    public var name: String { kind.rawValue }
}
// MARK: Adding many items at once

extension SecItemBackend {
    /// Adds every item of `items`, or none: the batch primitive `secitem import`
    /// and `migrate` use.
    ///
    /// This default adds the items one by one and, when one fails, deletes the ones
    /// it added (by identity) before rethrowing, so a *failure* leaves the store as
    /// it was. A *crash* part-way leaves the items added so far; a backend that can
    /// do better implements ``SecItemBatchAdding/addAll(_:progress:)`` itself (the file backend runs
    /// the whole batch in one SQLite transaction: all or nothing across a SIGKILL).
    /// - Parameters:
    ///   - items: The items to add, in order.
    ///   - progress: Called with the number of items added so far.
    /// - Throws: The first error; `errSecDuplicateItem` when an item's primary key
    ///   is taken (in the store or earlier in the batch).
    public func addAllOneByOne(_ items: [StoredItem], progress: (Int) -> Void) throws(SecItemError) {
        var added: [StoredItem] = []
        do throws(SecItemError) {
            for item in items {
                try add(item)
                added.append(item)
                progress(added.count)
            }
        } catch {
            removeAgain(added)
            throw error
        }
    }

    /// Deletes `items` by identity, last first, ignoring failures: the roll back
    /// of a batch add (here and in `VerifiedCopy`).
    /// - Returns: How many items were deleted.
    @discardableResult
    package func removeAgain(_ items: [StoredItem]) -> Int {
        var removed = 0
        for item in items.reversed() {
            removed += (try? delete(
                matching: ItemQuery(
                    itemClass: item.itemClass, persistentReferenceID: item.id, accessGroups: [item.accessGroup],
                    synchronizable: .any))) ?? 0
        }
        return removed
    }
}

/// A backend that adds a batch of items atomically — all or none, even when the
/// process dies part-way (for example one database transaction).
///
/// Optional: `VerifiedCopy` (`secitem import` and `migrate`, `Keychain`'s
/// migrations) uses it when the target conforms and falls back to ``SecItemBackend/addAllOneByOne(_:progress:)``,
/// which undoes a failure but not a crash, otherwise.
public protocol SecItemBatchAdding: SecItemBackend {
    /// Adds every item of `items` in one atomic step, or throws having added none.
    /// - Parameters:
    ///   - items: The items to add, in order.
    ///   - progress: Called with the number of items added so far (before the commit).
    func addAll(_ items: [StoredItem], progress: (Int) -> Void) throws(SecItemError)
}
