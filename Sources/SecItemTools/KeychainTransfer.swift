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
        /// Whether items whose accessibility ends in `ThisDeviceOnly` are taken.
        public var includeThisDeviceOnly = false

        public init(accessGroups: Set<String>) {
            self.accessGroups = accessGroups
        }
    }

    /// Whether an item is bound to this device (`kSecAttrAccessible…ThisDeviceOnly`).
    public static func isThisDeviceOnly(_ item: StoredItem) -> Bool {
        guard case .string(let value)? = item.attributes["pdmn"] else { return false }
        return value.hasSuffix("u") || value == "akpu"
    }

    /// The items of `backend` that `selection` takes, oldest first within each class.
    ///
    /// Their data leaves the keychain (an export, a migration), so they pass the
    /// same access check as a read (``AccessGate``), once for all of them: a locked
    /// session refuses `WhenUnlocked` items, and items needing user presence make
    /// `authority` ask the user once.
    /// - Parameter authority: Who is asked; by default nobody can be, so protected
    ///   items make the call fail with `errSecInteractionNotAllowed`.
    /// - Returns: The items, and how many were left out for being `ThisDeviceOnly`.
    /// - Throws: The access check's status (nothing is returned then), or the backend's.
    public static func items(
        in backend: any SecItemBackend, _ selection: Selection,
        authority: any AccessAuthority = HeadlessAccessAuthority()
    ) throws(SecItemError) -> (items: [StoredItem], leftOut: Int) {
        var out: [StoredItem] = []
        var leftOut = 0
        for itemClass in selection.classes {
            var attributes = selection.attributes
            if let name = selection.serviceOrServer {
                switch itemClass {
                case .genericPassword: attributes["svce"] = .string(name)
                case .internetPassword: attributes["srvr"] = .string(name)
                default: continue
                }
            }
            let valid = attributes.keys.allSatisfy { itemClass.attributeKeys.contains($0) }
            guard valid else { continue }
            let query = ItemQuery(
                itemClass: itemClass, attributes: attributes, accessGroups: selection.accessGroups, synchronizable: .any)
            for item in try backend.fetch(matching: query, limit: nil) {
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
    /// (`errSecDuplicateItem`, naming how many). If an add or a check fails part-way,
    /// the items added so far are deleted again and the error says how far it got.
    /// - Parameter progress: Called with the number of items done.
    public static func copy(
        _ items: [StoredItem], into target: any SecItemBackend, progress: (Int) -> Void = { _ in }
    ) throws(SecItemError) {
        let groups = Set(items.map(\.accessGroup))
        var taken = 0
        for item in items {
            var attributes: [String: AttributeValue] = [:]
            for key in item.itemClass.primaryKeyAttributes {
                if let value = item.attributes[key] { attributes[key] = value }
            }
            attributes["agrp"] = nil
            attributes["sync"] = nil
            let query = ItemQuery(
                itemClass: item.itemClass, attributes: attributes, accessGroups: [item.accessGroup], synchronizable: .any)
            let existing = try target.fetch(matching: query, limit: nil)
            if existing.contains(where: { $0.primaryKey == item.primaryKey }) { taken += 1 }
        }
        if taken > 0 {
            throw SecItemError(
                errSecDuplicateItem, "\(taken) of \(items.count) items already exist in the \(target.name) keychain; nothing was copied")
        }
        var added: [StoredItem] = []
        do throws(SecItemError) {
            for (index, item) in items.enumerated() {
                try target.add(item)
                added.append(item)
                let back = try target.fetch(
                    matching: ItemQuery(
                        itemClass: item.itemClass, persistentReferenceID: item.id, accessGroups: groups, synchronizable: .any),
                    limit: 1)
                guard let copy = back.first, same(copy, item) else {
                    throw SecItemError(errSecIO, "item \(index + 1) did not read back identically from the \(target.name) keychain")
                }
                progress(index + 1)
            }
        } catch {
            var undone = 0
            for item in added.reversed() {
                let query = ItemQuery(
                    itemClass: item.itemClass, persistentReferenceID: item.id, accessGroups: groups, synchronizable: .any)
                undone += (try? target.delete(matching: query)) ?? 0
            }
            var failure = error
            failure.detail = "\(error.detail ?? error.message) (after \(added.count) of \(items.count) items were copied; \(undone) removed again)"
            throw failure
        }
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
