public import SecItemCore
import SecItem
import SecItemSQLite
import SecItemSealedStore

/// `secitem rekey`, `verify` and `upgrade`: maintenance of the keychain store the
/// environment (and config file) selects, opened exactly as the backend is: the
/// encrypted file, or the backend `SECITEM_BACKEND` / `backend =` names when its
/// store is sealed and committed (``MaintainableStore``: PostgreSQL). With no
/// backend named it is the file keychain, whatever the automatic choice would pick.
public enum FileMaintenance {
    /// The new protection for ``rekey(environment:to:rewrapOnly:)``.
    public typealias NewKey = NewStoreKey

    /// The store `environment` selects.
    /// - Throws: `errSecUnimplemented` for a named backend whose store has nothing to
    ///   maintain (the Secret Service, memory); what opening throws.
    public static func open(_ environment: [String: String]) throws(SecItemError) -> any MaintainableStore {
        try open(configuration: SecItemConfiguration.resolve(environment: environment))
    }

    /// The store a resolved configuration selects (as ``open(_:)``).
    public static func open(configuration: SecItemConfiguration) throws(SecItemError) -> any MaintainableStore {
        SecItemBackendRegistry.registerKeySources()
        if let kind = configuration.backend, kind != .file {
            let backend = try SecItemBackendChoice.resolve(configuration: configuration).backend
            guard let store = backend as? any MaintainableStore else {
                throw SecItemError(
                    errSecUnimplemented,
                    "the \(kind) keychain keeps no sealed row set to verify, rekey or upgrade; these verbs act on the "
                        + "file and PostgreSQL keychains (--backend file or postgresql)")
            }
            return store
        }
        try configuration.checkUsable()
        return try SQLiteBackend(configuration: SQLiteBackend.Configuration(configuration))
    }

    /// Checks the store, its schema, every row and the row set against its commitment.
    /// - Returns: Where the store is, one line per problem (empty when all is well), and
    ///   its commitment value (`<generation>:<hex>`; empty for a format-1 file).
    public static func verify(environment: [String: String]) throws(SecItemError)
        -> (path: String, damaged: [String], commitment: String)
    {
        // A rollback is reported with the rest, not thrown at open (and the mark is left alone).
        let store = try open(configuration: reporting(environment))
        defer { store.close() }
        let report = try store.verifyStore()
        return (store.storeLocation, report.problems, report.commitment)
    }

    /// Accepts the store as it is now as this host's high-water mark: the operator's
    /// word that an older copy was put back on purpose. The witness logs it (the state
    /// directory's `accepted.log`); the caller also says so on stderr.
    /// - Parameter reason: Why, for the log (may be empty).
    /// - Returns: Where the store is, the mark before (`nil`: none) and now.
    public static func acceptRestore(environment: [String: String], reason: String) throws(SecItemError)
        -> (path: String, before: String?, now: String)
    {
        let store = try open(configuration: reporting(environment))
        defer { store.close() }
        let who = "secitem accept-restore" + (reason.isEmpty ? "" : ": " + reason)
        let (before, now) = try store.acceptRestore(note: who)
        return (store.storeLocation, before, now)
    }

    /// The configuration `environment` gives, with the rollback check reporting rather
    /// than refusing (unless the environment or the config file turns it off).
    /// - Throws: `errSecParam` for a `rollback-check` that is not on, report or off.
    static func reporting(_ environment: [String: String]) throws(SecItemError) -> SecItemConfiguration {
        let configuration = SecItemConfiguration.resolve(environment: environment)
        guard try RollbackCheck.mode(configuration) != .off else { return configuration }
        var code = configuration.code
        code[RollbackCheck.setting] = .report
        return configuration.replacingCode(code)
    }

    /// Protects the store with a new passphrase, key file or other key source: a new data
    /// key and every row re-encrypted (one transaction), or with `rewrapOnly` (the file
    /// only) the same data key re-wrapped. Verified twice: the new source must give back
    /// its key before anything is committed, and for ``NewStoreKey/configured(_:)`` the
    /// store is then opened again exactly as that configuration will open it.
    /// - Returns: Where the store is.
    /// - Throws: What opening or rekeying throws (the store is then unchanged), or, when
    ///   the committed store does not open with the new configuration, that error.
    public static func rekey(environment: [String: String], to newKey: NewKey, rewrapOnly: Bool = false)
        throws(SecItemError) -> String
    {
        let store = try open(environment)
        defer { store.close() }
        try store.rekey(to: newKey, rewrapOnly: rewrapOnly)
        if case .configured(let settings) = newKey {
            do throws(SecItemError) {
                try open(configuration: settings).close()
            } catch {
                throw SecItemError(
                    error.status, "\(store.storeLocation) was rekeyed, but does not open with the new key source: \(error.message)")
            }
        }
        return store.storeLocation
    }

    /// The names `SECITEM_KEY_SOURCE` and `rekey --new-key-source` take, in their order
    /// of precedence (those of this build's traits included).
    public static var keySourceNames: [String] {
        SecItemBackendRegistry.registerKeySources()
        return KeySources.registered.map { $0.name }
    }

    /// Drops every key the session key cache holds for this user (`secitem lock`).
    /// - Returns: How many keys were dropped.
    public static func lock() throws(SecItemError) -> Int {
        try SessionKeyCache.dropAll()
    }

    /// Upgrades a format-1 file to the current format (one transaction); other stores
    /// are always current.
    /// - Returns: Where the store is, and whether it was upgraded (false: already current).
    public static func upgrade(environment: [String: String]) throws(SecItemError) -> (path: String, upgraded: Bool) {
        let store = try open(environment)
        defer { store.close() }
        return (store.storeLocation, try store.upgradeFormat())
    }

    /// Replaces the data key and re-encrypts every row, in one transaction.
    /// - Returns: Where the store is.
    public static func rotateDataKey(environment: [String: String]) throws(SecItemError) -> String {
        let store = try open(environment)
        defer { store.close() }
        try store.rotateDataKey()
        return store.storeLocation
    }
}
