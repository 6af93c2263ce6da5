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

    /// Resolves a source to open an existing store with `header` (nil: a key source only).
    package static func forExisting(
        _ source: SealedStoreKeySource, _ context: KeySourceContext, header: KeychainHeader?
    ) throws(SecItemError) -> KeyEncryptionKey {
        try source.source.existingKey(header, context)
    }
}
