package import SecItemCore

/// A key-encryption key resolved from a ``SQLiteBackend/KeySource``, with the
/// header fields a new wrapping needs.
package struct KeyEncryptionKey {
    package var kek: SecretBytes
    package var protection: KeychainHeader.Protection
    package var scrypt: ScryptParameters?
    package var salt: [UInt8]?

    /// Resolves a source for a new wrapping (new file, or rekey): a passphrase gets a fresh salt.
    package static func forNewWrapping(_ source: SQLiteBackend.KeySource, _ configuration: SQLiteBackend.Configuration)
        throws(SecItemError) -> KeyEncryptionKey
    {
        switch source {
        case .passphrase(let passphrase):
            try refuseEmpty(passphrase)
            let salt = try Crypto.randomBytes(16)
            let params = configuration.scryptParameters
            let kek = try Crypto.scrypt(passphrase: passphrase, salt: salt, parameters: params)
            return KeyEncryptionKey(kek: kek, protection: .passphrase, scrypt: params, salt: salt)
        case .automatic:
            guard !configuration.generatedKeyFilePath.isEmpty else {
                throw SecItemError(errSecNotAvailable, "no place for the generated key file: set XDG_CONFIG_HOME or HOME")
            }
            return KeyEncryptionKey(kek: try KeyFile.readOrGenerate(configuration.generatedKeyFilePath), protection: .key)
        default:
            return try forExisting(source, configuration, header: nil)
        }
    }

    /// Resolves a source to open an existing file with `header` (nil: a key source only).
    package static func forExisting(
        _ source: SQLiteBackend.KeySource, _ configuration: SQLiteBackend.Configuration, header: KeychainHeader?
    ) throws(SecItemError) -> KeyEncryptionKey {
        switch source {
        case .rawKey(let data):
            guard data.count == Crypto.keyLength else {
                throw SecItemError(errSecParam, "a raw key must be 32 bytes, not \(data.count)")
            }
            try expect(.key, header, configuration, "a raw key")
            return KeyEncryptionKey(kek: SecretBytes(copying: data), protection: .key)
        case .keyFile(let path):
            let kek = try KeyFile.read(path)
            try expect(.key, header, configuration, "a key file")
            return KeyEncryptionKey(kek: kek, protection: .key)
        case .automatic:
            let path = configuration.generatedKeyFilePath
            guard !path.isEmpty, FileSystem.exists(path) else {
                throw SecItemError(
                    errSecNotAvailable,
                    "the keychain \(configuration.path) exists but its generated key file "
                        + "\(path.isEmpty ? "(no XDG_CONFIG_HOME or HOME)" : path) is missing")
            }
            let kek = try KeyFile.read(path)
            try expect(.key, header, configuration, "the generated key file")
            return KeyEncryptionKey(kek: kek, protection: .key)
        case .passphrase(let passphrase):
            try refuseEmpty(passphrase)
            try expect(.passphrase, header, configuration, "a passphrase")
            guard let header, let params = header.scrypt, let salt = header.salt else {
                throw SecItemError(errSecInvalidKeychain, "\(configuration.path) lacks its scrypt parameters")
            }
            let kek = try Crypto.scrypt(passphrase: passphrase, salt: salt, parameters: params)
            return KeyEncryptionKey(kek: kek, protection: .passphrase, scrypt: params, salt: salt)
        }
    }

    /// An empty passphrase is refused before scrypt runs: it is never what the
    /// operator meant, and it is what a backend's ``SQLiteBackend/configuration``
    /// holds once the real one was released.
    private static func refuseEmpty(_ passphrase: Passphrase) throws(SecItemError) {
        guard passphrase.isEmpty else { return }
        throw SecItemError(errSecParam, "the passphrase is empty")
    }

    private static func expect(
        _ protection: KeychainHeader.Protection, _ header: KeychainHeader?, _ configuration: SQLiteBackend.Configuration,
        _ what: String
    ) throws(SecItemError) {
        guard let header, header.protection != protection else { return }
        let actual = header.protection == .passphrase ? "a passphrase" : "a key (raw key or key file)"
        throw SecItemError(
            errSecAuthFailed, "the keychain \(configuration.path) is protected by \(actual), but \(what) was given")
    }
}
