import SecItemCore

/// A passphrase, stretched with scrypt; the store's header keeps the parameters
/// and salt. Selected by `SECITEM_PASSPHRASE` or `passphrase-file` (`passphrase`).
struct PassphraseKeySource: KeySource {
    static let name = "passphrase"
    static let missingSetting = "SECITEM_PASSPHRASE is not set"

    var passphrase: Passphrase
    var protection: KeyProtection { .passphrase }
    var description: String { "passphrase (redacted)" }
    var released: any KeySource { PassphraseKeySource(passphrase: Passphrase(bytes: EmptyCollection<UInt8>())) }
    var protects: String {
        "stops disk theft and a leaked backup as far as the passphrase is strong and kept off that disk "
            + "(not in a passphrase file beside the store), and other local users; not malware running as you"
    }

    /// scrypt is slow by design: the session cache keeps the derived key, proved against
    /// the passphrase (none for the empty passphrase a released source holds).
    func withSessionCacheProof<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R? {
        passphrase.isEmpty ? nil : passphrase.withUTF8(body)
    }

    static func fromSettings(_ settings: SecItemConfiguration, _ context: KeySourceContext) -> (any KeySource)? {
        settings.passphrase.map { PassphraseKeySource(passphrase: $0) }
    }

    /// An empty passphrase setting is an error even when another source wins: it is
    /// never what the operator meant.
    static func refuseEmptySetting(_ settings: SecItemConfiguration) throws(SecItemError) {
        guard let given = settings.passphrase, given.isEmpty else { return }
        let source = (settings.setting(\.passphrase)?.origin).map { "\($0)" } ?? "the passphrase file"
        throw SecItemError(
            errSecParam,
            "the passphrase (\(source)) is empty; give the passphrase, or unset it to use a key file or the generated key file")
    }

    func newKey(_ context: KeySourceContext) throws(SecItemError) -> KeyEncryptionKey {
        try refuseEmpty()
        let salt = try Crypto.randomBytes(16)
        let params = context.scryptParameters
        let kek = try Crypto.scrypt(passphrase: passphrase, salt: salt, parameters: params)
        return KeyEncryptionKey(kek: kek, protection: .passphrase, scrypt: params, salt: salt)
    }

    func existingKey(_ header: KeychainHeader?, _ context: KeySourceContext) throws(SecItemError) -> KeyEncryptionKey {
        try refuseEmpty()
        try expect(header, context, "a passphrase")
        guard let header, let params = header.scrypt, let salt = header.salt else {
            throw SecItemError(errSecInvalidKeychain, "\(context.store) lacks its scrypt parameters")
        }
        let kek = try Crypto.scrypt(passphrase: passphrase, salt: salt, parameters: params)
        return KeyEncryptionKey(kek: kek, protection: .passphrase, scrypt: params, salt: salt)
    }

    func diagnosis(_ settings: SecItemConfiguration, _ context: KeySourceContext) -> (note: String, keyFile: String?) {
        ("key: passphrase from \(settings.passphraseFile.map { "the passphrase file \($0)" } ?? SecItemConfiguration.Variable.passphrase)", nil)
    }

    /// An empty passphrase is refused before scrypt runs: it is never what the
    /// operator meant, and it is what a backend's configuration holds once the real
    /// one was released.
    private func refuseEmpty() throws(SecItemError) {
        guard passphrase.isEmpty else { return }
        throw SecItemError(errSecParam, "the passphrase is empty")
    }
}
