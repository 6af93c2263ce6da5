public import SecItemCore
import Foundation
import SecItemSQLite

/// Copying items between stores and to and from export files, preserving every
/// attribute, the data and the item's identity (its persistent reference).
///
/// Used by `secitem export`, `import` and `migrate`; see docs/cli.md for the
/// export file format.
public enum KeychainTransfer {
    /// Which items to take.
    public struct Selection: Sendable {
        /// The classes; all four storable classes by default.
        public var classes: [ItemClass] = [.genericPassword, .internetPassword, .certificate, .key]
        /// Attribute values every taken item must have (the core's matcher decides).
        public var attributes: [String: AttributeValue] = [:]
        /// The service (generic passwords) or server (internet passwords) to match.
        public var serviceOrServer: String?
        /// The access groups to look in.
        public var accessGroups: Set<String>
        /// Look in every access group present (an operator tool); ``accessGroups`` is then ignored.
        public var coversEveryAccessGroup = false
        /// Whether items whose accessibility ends in `ThisDeviceOnly` are taken.
        public var includeThisDeviceOnly = false

        public init(accessGroups: Set<String>) {
            self.accessGroups = accessGroups
        }
    }

    /// Whether an item is bound to this device (`kSecAttrAccessible…ThisDeviceOnly`).
    public static func isThisDeviceOnly(_ item: StoredItem) -> Bool {
        guard case .string(let value)? = item.attributes[SecConstant.kSecAttrAccessible] else { return false }
        return value.hasSuffix("u") || value == SecConstant.kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly
    }

    /// The items of `backend` that `selection` takes, oldest first within each class.
    ///
    /// Their data leaves the keychain (an export, a migration), so they pass the
    /// same access check as a read (``AccessGate``), once for all of them: a locked
    /// session refuses `WhenUnlocked` items, and items needing user presence make
    /// `authority` ask the user once.
    ///
    /// Damaged rows are skipped by every search; a class whose only candidates are
    /// damaged fails with `errSecDecode`, unless `skippingDamaged` (the caller has
    /// reported ``damagedRows(in:)`` and chose to go on).
    /// - Parameters:
    ///   - authority: Who is asked; by default nobody can be, so protected
    ///     items make the call fail with `errSecInteractionNotAllowed`.
    ///   - skippingDamaged: Go on past classes whose only candidates are damaged.
    /// - Returns: The items, and how many were left out for being `ThisDeviceOnly`.
    /// - Throws: The access check's status (nothing is returned then), or the backend's.
    public static func items(
        in backend: any SecItemBackend, _ selection: Selection,
        authority: any AccessAuthority = HeadlessAccessAuthority(), skippingDamaged: Bool = false
    ) throws(SecItemError) -> (items: [StoredItem], leftOut: Int) {
        var out: [StoredItem] = []
        var leftOut = 0
        for itemClass in selection.classes {
            var attributes = selection.attributes
            if let name = selection.serviceOrServer {
                switch itemClass {
                case .genericPassword: attributes[SecConstant.kSecAttrService] = .string(name)
                case .internetPassword: attributes[SecConstant.kSecAttrServer] = .string(name)
                default: continue
                }
            }
            let valid = attributes.keys.allSatisfy { itemClass.attributeKeys.contains($0) }
            guard valid else { continue }
            var query = ItemQuery(
                itemClass: itemClass, attributes: attributes, accessGroups: selection.accessGroups, synchronizable: .any)
            query.coversEveryAccessGroup = selection.coversEveryAccessGroup
            let found: [StoredItem]
            do throws(SecItemError) {
                found = try backend.fetch(matching: query, limit: nil)
            } catch SecItemError.decode where skippingDamaged {
                continue
            }
            for item in found {
                if !selection.includeThisDeviceOnly && isThisDeviceOnly(item) {
                    leftOut += 1
                } else {
                    out.append(item)
                }
            }
        }
        out = try AccessGate.release(out, authenticationUI: .allow, prompt: nil, authority: authority)
        return (out, leftOut)
    }

    /// Whether two items are the same item with the same contents (dates to the millisecond).
    public static func same(_ a: StoredItem, _ b: StoredItem) -> Bool {
        VerifiedCopy.same(a, b)
    }

    /// Adds `items` to `target` as they are, then reads each back and compares; on
    /// any failure removes what it added (`VerifiedCopy.copy` in SecItemCore,
    /// the one copy → verify → roll back that `Keychain` migrations use too).
    ///
    /// A backend-level copy (for migrating between stores): no entitlement checks.
    /// A program importing an export file uses ``importItems(_:into:accessGroup:resume:progress:)``.
    ///
    /// Nothing is added when any item's primary key is already taken in `target`
    /// (`errSecDuplicateItem`, naming how many, and how many of those are these very
    /// items — the trace of an interrupted import or migration — which `resume`
    /// skips). The adds are one batch: on a backend that adopts
    /// ``SecItemBatchAdding`` (the file backend) one transaction, all or nothing
    /// even across a crash; elsewhere one by one, undone on failure
    /// (``SecItemBackend/addAllOneByOne(_:progress:)``). If a read-back check fails,
    /// every item added is deleted again and the error says how far it got.
    /// - Parameters:
    ///   - resume: Skip items already in `target` with the same identity and contents.
    ///   - progress: Called with the number of items done.
    /// - Returns: The number of items added (fewer than `items.count` only with `resume`).
    @discardableResult
    public static func copy(
        _ items: [StoredItem], into target: any SecItemBackend, resume: Bool = false, progress: (Int) -> Void = { _ in }
    ) throws(SecItemError) -> Int {
        try VerifiedCopy.copy(items, into: target, resume: resume, progress: progress)
    }

    /// The rows of `backend` that searches cannot see or cannot read: damaged or
    /// tampered rows, and rows deleted, rolled back (replayed) or copied in outside
    /// secitem — one line each, never contents. An export, migration or dump that
    /// trusted the searches alone would lose items, or carry old ones, silently. Only a
    /// store that keeps a row-set commitment can tell (``MaintainableStore``:
    /// the file and PostgreSQL backends); others return none.
    public static func damagedRows(in backend: any SecItemBackend) throws(SecItemError) -> [String] {
        guard let store = backend as? any MaintainableStore else { return [] }
        return try store.verifyStore().problems
    }

    /// Imports exported `items` through `client`, as a program may: each item keeps
    /// its access group only when `client` is entitled to it (an operator client,
    /// such as the `secitem` command's, is entitled to every group), or all go to
    /// `accessGroup` when one is given. Then ``copy(_:into:resume:progress:)``: every item or none.
    ///
    /// Items remapped to another group are new items there: each gets a new
    /// persistent reference (the exported one may still exist in its old group),
    /// so a remapped import cannot be resumed.
    /// - Parameter resume: As for ``copy(_:into:resume:progress:)``; not with `accessGroup`.
    /// - Returns: The items as written, and how many were added (fewer only with `resume`).
    /// - Throws: `errSecMissingEntitlement` naming the first item's group the client
    ///   may not write (or `accessGroup` itself), with nothing written; `errSecParam`
    ///   for `resume` with `accessGroup`; what ``copy(_:into:resume:progress:)`` throws.
    @discardableResult
    public static func importItems(
        _ items: [StoredItem], into client: SecItemClient, accessGroup: String? = nil, resume: Bool = false,
        progress: (Int) -> Void = { _ in }
    ) throws(SecItemError) -> (written: [StoredItem], added: Int) {
        if resume && accessGroup != nil {
            throw SecItemError(
                errSecParam, "an import into another access group makes new items, so it cannot be resumed; nothing was imported")
        }
        let entitled = client.accessGroups
        var out = items
        if let accessGroup {
            guard entitled.permits(accessGroup) else {
                throw SecItemError(
                    errSecMissingEntitlement,
                    "cannot import into access group '\(accessGroup)': this process is entitled only to \(entitled.groups.joined(separator: ", ")); nothing was imported")
            }
            out = items.map { item in
                var attributes = item.attributes
                attributes[SecConstant.kSecAttrAccessGroup] = .string(accessGroup)
                return StoredItem(itemClass: item.itemClass, id: UUID(), attributes: attributes, data: item.data)
            }
        } else if let (index, item) = items.enumerated().first(where: { !entitled.permits($0.element.accessGroup) }) {
            throw SecItemError(
                errSecMissingEntitlement,
                "item \(index + 1) of \(items.count) (\(item.itemClass.rawValue)) is in access group '\(item.accessGroup)', which this process is not entitled to (its groups: \(entitled.groups.joined(separator: ", "))); nothing was imported; import into one of its groups instead")
        }
        let added = try copy(out, into: client.backend, resume: resume, progress: progress)
        return (out, added)
    }

    /// Deletes `items` (by identity) from `source`.
    public static func delete(_ items: [StoredItem], from source: any SecItemBackend) throws(SecItemError) {
        for item in items {
            _ = try source.delete(
                matching: ItemQuery(
                    itemClass: item.itemClass, persistentReferenceID: item.id, accessGroups: [item.accessGroup],
                    synchronizable: .any))
        }
    }
}
