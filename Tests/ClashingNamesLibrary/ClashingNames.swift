// A stand-in for a wrapper library or an app's own framework: its main types have the
// generic names keychain code likes (`Keychain`, `ItemClass`, …). A file that imports it
// next to `import Security` compiles on Apple platforms; `NameClashTests` checks the
// same holds next to `import SecItem`.

/// A wrapper library's own keychain type.
public struct Keychain: Sendable {
    public let service: String
    public init(service: String) { self.service = service }
}

/// A wrapper library's own item class.
public enum ItemClass: String, Sendable {
    case genericPassword, internetPassword
}

/// A wrapper library's own access-group list.
public struct AccessGroups: Sendable {
    public let names: [String]
    public init(_ names: [String]) { self.names = names }
}

/// A wrapper library's own item.
public struct KeychainItem: Sendable {
    public let key: String
    public init(key: String) { self.key = key }
}

/// Names the core uses for its plumbing, also common in apps.
public struct StoredItem: Sendable { public init() {} }
public struct ItemQuery: Sendable { public init() {} }
public struct AttributeValue: Sendable { public init() {} }
public enum Schema { public static let version = 1 }
public struct MigrationReport: Sendable { public init() {} }
