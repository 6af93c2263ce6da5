package import SecItemCore

/// A key-encryption key resolved from a ``KeySource``, with the header fields a
/// new wrapping needs.
package struct KeyEncryptionKey {
    package var kek: SecretBytes
    package var protection: KeyProtection
    package var scrypt: ScryptParameters?
    package var salt: [UInt8]?
    /// The key source's own header values (``KeychainHeader/parameters``: `kek_*` rows).
    package var parameters: [String: KeychainHeader.MetaValue]

    package init(
        kek: SecretBytes, protection: KeyProtection, scrypt: ScryptParameters? = nil, salt: [UInt8]? = nil,
        parameters: [String: KeychainHeader.MetaValue] = [:]
    ) {
        self.kek = kek
        self.protection = protection
        self.scrypt = scrypt
        self.salt = salt
        self.parameters = parameters
    }

    /// Resolves a source for a new wrapping (new store, or rekey): a passphrase gets a fresh salt.
    package static func forNewWrapping(_ source: SealedStoreKeySource, _ context: KeySourceContext)
        throws(SecItemError) -> KeyEncryptionKey
    {
        try source.source.newKey(context)
    }

    /// Undoes ``forNewWrapping(_:_:)`` (or ``forRekey(_:_:format:)``) when what the key
    /// was made for was not committed: the source removes what it stored outside the
    /// store for it (``KeySource/discardNewKey(_:_:)``). Call it only when the store
    /// certainly does not use the key (before its commit, or when another creator won).
    package static func discard(_ key: KeyEncryptionKey, _ source: SealedStoreKeySource, _ context: KeySourceContext) {
        source.source.discardNewKey(key, context)
    }

    /// Resolves a source for a rekey, and checks that it gives the same key back the way
    /// opening the store will ask for it (``KeySource/existingKey(_:_:)`` with the header
    /// the rekey is about to write: a passphrase runs scrypt again, a sealed key is
    /// unsealed, a stored one read back), before anything is committed. A source that
    /// cannot reproduce its key fails here, and the store keeps its old key.
    /// - Throws: What the source throws; `errSecAuthFailed` when the keys differ.
    package static func forRekey(_ source: SealedStoreKeySource, _ context: KeySourceContext, format: Int64)
        throws(SecItemError) -> KeyEncryptionKey
    {
        let made = try source.source.newKey(context)
        var header = KeychainHeader(protection: made.protection, wrappedDataKey: [], epoch: 0, format: format)
        header.protect(with: made)
        var unhurried = context
        unhurried.keyCacheTimeout = 0  // the key must come from the source itself
        let again: KeyEncryptionKey
        do throws(SecItemError) {
            again = try source.source.existingKey(header, unhurried)
        } catch {
            source.source.discardNewKey(made, context)
            throw error
        }
        guard again.kek.equals(made.kek), again.protection == made.protection else {
            source.source.discardNewKey(made, context)
            throw SecItemError(
                errSecAuthFailed,
                "the new key source (\(source)) did not give back the key it made; the keychain \(context.store) keeps its old key")
        }
        return made
    }

    /// Resolves a source to open an existing store with `header` (nil: a key source only),
    /// through the session key cache when the context turns it on and the source allows it.
    package static func forExisting(
        _ source: SealedStoreKeySource, _ context: KeySourceContext, header: KeychainHeader?
    ) throws(SecItemError) -> KeyEncryptionKey {
        guard let header, context.keyCacheTimeout > 0, header.protection == source.source.protection else {
            return try source.source.existingKey(header, context)
        }
        return try SessionKeyCache.existingKey(source.source, header, context)
    }
}
