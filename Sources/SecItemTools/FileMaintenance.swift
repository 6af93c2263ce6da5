public import SecItemCore
import SecItemSQLite

/// `secitem rekey` and `verify`: maintenance of the file backend's keychain file,
/// opened from the environment (and config file) exactly as the backend is.
public enum FileMaintenance {
    /// The new protection for ``rekey(environment:to:)``.
    public enum NewKey: Sendable {
        case passphrase(String)
        case keyFile(String)
    }

    static func open(_ environment: [String: String]) throws(SecItemError) -> SQLiteBackend {
        let configuration = SecItemConfiguration.resolve(environment: environment)
        try configuration.checkUsable()
        return try SQLiteBackend(configuration: SQLiteBackend.Configuration(configuration))
    }

    /// Checks the file and every row.
    /// - Returns: The path checked and one line per damaged row (empty when all is well).
    public static func verify(environment: [String: String]) throws(SecItemError) -> (path: String, damaged: [String]) {
        let backend = try open(environment)
        defer { backend.close() }
        return (backend.configuration.path, try backend.verify().map(\.description))
    }

    /// Re-wraps the data key under a new passphrase or key file (one transaction).
    /// - Returns: The path rekeyed.
    public static func rekey(environment: [String: String], to newKey: NewKey) throws(SecItemError) -> String {
        let backend = try open(environment)
        defer { backend.close() }
        switch newKey {
        case .passphrase(let passphrase): try backend.rekey(to: .passphrase(passphrase))
        case .keyFile(let path): try backend.rekey(to: .keyFile(path))
        }
        return backend.configuration.path
    }

    /// Replaces the data key and re-encrypts every row, in one transaction.
    /// - Returns: The path rotated.
    public static func rotateDataKey(environment: [String: String]) throws(SecItemError) -> String {
        let backend = try open(environment)
        defer { backend.close() }
        try backend.rotateDataKey()
        return backend.configuration.path
    }
}
