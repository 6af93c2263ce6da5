public import SecItemSecurity
public import SecItemModel
import Foundation

/// The SecItem semantics over one backend: parsing, defaults, the four calls and
/// result shaping, in one place.
///
/// The global `SecItemAdd`/`SecItemCopyMatching`/`SecItemUpdate`/`SecItemDelete`
/// functions call the current client (`SecItemClient.current`); code that wants
/// an explicit store holds a client:
///
/// ```swift
/// let client = SecItemClient(backend: MemoryBackend(), accessGroups: AccessGroups(["app"]))
/// let status = client.add([kSecClass as String: kSecClassGenericPassword,
///                          kSecAttrService as String: "api", kSecValueData as String: token], nil)
/// ```
///
/// Each call comes in two forms: the Apple-style one returning `OSStatus`, and a
/// throwing one (`addItem`, `copyMatchingItems`, `updateItems`, `deleteItems`) whose
/// ``SecItemError`` says what was wrong.
public struct SecItemClient: Sendable {
    /// The store this client uses.
    public let backend: any SecItemBackend
    /// The access groups this client is entitled to.
    public let accessGroups: AccessGroups
    /// Who is asked before protected data is released: the session's lock state
    /// and the user's presence (see ``AccessGate``).
    public let accessAuthority: any AccessAuthority

    /// Creates a client over `backend` whose authority is ``HeadlessAccessAuthority``
    /// (never locked, nobody to ask for presence).
    /// - Parameters:
    ///   - backend: The store.
    ///   - accessGroups: The entitled groups; by default the process configuration's
    ///     (``SecItemConfiguration/process``: code, `SECITEM_ACCESS_GROUPS`, the config
    ///     file, else the single group of the application identifier).
    public init(backend: any SecItemBackend, accessGroups: AccessGroups = SecItemConfiguration.process.accessGroups) {
        self.init(backend: backend, accessGroups: accessGroups, accessAuthority: HeadlessAccessAuthority())
    }

    /// Creates a client over `backend` with an authority for protected items.
    /// - Parameters:
    ///   - backend: The store.
    ///   - accessGroups: The entitled groups.
    ///   - accessAuthority: Who answers for the session lock and user presence. The
    ///     `SecItem` module's process default asks logind and polkit (`SecItemPolkit`).
    public init(backend: any SecItemBackend, accessGroups: AccessGroups, accessAuthority: any AccessAuthority) {
        self.backend = backend
        self.accessGroups = accessGroups
        self.accessAuthority = accessAuthority
    }

    /// Creates a client over `backend` for the application `applicationIdentifier`:
    /// entitled to exactly its own group, as an Apple app without a
    /// `keychain-access-groups` entitlement.
    public init(backend: any SecItemBackend, applicationIdentifier: String) {
        self.init(backend: backend, accessGroups: .application(applicationIdentifier))
    }

    // MARK: Throwing API

    /// Adds an item (`SecItemAdd`).
    /// - Returns: The result the return keys ask for (a single object, never an array), or `nil`.
    /// - Throws: ``SecItemError``: `errSecDuplicateItem`, `errSecParam`, …
    @discardableResult
    public func addItem(_ attributes: [String: Any]) throws(SecItemError) -> Any? {
        let request = try ClientRequest.parse(attributes, role: .add)
        if request.itemClass == .identity { return try addIdentity(request) }
        let item = try add(request)
        return ResultShaper.shape([item], returns: request.returns, asArray: false, authority: accessAuthority)
    }

    /// Finds items (`SecItemCopyMatching`).
    /// - Returns: The result shaped as the return keys and match limit ask; `nil`
    ///   for a single match with no return keys (or no data when only data was asked).
    /// - Throws: `errSecItemNotFound` when nothing matches, or a parse/backend error.
    public func copyMatchingItems(_ query: [String: Any]) throws(SecItemError) -> Any? {
        let request = try ClientRequest.parse(query, role: .search)
        if request.itemClass == .identity { return try copyIdentities(request) }
        let items = try find(request)
        return ResultShaper.shape(
            items, returns: request.returns, asArray: request.limit.returnsArray, authority: accessAuthority)
    }

    /// Updates every matching item (`SecItemUpdate`), atomically.
    /// - Returns: The number of items updated (at least 1).
    /// - Throws: `errSecItemNotFound`, `errSecDuplicateItem` (nothing changed), parse errors.
    @discardableResult
    public func updateItems(_ query: [String: Any], _ attributesToUpdate: [String: Any]) throws(SecItemError) -> Int {
        let request = try ClientRequest.parse(query, role: .modifyQuery)
        if request.itemClass == .identity {
            throw SecItemError(errSecUnimplemented, "update an identity's certificate or key (kSecClassCertificate, kSecClassKey)")
        }
        let changes = try ClientRequest.parse(attributesToUpdate, role: .changes, itemClass: request.itemClass)
        return try update(request, with: changes)
    }

    /// Deletes every matching item (`SecItemDelete`).
    /// - Returns: The number of items deleted (at least 1).
    /// - Throws: `errSecItemNotFound` when nothing matches, or a parse/backend error.
    @discardableResult
    public func deleteItems(_ query: [String: Any]) throws(SecItemError) -> Int {
        let request = try ClientRequest.parse(query, role: .modifyQuery)
        if request.itemClass == .identity { return try deleteIdentities(request) }
        return try delete(request)
    }

    // MARK: Typed entry points (the dictionary API above and the typed layer both call these)

    /// Adds the item `request` describes, after ``ClientRequest/validate(_:entitlements:)``.
    /// - Returns: The item as stored (defaults, group and dates filled in).
    @discardableResult
    package func add(_ request: ClientRequest) throws(SecItemError) -> StoredItem {
        let item = try newItem(request)
        try backend.add(item)
        return item
    }

    /// The item an add of `request` would store (validated; defaults, group, a new
    /// identity and dates filled in), for callers that add it themselves
    /// (``VerifiedCopy``, for an all-or-nothing migration).
    package func newItem(_ request: ClientRequest) throws(SecItemError) -> StoredItem {
        try request.validate(.add, entitlements: accessGroups)
        guard let itemClass = request.itemClass else { throw SecItemError(errSecParam, "the item has no kSecClass") }
        guard itemClass != .identity else {
            throw SecItemError(errSecParam, "an identity is added as kSecValueRef of a SecIdentity (SecItemAdd)")
        }
        return makeItem(itemClass, request)
    }

    /// The items `request` matches, at most its limit's count. Their `data` is set only
    /// when the request returns data, and then only after the access check
    /// (``AccessGate``). When only data was asked (``ItemProjection/dataAndAccess``),
    /// their attributes may hold `pdmn` and `accc` alone and their `id` may be a placeholder.
    /// - Throws: `errSecItemNotFound` when nothing matches.
    package func find(_ request: ClientRequest) throws(SecItemError) -> [StoredItem] {
        try request.validate(.search, entitlements: accessGroups)
        if request.itemClass == .identity {
            return try findIdentities(request).map(\.certificate)
        }
        if case .count(0) = request.limit { throw SecItemError(errSecItemNotFound, "kSecMatchLimit is 0") }
        var itemQuery = try makeQuery(request)
        if request.returns.data && !request.returns.attributes && !request.returns.persistentRef {
            itemQuery.projection = .dataAndAccess
        }
        // Skipped items must not use up the match limit: find all, cut after the check.
        let skipping = request.returns.data && request.authenticationUI == .skip
        var items = try backend.fetch(matching: itemQuery, limit: skipping ? nil : request.limit.fetchLimit)
        if request.returns.data {
            items = try releaseData(of: items, request, skipping: skipping)
            if items.contains(where: { $0.itemClass == .key && !$0.isExtractableKey }) {
                throw SecItemError(
                    errSecInteractionNotAllowed,
                    "a key found is not extractable (kSecAttrIsExtractable false): its data is never returned; use it with kSecReturnRef")
            }
        } else {
            // Data not released through the gate does not leave the core; a key's bytes
            // go into the SecKey a kSecReturnRef asks for (its use asks the gate), a
            // certificate's DER into its SecCertificate.
            for index in items.indices where items[index].data != nil {
                if request.returns.ref && (items[index].itemClass == .key || items[index].itemClass == .certificate) { continue }
                items[index].data = nil
            }
        }
        guard !items.isEmpty else { throw SecItemError(errSecItemNotFound) }
        return items
    }

    /// The access check before data leaves the keychain (``AccessGate``), on the
    /// items as found: the backend filled their `pdmn` and `accc` whatever the
    /// query's ``ItemQuery/projection`` (one read per call).
    private func releaseData(
        of found: [StoredItem], _ request: ClientRequest, skipping: Bool
    ) throws(SecItemError) -> [StoredItem] {
        var items = try AccessGate.release(
            found, authenticationUI: request.authenticationUI, prompt: request.operationPrompt,
            authority: accessAuthority, context: request.authenticationContext)
        if skipping, let limit = request.limit.fetchLimit, items.count > limit {
            items.removeLast(items.count - limit)
        }
        return items
    }

    /// Applies `changes` to every item `query` matches, atomically, after both pass
    /// ``ClientRequest/validate(_:entitlements:)``.
    /// - Returns: The number of items updated (at least 1).
    /// - Throws: `errSecItemNotFound`, `errSecDuplicateItem` (nothing changed), `errSecParam` for no changes.
    @discardableResult
    package func update(_ query: ClientRequest, with changes: ClientRequest) throws(SecItemError) -> Int {
        try query.validate(.modifyQuery, entitlements: accessGroups)
        try changes.validate(.changes, entitlements: accessGroups)
        if query.itemClass == .identity {
            throw SecItemError(errSecUnimplemented, "update an identity's certificate or key (kSecClassCertificate, kSecClassKey)")
        }
        if changes.attributes.isEmpty && changes.data == nil && changes.accessGroup == nil
            && changes.synchronizable == nil
        {
            throw SecItemError(errSecParam, "attributesToUpdate is empty")
        }
        var newAttributes = changes.attributes
        // Dates are the keychain's: creation stays, modification becomes now.
        newAttributes[SecConstant.kSecAttrCreationDate] = nil
        newAttributes[SecConstant.kSecAttrModificationDate] = nil
        if let group = changes.accessGroup { newAttributes[SecConstant.kSecAttrAccessGroup] = .string(group) }
        if let sync = changes.synchronizable { newAttributes[SecConstant.kSecAttrSynchronizable] = .number(sync == .yes ? 1 : 0) }
        let newData = changes.data
        let now = Date()
        let itemQuery = try makeQuery(query)
        // Weakening or removing an item's protection releases what reading it would:
        // it passes the same gate first (nothing is changed when it does not).
        var cleared = Weakening()
        if newAttributes[SecConstant.kSecAttrAccessControl] != nil || newAttributes[SecConstant.kSecAttrAccessible] != nil {
            cleared = try clearWeakening(itemQuery, newAttributes, query)
        }
        let count = try backend.update(matching: itemQuery) { old in
            var item = old
            item.attributes.merge(newAttributes) { _, new in new }
            if !cleared.covers(Weakening(from: old, to: item)) {
                // Changed since the check (another process): its protection stays as it was.
                item.attributes[SecConstant.kSecAttrAccessControl] = old.attributes[SecConstant.kSecAttrAccessControl]
                item.attributes[SecConstant.kSecAttrAccessible] = old.attributes[SecConstant.kSecAttrAccessible]
            }
            if let newData { item.data = newData }
            var modified = now
            if case .date(let previous)? = old.attributes[SecConstant.kSecAttrModificationDate], modified <= previous {
                modified = previous.addingTimeInterval(0.001)
            }
            item.attributes[SecConstant.kSecAttrModificationDate] = .date(modified)
            return item
        }
        guard count > 0 else { throw SecItemError(errSecItemNotFound) }
        return count
    }

    /// Which protections an update drops: the user-presence requirement, the session-lock binding.
    struct Weakening {
        var presence = false
        var unlock = false

        init() {}

        init(from old: StoredItem, to new: StoredItem) {
            let before = AccessRequirement(old), after = AccessRequirement(new)
            presence = before.userPresence && !after.userPresence
            unlock = before.unlockedSession && !after.unlockedSession
        }

        var isEmpty: Bool { !presence && !unlock }

        func covers(_ other: Weakening) -> Bool { (presence || !other.presence) && (unlock || !other.unlock) }
    }

    /// Before an update that changes `kSecAttrAccessControl` or `kSecAttrAccessible`:
    /// the items whose protection it would weaken (drop user presence, or move out of a
    /// `WhenUnlocked` class) pass ``AccessGate`` as a read of their data would — a locked
    /// session refuses, polkit is asked once for all of them, `kSecUseAuthenticationUIFail`
    /// (and `Skip`, which cannot leave items out of an update) refuses without asking.
    /// - Returns: What the gate cleared: the kinds of weakening it checked.
    private func clearWeakening(
        _ itemQuery: ItemQuery, _ newAttributes: [String: AttributeValue], _ request: ClientRequest
    ) throws(SecItemError) -> Weakening {
        var found = try backend.fetch(matching: itemQuery, limit: nil)
        defer { found.wipeData() }
        var weakened: [StoredItem] = []
        var cleared = Weakening()
        for old in found {
            var new = old
            new.attributes.merge(newAttributes) { _, value in value }
            let weakening = Weakening(from: old, to: new)
            if !weakening.isEmpty {
                weakened.append(StoredItem(itemClass: old.itemClass, id: old.id, attributes: old.attributes, data: nil))
                cleared.presence = cleared.presence || weakening.presence
                cleared.unlock = cleared.unlock || weakening.unlock
            }
        }
        guard !weakened.isEmpty else { return cleared }
        _ = try AccessGate.release(
            weakened, authenticationUI: request.authenticationUI == .skip ? .fail : request.authenticationUI,
            prompt: request.operationPrompt, authority: accessAuthority, context: request.authenticationContext)
        return cleared
    }

    /// Deletes every item `query` matches, after ``ClientRequest/validate(_:entitlements:)``.
    /// - Returns: The number of items deleted (at least 1).
    /// - Throws: `errSecItemNotFound` when nothing matches.
    @discardableResult
    package func delete(_ query: ClientRequest) throws(SecItemError) -> Int {
        try query.validate(.modifyQuery, entitlements: accessGroups)
        if query.itemClass == .identity { return try deleteIdentities(query) }
        let count = try backend.delete(matching: try makeQuery(query))
        guard count > 0 else { throw SecItemError(errSecItemNotFound) }
        return count
    }

    // MARK: Apple-style API

    /// `SecItemAdd` on this client's store.
    public func add(_ attributes: any SecItemDictionaryConvertible, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
        Self.status { () throws(SecItemError) in
            let value = try addItem(try attributes._secItemDictionary())
            result?.pointee = Self.object(value)
        }
    }

    /// `SecItemCopyMatching` on this client's store. On failure `result` is left untouched.
    public func copyMatching(_ query: any SecItemDictionaryConvertible, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
        Self.status { () throws(SecItemError) in
            let value = try copyMatchingItems(try query._secItemDictionary())
            result?.pointee = Self.object(value)
        }
    }

    /// `SecItemUpdate` on this client's store.
    public func update(
        _ query: any SecItemDictionaryConvertible, _ attributesToUpdate: any SecItemDictionaryConvertible
    ) -> OSStatus {
        Self.status { () throws(SecItemError) in
            try updateItems(try query._secItemDictionary(), try attributesToUpdate._secItemDictionary())
        }
    }

    /// `SecItemDelete` on this client's store.
    public func delete(_ query: any SecItemDictionaryConvertible) -> OSStatus {
        Self.status { () throws(SecItemError) in try deleteItems(try query._secItemDictionary()) }
    }

    // MARK: Internals

    /// Runs an Apple-style call: its status, and its error kept for ``SecItemCopyLastError(_:)``.
    private static func status(_ body: () throws(SecItemError) -> Void) -> OSStatus {
        do {
            try body()
            LastError.clear()
            return errSecSuccess
        } catch {
            LastError.set(error)
            return error.status
        }
    }

    private static func object(_ value: Any?) -> CFTypeRef? {
        guard let value else { return nil }
        return value as AnyObject
    }

    private func makeItem(_ itemClass: ItemClass, _ parsed: ClientRequest) -> StoredItem {
        var attributes = parsed.attributes
        for key in itemClass.primaryKeyAttributes where attributes[key] == nil {
            attributes[key] = Schema.defaultValue(for: key)
        }
        attributes[SecConstant.kSecAttrAccessGroup] = .string(parsed.accessGroup ?? accessGroups.defaultGroup)
        attributes[SecConstant.kSecAttrSynchronizable] = .number(parsed.synchronizable == .yes ? 1 : 0)
        if attributes[SecConstant.kSecAttrAccessible] == nil {
            attributes[SecConstant.kSecAttrAccessible] = .string(itemClass == .certificate ? SecConstant.kSecAttrAccessibleAlways : SecConstant.kSecAttrAccessibleWhenUnlocked)
        }
        let now = Date()
        attributes[SecConstant.kSecAttrCreationDate] = .date(now)
        attributes[SecConstant.kSecAttrModificationDate] = .date(now)
        return StoredItem(itemClass: itemClass, id: randomUUID(), attributes: attributes, data: parsed.data)
    }

    func makeQuery(_ parsed: ClientRequest) throws(SecItemError) -> ItemQuery {
        var query: ItemQuery
        if let (refClass, id) = parsed.persistentRef {
            guard parsed.itemClass == nil || parsed.itemClass == refClass else {
                throw SecItemError(errSecItemNotFound, "the persistent reference is of another class")
            }
            query = ItemQuery(
                itemClass: refClass, persistentReferenceID: id, accessGroups: accessGroups.groupSet,
                synchronizable: .any, caseInsensitive: parsed.caseInsensitive,
                allowsInteraction: parsed.allowsInteraction)
        } else {
            let groups: Set<String> = parsed.accessGroup.map { [$0] } ?? accessGroups.groupSet
            query = ItemQuery(
                itemClass: parsed.itemClass, attributes: parsed.attributes, accessGroups: groups,
                synchronizable: parsed.synchronizable ?? .no, caseInsensitive: parsed.caseInsensitive,
                allowsInteraction: parsed.allowsInteraction)
        }
        // An operator client's search that names no group covers every group.
        query.coversEveryAccessGroup = accessGroups.coversEveryGroup && parsed.accessGroup == nil
        query.namesAccessGroup = parsed.accessGroup != nil
        return query
    }
}

/// Builds results exactly as the contract's result table (§6) says.
enum ResultShaper {
    static func shape(
        _ items: [StoredItem], returns: ReturnFlags, asArray: Bool, authority: (any AccessAuthority)? = nil
    ) -> Any? {
        if !asArray {
            // items[0]'s fields are read in place: a copy of the whole item costs more than a lookup's data.
            guard !items.isEmpty else { return nil }
            if returns.count >= 2 { return dictionary(items[0], returns: returns, authority: authority) }
            if returns.data { return items[0].data }
            if returns.attributes { return attributes(of: items[0]) }
            if returns.persistentRef { return items[0].persistentReference }
            if returns.ref { return reference(items[0], authority: authority) }
            return nil  // no return keys
        }
        if returns.count >= 2 { return items.map { dictionary($0, returns: returns, authority: authority) } }
        if returns.data { return items.compactMap(\.data) }
        if returns.attributes { return items.map { attributes(of: $0) } }
        if returns.persistentRef { return items.map(\.persistentReference) }
        if returns.ref { return items.compactMap { reference($0, authority: authority) } }
        return [Any]()
    }

    /// The object `kSecReturnRef` returns for `item`: a `SecKey` for a key, a `SecCertificate`
    /// for a certificate; `nil` for
    /// passwords (macOS's `SecKeychainItem` does not exist here).
    static func reference(_ item: StoredItem, authority: (any AccessAuthority)?) -> AnyObject? {
        switch item.itemClass {
        case .key: return SecKey.fromItem(item, authority: authority ?? HeadlessAccessAuthority())
        case .certificate: return SecCertificate.fromItem(item)
        default: return nil
        }
    }

    static func attributes(of item: StoredItem) -> [String: Any] {
        // mapValues keeps the keys where they are in the hash table: no key is hashed
        // again (inserting each one hashed every key of every item a query returns, a
        // third of a 100-item attribute query on the memory backend).
        var out = item.attributes.mapValues { $0.anyValue }
        // kSecAttrAccessControl is stored as its flags next to pdmn; it comes back as the object.
        if case .number(let flags)? = item.attributes[SecConstant.kSecAttrAccessControl], case .string(let pdmn)? = item.attributes[SecConstant.kSecAttrAccessible] {
            out[SecConstant.kSecAttrAccessControl] = SecAccessControl(
                accessibility: pdmn, flags: SecAccessControlCreateFlags(rawValue: CFOptionFlags(UInt64(bitPattern: flags))))
        }
        return out
    }

    static func dictionary(_ item: StoredItem, returns: ReturnFlags, authority: (any AccessAuthority)? = nil) -> [String: Any] {
        var out = returns.attributes ? attributes(of: item) : [:]
        if returns.ref, let object = reference(item, authority: authority) { out[SecConstant.kSecValueRef] = object }
        if returns.data, let data = item.data { out[SecConstant.kSecValueData] = data }
        if returns.persistentRef { out[SecConstant.kSecValuePersistentRef] = item.persistentReference }
        return out
    }
}

/// A random (version 4) UUID from the system generator (getrandom), without
/// opening /dev/urandom on every call as `UUID()` does here.
func randomUUID() -> UUID {
    var generator = SystemRandomNumberGenerator()
    let high = generator.next() as UInt64
    let low = generator.next() as UInt64
    var b = [UInt8](repeating: 0, count: 16)
    for i in 0..<8 {
        b[i] = UInt8(truncatingIfNeeded: high >> (56 - 8 * i))
        b[8 + i] = UInt8(truncatingIfNeeded: low >> (56 - 8 * i))
    }
    b[6] = (b[6] & 0x0F) | 0x40  // version 4
    b[8] = (b[8] & 0x3F) | 0x80  // RFC 4122 variant
    return UUID(bytes: b)!
}
