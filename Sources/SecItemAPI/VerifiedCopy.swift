package import SecItemSecurity
package import SecItemModel
import Foundation

/// Copy → verify → roll back, once for every caller: `KeychainTransfer.copy`
/// (`secitem import` and `migrate`, SecItemTools) and `Keychain`'s migrations
/// (`migrateItems`, `migrate(from:)`, `migrateLegacyFile`, SecItemKeychain) add
/// their items through ``copy(_:into:resume:progress:naming:)``.
package enum VerifiedCopy {
    /// Whether two items are the same item with the same contents (dates to the millisecond).
    package static func same(_ a: StoredItem, _ b: StoredItem) -> Bool {
        guard a.itemClass == b.itemClass, a.id == b.id, (a.data ?? Data()) == (b.data ?? Data()),
            Set(a.attributes.keys) == Set(b.attributes.keys)
        else { return false }
        for (key, value) in a.attributes {
            switch (value, b.attributes[key]) {
            case (.date(let x), .date(let y)?):
                if abs(x.timeIntervalSince(y)) > 0.001 { return false }
            case (let x, let y?):
                if x != y && x.canonicalBytes(kind: Schema.kind(of: key)) != y.canonicalBytes(kind: Schema.kind(of: key)) {
                    return false
                }
            default:
                return false
            }
        }
        return true
    }

    /// Adds `items` to `target` as they are, then reads each back and compares.
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
    ///   - naming: How the messages name the item at a position of `items`
    ///     ("item 3" by default; a migration names its key).
    /// - Returns: The number of items added (fewer than `items.count` only with `resume`).
    @discardableResult
    package static func copy(
        _ items: [StoredItem], into target: any SecItemBackend, resume: Bool = false, progress: (Int) -> Void = { _ in },
        naming: (Int) -> String = { "item \($0 + 1)" }
    ) throws(SecItemError) -> Int {
        for item in items { try ItemLimits.check(item) }
        let groups = Set(items.map(\.accessGroup))
        var taken = 0
        var ours = 0
        var pending: [StoredItem] = []
        var positions: [Int] = []  // of the pending items in `items`
        for (position, item) in items.enumerated() {
            var attributes: [String: AttributeValue] = [:]
            for key in item.itemClass.primaryKeyAttributes {
                if let value = item.attributes[key] { attributes[key] = value }
            }
            attributes[SecConstant.kSecAttrAccessGroup] = nil
            attributes[SecConstant.kSecAttrSynchronizable] = nil
            let query = ItemQuery(
                itemClass: item.itemClass, attributes: attributes, accessGroups: [item.accessGroup], synchronizable: .any)
            let existing = try target.fetch(matching: query, limit: nil)
            if let holder = existing.first(where: { $0.primaryKey == item.primaryKey }) {
                taken += 1
                if same(holder, item) { ours += 1 }
            } else {
                pending.append(item)
                positions.append(position)
            }
        }
        if taken > 0 && !(resume && taken == ours) {
            var message = "\(taken) of \(items.count) items already exist in the \(target.kind) keychain; nothing was copied"
            if ours == items.count {
                // Every item is already there, unchanged: the archive or store was copied before.
                message = "all \(items.count) items are already in the \(target.kind) keychain with the same contents "
                    + "(copied before); nothing was copied and nothing needs to be"
            } else if ours > 0 {
                message += ". \(ours) of them are these very items (same identity and contents): the trace of an interrupted run; "
                    + (ours == taken ? "run again with --resume to add the other \(items.count - taken)" : "remove the others first")
            }
            throw SecItemError(errSecDuplicateItem, message)
        }
        let skipped = items.count - pending.count
        if let batch = target as? any SecItemBatchAdding {
            try batch.addAll(pending) { progress(skipped + $0) }
        } else {
            try target.addAllOneByOne(pending) { progress(skipped + $0) }
        }
        for (index, item) in pending.enumerated() {
            let back = try? target.fetch(
                matching: ItemQuery(
                    itemClass: item.itemClass, persistentReferenceID: item.id, accessGroups: groups, synchronizable: .any),
                limit: 1)
            guard let copy = back?.first, same(copy, item) else {
                let undone = target.removeAgain(pending)
                throw SecItemError(
                    errSecIO,
                    "\(naming(positions[index])) did not read back identically from the \(target.kind) keychain "
                        + "(after \(pending.count) of \(items.count) items were copied; \(undone) removed again)")
            }
        }
        return pending.count
    }
}
