public import SecItemCore
import SecItemSQLite

/// `secitem rekey` and `verify`: maintenance of the file backend's keychain file,
/// opened from the environment (and config file) exactly as the backend is.
public enum FileMaintenance {
    /// The new protection for ``rekey(environment:to:)``.
    public enum NewKey: Sendable {
        /// A new passphrase (the backend derives the new key from it and keeps no copy).
        case passphrase(Passphrase)
        case keyFile(String)
    }

    static func open(_ environment: [String: String]) throws(SecItemError) -> SQLiteBackend {
        let configuration = SecItemConfiguration.resolve(environment: environment)
        try configuration.checkUsable()
        return try SQLiteBackend(configuration: SQLiteBackend.Configuration(configuration))
    }

    /// Checks the file, its schema, every row and (format 2) the row set against its commitment.
    /// - Returns: The path checked, one line per problem (empty when all is well), and
    ///   the file's commitment value (`<generation>:<hex>`; empty for a format-1 file).
    public static func verify(environment: [String: String]) throws(SecItemError)
        -> (path: String, damaged: [String], commitment: String)
    {
        let backend = try open(environment)
        defer { backend.close() }
        let report = try backend.verify()
        return (backend.configuration.path, report.problems, report.commitment)
    }

    /// Protects the file with a new passphrase or key file: a new data key and every
    /// row re-encrypted (one transaction), or with `rewrapOnly` the same data key re-wrapped.
    /// - Returns: The path rekeyed.
    public static func rekey(environment: [String: String], to newKey: NewKey, rewrapOnly: Bool = false)
        throws(SecItemError) -> String
    {
        let backend = try open(environment)
        defer { backend.close() }
        switch newKey {
        case .passphrase(let passphrase): try backend.rekey(to: .passphrase(passphrase), rewrapOnly: rewrapOnly)
        case .keyFile(let path): try backend.rekey(to: .keyFile(path), rewrapOnly: rewrapOnly)
        }
        return backend.configuration.path
    }

    /// Upgrades a format-1 file to the current format (one transaction).
    /// - Returns: The path, and whether it was upgraded (false: already current).
    public static func upgrade(environment: [String: String]) throws(SecItemError) -> (path: String, upgraded: Bool) {
        let backend = try open(environment)
        defer { backend.close() }
        return (backend.configuration.path, try backend.upgrade())
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
