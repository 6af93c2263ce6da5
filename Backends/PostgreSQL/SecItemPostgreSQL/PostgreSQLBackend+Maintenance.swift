public import SecItemCore
import SecItemSealedStore

/// The shared keychain as `secitem verify`, `rekey` and `upgrade` maintain it.
extension PostgreSQLBackend: MaintainableStore {
    /// `PostgreSQL schema NAME (host=… dbname=… user=…)`, without the password.
    public var storeLocation: String { configuration.keyContext.store }

    /// ``verify()``, with the commitment value that `--expect-commitment` compares.
    public func verifyStore() throws(SecItemError) -> StoreVerificationReport {
        try withSession { (s: PostgreSQLSession) throws(SecItemError) in
            try s.call(during: "verifying") { () throws(SecItemError) -> StoreVerificationReport in
                let (problems, commitment) = try s.verify()
                return StoreVerificationReport(problems: problems, commitment: commitment)
            }
        }
    }

    /// ``rekey(to:)``; a rekey here always replaces the data key, so `rewrapOnly` is refused.
    public func rekey(to newKey: NewStoreKey, rewrapOnly: Bool) throws(SecItemError) {
        if rewrapOnly {
            throw SecItemError(
                errSecUnimplemented,
                "a PostgreSQL keychain is always rekeyed with a new data key (every row re-encrypted); --rewrap-only is for the file keychain")
        }
        switch newKey {
        case .passphrase(let passphrase): try rekey(to: KeySource.passphrase(passphrase))
        case .keyFile(let path): try rekey(to: KeySource.keyFile(path))
        case .configured(let settings):
            let source = try KeySources.resolve(settings, configuration.keyContext)
            if source.isGenerated {
                throw SecItemError(
                    errSecParam, "a PostgreSQL keychain needs a key every host shares, not a key file generated on this host")
            }
            try rekey(to: source)
        }
    }

    /// Accepts the store as it is now as this host's high-water mark, after a deliberate
    /// restore of an older dump (`secitem accept-restore`); other hosts that saw a newer
    /// state run it too. Logged by the witness (``StateDirectoryWitness``: `accepted.log`).
    /// - Returns: The mark before (`nil` when there was none) and now.
    /// - Throws: `errSecParam` when the check is off; `errSecIO` when the mark cannot be written.
    public func acceptRestore(note: String) throws(SecItemError) -> (before: String?, now: String) {
        try withSession { (s: PostgreSQLSession) throws(SecItemError) in
            try s.call(during: "accepting a restore") { () throws(SecItemError) -> (before: String?, now: String) in
                let state = try s.currentState()
                let before = try s.rollback.accept(state, note: note)
                return (before?.description, state.description)
            }
        }
    }

    /// PostgreSQL keychains are created in the current format: nothing to upgrade.
    public func upgradeFormat() throws(SecItemError) -> Bool { false }
}
