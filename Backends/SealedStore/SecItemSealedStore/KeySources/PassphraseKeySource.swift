import SecItemCore

/// A passphrase, stretched with scrypt; the store's header keeps the parameters
/// and salt. Selected by `SECITEM_PASSPHRASE` or `passphrase-file` (`passphrase`).
struct PassphraseKeySource: KeySource {
    static let name = "passphrase"
    static let missingSetting = "\(passphraseSetting.variable) is not set"

    /// `SECITEM_PASSPHRASE` (never the config file).
    static let passphraseSetting = SecItemSetting<Passphrase>.secret(
        "passphrase", scope: "key-sources",
        help: "The passphrase of the file and PostgreSQL stores, stretched with scrypt (set but empty is refused).")
    /// `passphrase-file`, `SECITEM_PASSPHRASE_FILE`.
    static let passphraseFile = SecItemSetting<String>.text(
        "passphrase-file", scope: "key-sources",
        help: "A file holding the passphrase (mode 0600, yours), read when SECITEM_PASSPHRASE is not set.", expected: "path")
    static var settings: [SecItemSettingDeclaration] { [passphraseSetting.declaration, passphraseFile.declaration] }

    /// The passphrase given (code, `SECITEM_PASSPHRASE`), else read from the passphrase
    /// file, with where it came from.
    /// - Throws: what reading the passphrase file throws (a file others can read is refused).
    static func given(_ settings: SecItemConfiguration) throws(SecItemError) -> (passphrase: Passphrase, origin: String)? {
        if let (passphrase, origin) = try settings.lookup(passphraseSetting) { return (passphrase, "\(origin)") }
        guard let path = try settings.value(passphraseFile) else { return nil }
        return (try PrivateFile.readPassphrase(path), "the passphrase file")
    }

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

    static func fromSettings(_ settings: SecItemConfiguration, _ context: KeySourceContext) throws(SecItemError) -> (any KeySource)? {
        try given(settings).map { PassphraseKeySource(passphrase: $0.passphrase) }
    }

    /// An empty passphrase setting is an error even when another source wins: it is
    /// never what the operator meant.
    static func refuseEmptySetting(_ settings: SecItemConfiguration) throws(SecItemError) {
        guard let (given, source) = try given(settings), given.isEmpty else { return }
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
        let file = (try? settings.lookup(Self.passphraseSetting)) == nil ? (try? settings.value(Self.passphraseFile)) ?? nil : nil
        return ("key: passphrase from \(file.map { "the passphrase file \($0)" } ?? Self.passphraseSetting.variable)", nil)
    }

    /// An empty passphrase is refused before scrypt runs: it is never what the
    /// operator meant, and it is what a backend's configuration holds once the real
    /// one was released.
    private func refuseEmpty() throws(SecItemError) {
        guard passphrase.isEmpty else { return }
        throw SecItemError(errSecParam, "the passphrase is empty")
    }
}
