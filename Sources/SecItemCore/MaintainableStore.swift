/// A backend whose store is sealed under keys it holds and keeps a keyed commitment
/// to its whole row set: the encrypted file and PostgreSQL backends.
///
/// `secitem verify`, `rekey` and `upgrade` act through it on whichever of them is
/// selected, and `dump-keychain`, `export` and `migrate` ask it for the rows a search
/// cannot see (deleted, rolled back, replayed, copied in or damaged) before trusting
/// what the searches return. A backend without such a store (the Secret Service,
/// memory) does not adopt it.
public protocol MaintainableStore: SecItemBackend {
    /// Where the store is, for messages: a file's path; a PostgreSQL schema and server
    /// (never a password).
    var storeLocation: String { get }

    /// Checks every row, the store's structure and the row set against the commitment.
    /// - Throws: When the store cannot be read at all (its structure is damaged, its
    ///   commitment does not authenticate, the server is unreachable).
    func verifyStore() throws(SecItemError) -> StoreVerificationReport

    /// Replaces the data key and re-encrypts every row, in one transaction.
    func rotateDataKey() throws(SecItemError)

    /// Protects the store with a new passphrase, key file or other key source (a new data
    /// key and every row re-encrypted), or, with `rewrapOnly` where the store supports it,
    /// the same data key re-wrapped. The new source must give back the key it made before
    /// anything is committed, and the change is one transaction: interrupted at any point,
    /// the store opens with the old key or the new one.
    /// - Throws: `errSecUnimplemented` for `rewrapOnly` on a store that always rotates.
    func rekey(to newKey: NewStoreKey, rewrapOnly: Bool) throws(SecItemError)

    /// Accepts the store as it is now as this host's high-water mark of it: the
    /// operator's word that an older copy was put back on purpose (`secitem
    /// accept-restore`). The witness logs it.
    /// - Parameter note: Who accepts and why, for the log.
    /// - Returns: The mark before (`<generation>:<hex>`, `nil` when none) and now.
    func acceptRestore(note: String) throws(SecItemError) -> (before: String?, now: String)

    /// Upgrades the store to the current format now (its first write would).
    /// - Returns: Whether it was upgraded (false: it already was current).
    func upgradeFormat() throws(SecItemError) -> Bool

    /// Closes the store; later calls fail.
    func close()
}

/// What ``MaintainableStore/verifyStore()`` found.
public struct StoreVerificationReport: Sendable, Hashable {
    /// One line per problem, without contents; empty when all is well.
    public var problems: [String]
    /// `<generation>:<32 hex digits>`: changes with every write. Kept where the store's
    /// attacker cannot write, it reveals a rollback of the whole store to an older
    /// consistent copy (`secitem verify --expect-commitment`). Empty when the store
    /// keeps no commitment (a format-1 file).
    public var commitment: String

    public init(problems: [String], commitment: String) {
        self.problems = problems
        self.commitment = commitment
    }
}

/// The new protection of ``MaintainableStore/rekey(to:rewrapOnly:)``.
public enum NewStoreKey: Sendable {
    /// A new passphrase (the store derives the key from it and keeps no copy).
    case passphrase(Passphrase)
    /// A key file (0600: 32 bytes raw, hex or base64).
    case keyFile(String)
    /// The key source this configuration selects: the one its `key-source` names (or the
    /// first whose setting is present), with that source's own settings. Any source the
    /// sealed store knows (docs/key-sources.md), those added after the two above included.
    case configured(SecItemConfiguration)
}
