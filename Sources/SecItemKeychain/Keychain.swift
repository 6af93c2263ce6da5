public import Foundation
public import SecItemCore
import Dispatch

/// A Swift-native view of one slice of a keychain: the items of one service (or
/// one internet server) in one access group, read and written by key.
///
/// `Keychain` is a thin layer over `SecItemClient`: every call becomes one
/// SecItem query, so the contract's rules (duplicates, groups, synchronizable
/// visibility) apply unchanged, on every backend.
///
/// ```swift
/// let keychain = Keychain(service: "com.example.api")
/// try keychain.set("s3cret", forKey: "alice")            // insert or replace, atomically
/// let password = try keychain.string(forKey: "alice")    // nil when absent
/// try keychain.setEncoded(token, forKey: "token")        // any Encodable, as JSON
/// let saved = try keychain.decoded(Token.self, forKey: "token")
/// keychain["theme"] = "dark"                             // subscripts for the simple cases
/// try keychain.remove("alice")
/// ```
///
/// Keys are accounts (`kSecAttrAccount`). Writes go to ``accessGroup`` (the
/// client's default group when none is given) and every read, listing and
/// removal is pinned to it, so `removeAll()` never reaches another service or group.
public struct Keychain: Sendable {
    /// What items a keychain holds: generic passwords of a service, or internet
    /// passwords of a server.
    public enum Scope: Sendable, Hashable {
        /// `kSecClassGenericPassword` items with this `kSecAttrService`.
        case service(String)
        /// `kSecClassInternetPassword` items for this server.
        case internet(InternetScope)
    }

    /// The server, protocol, port, path, security domain and authentication type
    /// that internet passwords are stored under. `nil` fields are left unset (their default).
    public struct InternetScope: Sendable, Hashable {
        /// `kSecAttrServer`.
        public var server: String
        /// `kSecAttrProtocol` (`kSecAttrProtocolHTTPS`, …).
        public var `protocol`: String?
        /// `kSecAttrPort`.
        public var port: Int?
        /// `kSecAttrPath`.
        public var path: String?
        /// `kSecAttrSecurityDomain`.
        public var securityDomain: String?
        /// `kSecAttrAuthenticationType` (`kSecAttrAuthenticationTypeHTMLForm`, …).
        public var authenticationType: String?

        /// A server scope; `nil` fields are not part of the items' keys.
        public init(
            server: String, protocol: String? = nil, port: Int? = nil, path: String? = nil,
            securityDomain: String? = nil, authenticationType: String? = nil
        ) {
            self.server = server
            self.protocol = `protocol`
            self.port = port
            self.path = path
            self.securityDomain = securityDomain
            self.authenticationType = authenticationType
        }

        /// A server scope with the protocol (and authentication type) as the `kSecAttr…`
        /// constants: `InternetScope(server: "example.com", protocol: kSecAttrProtocolHTTPS)`.
        public init(
            server: String, protocol: CFString, port: Int? = nil, path: String? = nil, securityDomain: String? = nil,
            authenticationType: CFString? = nil
        ) {
            self.init(
                server: server, protocol: `protocol` as String, port: port, path: path, securityDomain: securityDomain,
                authenticationType: authenticationType.map { $0 as String })
        }
    }

    /// When an item may be read (`kSecAttrAccessible`). Linux has no lock states,
    /// so this is stored and matched, and `…ThisDeviceOnly` items are left out of
    /// exports, but it does not gate reads.
    public enum Accessibility: String, Sendable, Hashable, CaseIterable {
        case whenUnlocked = "ak"
        case afterFirstUnlock = "ck"
        case whenUnlockedThisDeviceOnly = "aku"
        case afterFirstUnlockThisDeviceOnly = "cku"
        case whenPasscodeSetThisDeviceOnly = "akpu"
    }

    /// The client (store and entitlements) this keychain uses.
    public let client: SecItemClient
    /// Which items this keychain holds.
    public let scope: Scope
    /// The access group every item of this keychain lives in.
    public let accessGroup: String
    /// The accessibility new items get.
    public let accessibility: Accessibility
    /// Whether this keychain's items are synchronizable (stored and matched; nothing syncs).
    public let synchronizable: Bool

    /// A keychain of generic passwords for `service`.
    /// - Parameters:
    ///   - service: The `kSecAttrService` of every item.
    ///   - client: The store and entitlements. (`import SecItem` adds an initializer
    ///     without it, which uses the process default.)
    ///   - accessGroup: The group; by default the client's first entitled group.
    ///   - accessibility: For new items; `afterFirstUnlock` by default.
    ///   - synchronizable: `false` by default.
    /// - Throws: `errSecMissingEntitlement` when `accessGroup` is not entitled.
    public init(
        service: String, client: SecItemClient, accessGroup: String? = nil,
        accessibility: Accessibility = .afterFirstUnlock, synchronizable: Bool = false
    ) throws {
        try self.init(
            scope: .service(service), client: client, accessGroup: accessGroup, accessibility: accessibility,
            synchronizable: synchronizable)
    }

    /// A keychain of internet passwords for a server.
    public init(
        internet: InternetScope, client: SecItemClient, accessGroup: String? = nil,
        accessibility: Accessibility = .afterFirstUnlock, synchronizable: Bool = false
    ) throws {
        try self.init(
            scope: .internet(internet), client: client, accessGroup: accessGroup, accessibility: accessibility,
            synchronizable: synchronizable)
    }

    /// A keychain for any scope.
    public init(
        scope: Scope, client: SecItemClient, accessGroup: String? = nil,
        accessibility: Accessibility = .afterFirstUnlock, synchronizable: Bool = false
    ) throws {
        let group = accessGroup ?? client.accessGroups.defaultGroup
        guard client.accessGroups.permits(group) else {
            throw SecItemError(errSecMissingEntitlement, "access group '\(group)' is not entitled")
        }
        self.client = client
        self.scope = scope
        self.accessGroup = group
        self.accessibility = accessibility
        self.synchronizable = synchronizable
    }

    /// The same keychain scope over another client (another store).
    public func with(client: SecItemClient) throws -> Keychain {
        try Keychain(
            scope: scope, client: client, accessGroup: accessGroup, accessibility: accessibility,
            synchronizable: synchronizable)
    }

    // MARK: Requests

    /// The request selecting this keychain's items (all keys, or one), in the
    /// core's types: no dictionary is built for the parser to read back.
    func request(forKey key: String? = nil) throws(SecItemError) -> ClientRequest {
        var request: ClientRequest
        switch scope {
        case .service(let service):
            request = ClientRequest(.genericPassword, accessGroup: accessGroup, synchronizable: synchronizable ? .yes : .no)
            try request.set(SecConstant.kSecAttrService, service)
        case .internet(let s):
            request = ClientRequest(.internetPassword, accessGroup: accessGroup, synchronizable: synchronizable ? .yes : .no)
            try request.set(SecConstant.kSecAttrServer, s.server)
            if let v = s.protocol { try request.set(SecConstant.kSecAttrProtocol, v) }
            if let v = s.port { try request.set(SecConstant.kSecAttrPort, v) }
            if let v = s.path { try request.set(SecConstant.kSecAttrPath, v) }
            if let v = s.securityDomain { try request.set(SecConstant.kSecAttrSecurityDomain, v) }
            if let v = s.authenticationType { try request.set(SecConstant.kSecAttrAuthenticationType, v) }
        }
        if let key { try request.set(SecConstant.kSecAttrAccount, key) }
        return request
    }

    /// The new item under `key` holding `data`, with this keychain's accessibility.
    func newItem(_ data: Data, forKey key: String) throws(SecItemError) -> ClientRequest {
        var item = try request(forKey: key)
        item.data = data
        try item.set(SecConstant.kSecAttrAccessible, accessibility.rawValue)
        return item
    }

    // MARK: Reading

    /// The data stored under `key`, or `nil` when there is none.
    /// - Throws: `SecItemError` for any failure other than "not found".
    public func data(forKey key: String) throws -> Data? {
        var q = try request(forKey: key)
        q.returns.data = true
        return try absentAsNil { () throws(SecItemError) in try client.find(q).first?.data ?? Data() }
    }

    /// The UTF-8 string stored under `key`, or `nil` when there is none.
    /// - Throws: `errSecDecode` when the stored bytes are not UTF-8; other `SecItemError`s.
    public func string(forKey key: String) throws -> String? {
        guard let data = try data(forKey: key) else { return nil }
        guard let string = String(bytes: data, encoding: .utf8) else {
            throw SecItemError(errSecDecode, "the item under this key is not UTF-8 text")
        }
        return string
    }

    /// The value stored under `key` by `setEncoded(_:forKey:)`, or `nil` when there is none.
    /// - Throws: `errSecDecode` when the stored bytes do not decode as `T`; other `SecItemError`s.
    public func decoded<T: Decodable>(_ type: T.Type, forKey key: String) throws -> T? {
        guard let data = try data(forKey: key) else { return nil }
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch {
            throw SecItemError(errSecDecode, "the item under this key does not decode as \(T.self)")
        }
    }

    /// Whether an item exists under `key`.
    public func contains(_ key: String) throws -> Bool {
        let q = try request(forKey: key)
        return try absentAsNil { () throws(SecItemError) in try client.find(q) } != nil
    }

    /// Every key (account) in this keychain, sorted.
    public func allKeys() throws -> [String] {
        try allItems().map(\.key).sorted()
    }

    /// Every item's attributes, and its data when `includingData` is true.
    public func allItems(includingData: Bool = false) throws -> [KeychainItem] {
        var q = try request()
        q.returns.attributes = true
        q.returns.data = includingData
        q.limit = .all
        let items = try absentAsNil { () throws(SecItemError) in try client.find(q) } ?? []
        return items.map(KeychainItem.init(item:))
    }

    // MARK: Writing

    /// Stores `data` under `key`, replacing what was there, as one operation.
    ///
    /// Never a read-then-write race: it adds, and on `errSecDuplicateItem` updates
    /// (retrying if the item vanished in between), so concurrent writers end with
    /// exactly one item holding one writer's value.
    public func set(_ data: Data, forKey key: String) throws {
        let item = try newItem(data, forKey: key)
        let query = try request(forKey: key)
        var changes = ClientRequest()
        changes.data = data
        changes.attributes[SecConstant.kSecAttrAccessible] = item.attributes[SecConstant.kSecAttrAccessible]
        for _ in 0..<8 {
            do {
                try client.add(item)
                return
            } catch {
                guard error.status == errSecDuplicateItem else { throw error }
            }
            let updated = try absentAsNil { () throws(SecItemError) in try client.update(query, with: changes) }
            if updated != nil { return }
            // Removed between the add and the update: add again.
        }
        throw SecItemError(errSecIO, "the item kept changing under concurrent writers")
    }

    /// Stores `string` as UTF-8 under `key`, replacing what was there.
    public func set(_ string: String, forKey key: String) throws {
        try set(Data(string.utf8), forKey: key)
    }

    /// Stores `value` encoded as JSON under `key`, replacing what was there.
    public func setEncoded<T: Encodable>(_ value: T, forKey key: String) throws {
        let data: Data
        do {
            data = try JSONEncoder().encode(value)
        } catch {
            throw SecItemError(errSecParam, "the value of type \(T.self) could not be encoded")
        }
        try set(data, forKey: key)
    }

    /// Replaces the data of an existing item.
    /// - Throws: `errSecItemNotFound` when there is no item under `key`.
    public func update(_ data: Data, forKey key: String) throws {
        var changes = ClientRequest()
        changes.data = data
        try client.update(try request(forKey: key), with: changes)
    }

    /// Removes the item under `key`.
    /// - Returns: Whether there was one.
    @discardableResult
    public func remove(_ key: String) throws -> Bool {
        let q = try request(forKey: key)
        return try absentAsNil { () throws(SecItemError) in try client.delete(q) } != nil
    }

    /// Removes every item of this keychain (this service or server, this group,
    /// this synchronizable state), and nothing else.
    /// - Returns: How many items were removed.
    @discardableResult
    public func removeAll() throws -> Int {
        let q = try request()
        return try absentAsNil { () throws(SecItemError) in try client.delete(q) } ?? 0
    }

    // MARK: Subscripts

    /// The string under `key`; `nil` when absent or unreadable. Assigning `nil` removes it.
    /// Use the throwing methods when the difference between "absent" and "failed" matters.
    public subscript(key: String) -> String? {
        get { (try? string(forKey: key)) ?? nil }
        nonmutating set {
            if let newValue { try? set(newValue, forKey: key) } else { _ = try? remove(key) }
        }
    }

    /// The data under `key`; `nil` when absent or unreadable. Assigning `nil` removes it.
    public subscript(data key: String) -> Data? {
        get { (try? data(forKey: key)) ?? nil }
        nonmutating set {
            if let newValue { try? set(newValue, forKey: key) } else { _ = try? remove(key) }
        }
    }
}

/// One item of a ``Keychain``: its key, attributes and (when asked) data.
public struct KeychainItem: Sendable, Hashable {
    /// The account.
    public var key: String
    /// The label, when set.
    public var label: String?
    /// The comment, when set.
    public var comment: String?
    /// When the item was created.
    public var creationDate: Date?
    /// When the item was last changed.
    public var modificationDate: Date?
    /// The data, when it was asked for and the item has some.
    public var data: Data?

    /// The item as the core found it (its data only when it was asked for, and released).
    init(item: StoredItem) {
        switch item.attributes[SecConstant.kSecAttrAccount] {
        case .string(let s)?: key = s
        case .data(let d)?: key = String(decoding: d, as: UTF8.self)
        default: key = ""
        }
        label = Self.string(item.attributes[SecConstant.kSecAttrLabel])
        comment = Self.string(item.attributes[SecConstant.kSecAttrComment])
        creationDate = Self.date(item.attributes[SecConstant.kSecAttrCreationDate])
        modificationDate = Self.date(item.attributes[SecConstant.kSecAttrModificationDate])
        data = item.data
    }

    private static func string(_ value: AttributeValue?) -> String? {
        if case .string(let s)? = value { return s }
        return nil
    }

    private static func date(_ value: AttributeValue?) -> Date? {
        if case .date(let d)? = value { return d }
        return nil
    }
}

/// Runs `body`, turning errSecItemNotFound into `nil`.
///
/// (A plain `do`/`catch` with one exhaustive clause: a non-exhaustive
/// `catch SecItemError.x` around a typed-throws call crashes Swift 6.3.1's
/// SILGen in some functions.)
func absentAsNil<T>(_ body: () throws(SecItemError) -> T) throws(SecItemError) -> T? {
    do {
        return try body()
    } catch {
        if error.status == errSecItemNotFound { return nil }
        throw error
    }
}
