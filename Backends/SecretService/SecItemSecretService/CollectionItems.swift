import SecItemCore
import Foundation

/// What the backend knows about a Secret Service item it found.
struct FoundItem {
    /// The item's D-Bus object path.
    var path: String
    /// Its Secret Service attributes, as stored.
    var attributes: [String: String]
    /// Its Secret Service label.
    var label: String
    /// The decoded keychain item (data filled in when secrets were loaded).
    var item: StoredItem
}

/// The keychain items in the session's collection: the four backend operations
/// (find, add, update, delete) on an open session, keeping the SecItem rules on
/// a store without transactions. Runs under the connection's lock.
struct CollectionItems {
    let session: SecretServiceSession
    let namespace: String?
    /// ``SecretServiceBackend/Configuration/foreignItemsWritable``.
    var foreignItemsWritable = false

    // MARK: Finding

    /// Secrets are read along with the attributes (same round trip) when at most
    /// this many items are found; beyond that only the survivors' are read.
    static let prefetchLimit = 16


    /// The items matching `query`, oldest first (creation date, then UUID).
    func find(_ query: ItemQuery, limit: Int?, loadSecrets: Bool) throws(SecItemError) -> [FoundItem] {
        if let limit, limit <= 0 { return [] }
        let seesForeign = query.accessGroups.contains(ForeignItems.accessGroup)
        if loadSecrets, !seesForeign, query.projection == .dataAndAccess, let itemClass = query.itemClass,
            let key = query.exactPrimaryKey, let found = try secretOnly(of: itemClass, holding: key)
        {
            return found
        }
        let search = ItemCodec.searchAttributes(for: query, namespace: namespace)
        var (all, prefetched, _) = try candidates(
            search, allowsInteraction: query.allowsInteraction, prefetchSecrets: loadSecrets)
        if seesForeign {
            all += try foreignCandidates(query)
        }
        var found = all.filter { query.matches($0.item) }
        found.sort(by: Self.older)
        if let limit, found.count > limit { found.removeLast(found.count - limit) }
        if loadSecrets { try fillSecrets(&found, prefetched: prefetched ?? [:]) }
        return found
    }

    /// Our items (this namespace, our schema) having at least `search`, without
    /// secrets; with `prefetchSecrets`, the secrets of up to ``prefetchLimit``
    /// items found, read in the same round trip as their attributes (`nil` when
    /// not read or that read failed: the caller then reads what it needs).
    ///
    /// Round trips: SearchItems (one; the collection's lock state is asked with
    /// it after an empty search, else after it when it is empty), then every
    /// item's properties with the secrets (one).
    private func candidates(
        _ search: [String: String], allowsInteraction: Bool, prefetchSecrets: Bool = false, excluding: String? = nil
    ) throws(SecItemError) -> (items: [FoundItem], secrets: [String: Data]?, sawExcluded: Bool) {
        let first = try session.searchCheckingLock(search)
        var paths = first.paths
        if paths.isEmpty {
            // A locked collection can hide its items: say it is locked rather than "not found".
            guard first.locked else { return ([], nil, false) }
            try unlockOrThrow(allowsInteraction)
            paths = try session.search(search)
        }
        let sawExcluded = excluding.map { paths.contains($0) } ?? false
        if let excluding { paths.removeAll { $0 == excluding } }
        let read = session.read(paths, withSecrets: prefetchSecrets && paths.count <= Self.prefetchLimit)
        var out: [FoundItem] = []
        var unlocked = false
        var secrets = read.secrets
        for (path, result) in zip(paths, read.properties) {
            guard var properties = try result.get() else { continue }  // deleted meanwhile
            if properties.locked {
                guard !unlocked else {
                    throw SecItemError(errSecInteractionNotAllowed, "a Secret Service item stays locked after unlocking")
                }
                try unlockOrThrow(allowsInteraction, paths: [path])
                unlocked = true
                secrets?[path] = nil  // read again once unlocked
                guard let again = try session.properties(path) else { continue }
                properties = again
            }
            guard properties.attributes[ItemCodec.Reserved.namespace] == namespace,
                let item = ItemCodec.item(from: properties.attributes, data: nil)
            else { continue }
            out.append(FoundItem(path: path, attributes: properties.attributes, label: properties.label, item: item))
        }
        return (out, secrets, sawExcluded)
    }

    /// Items other tools stored (``ForeignItems``) that may match `query`, without
    /// secrets: the Secret Service searched by each convention's own attribute names.
    private func foreignCandidates(_ query: ItemQuery) throws(SecItemError) -> [FoundItem] {
        var paths: [String] = []
        var seen = Set<String>()
        for search in ForeignItems.searches(for: query) {
            let result = try session.searchCheckingLock(search)
            if result.paths.isEmpty, result.locked { try unlockOrThrow(query.allowsInteraction) }
            for path in result.locked ? try session.search(search) : result.paths where seen.insert(path).inserted {
                paths.append(path)
            }
        }
        let read = session.read(paths, withSecrets: false)
        var out: [FoundItem] = []
        for (path, result) in zip(paths, read.properties) {
            guard let properties = try result.get() else { continue }  // deleted meanwhile
            if properties.locked { try unlockOrThrow(query.allowsInteraction, paths: [path]) }
            guard
                let item = ForeignItems.item(
                    path: path, label: properties.label, attributes: properties.attributes, created: nil, modified: nil,
                    data: nil)
            else { continue }
            out.append(FoundItem(path: path, attributes: properties.attributes, label: properties.label, item: item))
        }
        return out
    }

    /// A data-only lookup by a whole primary key (``ItemQuery/exactPrimaryKey``),
    /// without the general path's `GetAll`s:
    ///
    /// - where the key's holder was last seen (`SecretServiceSession.holders`): one round
    ///   trip, that item's attributes (one `Get`, far cheaper for gnome-keyring
    ///   than `GetAll`) and its secret, sent at once, used only if the attributes
    ///   still make it this store's holder of the key;
    /// - else a search by the key's hash, which finds exactly this store's holders
    ///   of the key (``ItemCodec/primaryKeyHash(_:namespace:)``), then the one
    ///   holder's attributes (one `Get`) and secret in one round trip, as above:
    ///   the core's access check needs the item's `pdmn` and `accc`.
    ///
    /// `nil` when anything is unusual (no holder in a locked collection, two
    /// holders while an add settles, a locked or vanished item, an empty secret
    /// from the search, which might be an item without data): the general path
    /// answers then.
    private func secretOnly(of itemClass: ItemClass, holding key: PrimaryKey) throws(SecItemError) -> [FoundItem]? {
        let hash = ItemCodec.primaryKeyHash(key, namespace: namespace)
        if let path = session.holders.path(for: hash) {
            if let found = try secret(ofHolder: key, hash: hash, at: path) { return [found] }
            session.holders.remember(hash, at: nil)
        }
        let search = try session.searchCheckingLock(ItemCodec.primaryKeySearch(key, namespace: namespace))
        guard search.paths.count == 1, let path = search.paths.first else {
            return search.paths.isEmpty && !search.locked ? [] : nil
        }
        // The holder's attributes come with its secret (one round trip, as the
        // remembered path): the core's access check needs its pdmn and accc.
        guard let found = try secret(ofHolder: key, hash: hash, at: path) else { return nil }
        session.holders.remember(hash, at: path)
        return [found]
    }

    /// The item at `path` with its secret, read in one round trip, if its
    /// attributes make it this store's holder of `key` (whose hash is `hash`).
    /// - Throws: what reading the attributes threw, but not that the item is gone.
    private func secret(ofHolder key: PrimaryKey, hash: String, at path: String) throws(SecItemError) -> FoundItem? {
        let read = session.read([path], withSecrets: true, attributesOnly: true)
        guard let properties = try read.properties.first?.get(),
            properties.attributes[ItemCodec.Reserved.primaryKey] == hash,
            properties.attributes[ItemCodec.Reserved.namespace] == namespace,
            var item = ItemCodec.item(from: properties.attributes, data: nil), item.primaryKey == key
        else { return nil }
        if ItemCodec.hasData(properties.attributes) {
            guard let data = read.secrets?[path] else {
                if session.sessionLost { throw session.undecodableSecrets(1) }
                return nil  // locked, or gone since
            }
            item.data = data
        }
        return FoundItem(path: path, attributes: properties.attributes, label: "", item: item)
    }

    private func unlockOrThrow(_ allowsInteraction: Bool, paths: [String]? = nil) throws(SecItemError) {
        guard allowsInteraction else {
            throw SecItemError(
                errSecInteractionNotAllowed,
                "the Secret Service collection \(session.collectionPath) is locked and the query does not allow interaction"
            )
        }
        try session.unlock(paths ?? [session.collectionPath])
    }

    private func fillSecrets(_ found: inout [FoundItem], prefetched: [String: Data]) throws(SecItemError) {
        let wanted = found.filter { ItemCodec.hasData($0.attributes) }.map(\.path)
        guard !wanted.isEmpty else { return }
        let missing = wanted.filter { prefetched[$0] == nil }
        let secrets = missing.isEmpty ? prefetched : prefetched.merging(try session.secrets(missing)) { a, _ in a }
        // None came back: the collection is locked (or the session lost). Some came back:
        // the others were deleted since the search (another program, or another thread of
        // this one), and are no longer there to return or delete.
        if wanted.allSatisfy({ secrets[$0] == nil }) {
            if session.sessionLost { throw session.undecodableSecrets(UInt32(wanted.count)) }
            throw SecItemError(errSecInteractionNotAllowed, "the Secret Service did not return an item's secret (locked?)")
        }
        let gone = wanted.filter { secrets[$0] == nil }
        if session.sessionLost, !gone.isEmpty { throw session.undecodableSecrets(UInt32(gone.count)) }
        found.removeAll { ItemCodec.hasData($0.attributes) && secrets[$0.path] == nil }
        for i in found.indices where ItemCodec.hasData(found[i].attributes) {
            if let data = secrets[found[i].path] { found[i].item.data = data }
        }
    }

    /// Our items holding primary key `key`, oldest first.
    private func holders(of key: PrimaryKey) throws(SecItemError) -> [FoundItem] {
        try holders(of: key, besides: "").others
    }

    /// The other holders of `key` than the item just created at `path` (left out
    /// without being read), oldest first, and whether the search found that item.
    private func holders(of key: PrimaryKey, besides path: String) throws(SecItemError)
        -> (others: [FoundItem], foundCreated: Bool)
    {
        let found = try candidates(
            ItemCodec.primaryKeySearch(key, namespace: namespace), allowsInteraction: false, excluding: path)
        return (found.items.filter { $0.item.primaryKey == key }.sorted(by: Self.older), found.sawExcluded)
    }

    static func older(_ a: FoundItem, _ b: FoundItem) -> Bool { older(a.item, b.item) }

    static func older(_ a: StoredItem, _ b: StoredItem) -> Bool {
        let da = creationDate(a)
        let db = creationDate(b)
        if da != db { return da < db }
        return a.id.uuidString < b.id.uuidString
    }

    private static func creationDate(_ item: StoredItem) -> Date {
        if case .date(let d)? = item.attributes[SecConstant.kSecAttrCreationDate] { return d }
        return .distantPast
    }

    // MARK: Add

    /// Adds `item` so that of several processes adding the same primary key at
    /// once exactly one succeeds and exactly one item remains:
    ///
    /// 1. If an item holds the key, fail with errSecDuplicateItem.
    /// 2. Create the item, then look for other holders of the key.
    /// 3. None: success. (Of two racing adders, the one whose look comes second
    ///    sees the other's item, so at most one sees none.)
    /// 4. An older holder (creation date, then UUID): remove ours, errSecDuplicateItem.
    /// 5. Only newer holders: remove ours and start again (the newer ones see ours as
    ///    older and give up, so the next round settles).
    func add(_ item: StoredItem) throws(SecItemError) {
        if item.accessGroup == ForeignItems.accessGroup { try refuseForeignAdd(item) }
        let key = item.primaryKey
        let attributes = ItemCodec.attributes(of: item, namespace: namespace)
        let label = ItemCodec.label(of: item)
        for round in 0..<8 {
            guard try holders(of: key).isEmpty else {
                throw SecItemError(errSecDuplicateItem, "an item with the same primary key exists")
            }
            let path: String
            do throws(SecItemError) {
                path = try session.create(attributes: attributes, label: label, data: item.data)
            } catch where session.sessionLost {
                removeLeftover(of: attributes)
                throw error
            }
            let others: [FoundItem]
            do throws(SecItemError) {
                let after = try holders(of: key, besides: path)
                guard after.foundCreated else {
                    // KeePassXC 2.7.4 answers a CreateItem on a session it no longer knows
                    // with the path of an empty entry (no attributes, no secret) instead
                    // of an error: not what was asked, so the session counts as lost.
                    session.sessionLost = true
                    throw SecItemError(
                        errSecIO, "the Secret Service provider created an item without the attributes sent (lost session?)")
                }
                others = after.others.filter { $0.item.id != item.id }
            } catch {
                _ = try? session.delete(path)
                throw error
            }
            if others.isEmpty {
                if let hash = attributes[ItemCodec.Reserved.primaryKey] { session.holders.remember(hash, at: path) }
                return
            }
            _ = try session.delete(path)
            if others.contains(where: { Self.older($0.item, item) }) {
                throw SecItemError(errSecDuplicateItem, "an item with the same primary key was added concurrently")
            }
            // Back off a little, growing, so racing adders do not meet again.
            usleep(UInt32.random(in: 1_000...5_000) * UInt32(round + 1))
        }
        throw SecItemError(errSecDuplicateItem, "concurrent adds of the same primary key did not settle")
    }

    /// Deletes the item a failed `CreateItem` left behind: KWallet creates the item
    /// before it decrypts the secret, so a create it refuses for the session leaves an
    /// item without a secret (found by its attributes, which name this item's UUID).
    /// Best effort: the search and deletes carry no secret, so they work on the lost session.
    private func removeLeftover(of attributes: [String: String]) {
        guard let paths = try? session.search(attributes) else { return }
        for path in paths { _ = try? session.delete(path) }
    }

    /// An add into the foreign items' group: errSecDuplicateItem when a foreign item
    /// holds the primary key (so add-or-update code updates it in place), else errSecParam.
    private func refuseForeignAdd(_ item: StoredItem) throws(SecItemError) -> Never {
        var keyAttributes: [String: AttributeValue] = [:]
        for key in item.itemClass.classKeyAttributes {
            if let value = item.attributes[key] { keyAttributes[key] = value }
        }
        let query = ItemQuery(
            itemClass: item.itemClass, attributes: keyAttributes, accessGroups: [ForeignItems.accessGroup])
        if try find(query, limit: 1, loadSecrets: false).contains(where: { $0.item.primaryKey == item.primaryKey }) {
            throw SecItemError(errSecDuplicateItem, "an item another tool stored has the same primary key")
        }
        throw SecItemError(
            errSecParam,
            "\(ForeignItems.accessGroup) holds only items other tools stored; SecItem does not create items in their formats")
    }

    // MARK: Update

    /// The found items a write may change. Other tools' items (``ForeignItems``) are
    /// left out unless the request named them (their group, or one by persistent
    /// reference): a class-wide delete never reaches them. Named, they need the
    /// backend's opt-in, else the write is `errSecReadOnly` and nothing changes.
    private func writable(_ found: [FoundItem], _ query: ItemQuery) throws(SecItemError) -> [FoundItem] {
        guard found.contains(where: { $0.item.accessGroup == ForeignItems.accessGroup }) else { return found }
        let named = query.persistentReferenceID != nil || (query.namesAccessGroup && query.accessGroups == [ForeignItems.accessGroup])
        guard named else { return found.filter { $0.item.accessGroup != ForeignItems.accessGroup } }
        guard foreignItemsWritable else {
            throw SecItemError(
                errSecReadOnly,
                "items other tools stored (\(ForeignItems.accessGroup)) are read-only; open the Secret Service backend "
                    + "with foreignItemsWritable (SECITEM_SECRET_SERVICE_FOREIGN_WRITES=1) to change or delete them, "
                    + "or adopt them into a SecItem group (secitem migrate --adopt-foreign)")
        }
        return found
    }

    func update(_ query: ItemQuery, _ transform: (StoredItem) -> StoredItem) throws(SecItemError) -> Int {
        let old = try writable(try find(query, limit: nil, loadSecrets: true), query)
        guard !old.isEmpty else { return 0 }
        let new = old.map { transform($0.item) }
        let oldOwners = Dictionary(old.map { ($0.item.primaryKey, $0.item.id) }, uniquingKeysWith: { a, _ in a })
        try checkUpdateCollisions(new) { (key) throws(SecItemError) -> UUID? in
            if let owner = oldOwners[key] { return owner }
            return try holders(of: key).first?.item.id
        }
        var written: [Int] = []
        for i in old.indices {
            do throws(SecItemError) {
                try write(old[i], to: new[i])
                written.append(i)
            } catch {
                // Put back what was changed, the failing item included; best effort. On
                // a lost session no secret was changed (every secret sent fails), and
                // sending one back would fail too: the attributes and label alone.
                for j in written + [i] {
                    try? restore(old[j], secret: !session.sessionLost)
                }
                throw error
            }
        }
        return new.count
    }

    /// The changed parts of an item (secret, attributes, label), sent at once.
    private func write(_ found: FoundItem, to item: StoredItem) throws(SecItemError) {
        if found.item.accessGroup == ForeignItems.accessGroup {
            // In place: the secret only, never the other tool's attributes or label.
            var unchanged = item.attributes
            unchanged[SecConstant.kSecAttrModificationDate] = found.item.attributes[SecConstant.kSecAttrModificationDate]
            guard unchanged == found.item.attributes else {
                throw SecItemError(
                    errSecParam,
                    "only the secret of an item another tool stored can change (its attributes stay the tool's); "
                        + "adopt it into a SecItem group first (secitem migrate --adopt-foreign)")
            }
            guard item.data != found.item.data else { return }
            try session.write(found.path, secret: .some(item.data ?? Data()), attributes: nil, label: nil)
            return
        }
        let attributes = ItemCodec.attributes(of: item, namespace: namespace)
        let label = ItemCodec.label(of: item)
        let newSecret = item.data != found.item.data
        let newAttributes = attributes != found.attributes
        let newLabel = label != found.label
        guard newSecret || newAttributes || newLabel else { return }
        try session.write(
            found.path, secret: newSecret ? .some(item.data) : .none, attributes: newAttributes ? attributes : nil,
            label: newLabel ? label : nil)
    }

    private func restore(_ found: FoundItem, secret: Bool = true) throws(SecItemError) {
        if found.item.accessGroup == ForeignItems.accessGroup {
            guard secret else { return }
            try session.write(found.path, secret: .some(found.item.data ?? Data()), attributes: nil, label: nil)
            return
        }
        try session.write(
            found.path, secret: secret ? .some(found.item.data) : .none, attributes: found.attributes, label: found.label)
    }

    // MARK: Delete

    func delete(_ query: ItemQuery) throws(SecItemError) -> Int {
        let doomed = try writable(try find(query, limit: nil, loadSecrets: true), query)
        var deleted: [FoundItem] = []
        for found in doomed {
            do throws(SecItemError) {
                if try session.delete(found.path) {
                    deleted.append(found)
                    session.holders.remember(ItemCodec.primaryKeyHash(found.item.primaryKey, namespace: namespace), at: nil)
                }
            } catch {
                // Re-create what was deleted (new object paths, same content); best effort.
                for gone in deleted {
                    _ = try? session.create(attributes: gone.attributes, label: gone.label, data: gone.item.data)
                }
                throw error
            }
        }
        return deleted.count
    }
}
