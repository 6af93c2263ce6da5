internal import CSecItemLibsecret
public import SecItemCore
public import SecItemSealedStore

/// Flatpak's Secret portal keys the store (`SECITEM_KEY_SOURCE=portal`, and the
/// automatic choice inside a sandbox): the per-application secret that
/// `org.freedesktop.portal.Secret.RetrieveSecret` writes into a pipe, as libsecret's
/// file backend uses it for sandboxed apps.
///
/// libsecret stretches that secret with PBKDF2 (100,000 rounds, a salt in its file);
/// the secret is 64 random bytes, so stretching adds nothing, and this source takes
/// HKDF-SHA256 of it with a random 32-byte salt kept in the store's header (`meta`
/// row `kek_portal_salt`): a new salt, a new key, on every new store and rekey.
///
/// Inside a sandbox with no setting naming a source, a new store is protected by the
/// portal; when the portal is missing or refuses, creating the store fails with that
/// reason (`errSecNotAvailable`, `errSecAuthFailed`), never a key file written beside
/// the data unasked: `SECITEM_KEY_SOURCE=automatic` asks for that. A store created
/// earlier with the generated key file still opens with it.
struct PortalKeySource: KeySource {
    static let name = "portal"
    static let missingSetting =
        "this process is not inside a Flatpak sandbox (no /.flatpak-info, FLATPAK_ID unset; "
        + "\(FlatpakSandbox.infoVariable) names another info file)"
    static let protectionKind = KeyProtection(rawValue: "portal")
    /// The header row holding the HKDF salt.
    static let saltParameter = KeychainHeader.parameterPrefix + "portal_salt"
    /// HKDF's info string: what the derived key is for.
    static let info = "secitem file keychain: key-encryption key from the Flatpak Secret portal"

    var sandbox: FlatpakSandbox
    /// Whether `SECITEM_KEY_SOURCE=portal` named it (else: the automatic choice in a sandbox).
    var named: Bool
    /// The bound on asking the portal (it may show a dialog): the Secret Service's prompt bound.
    var timeout: Duration

    var protection: KeyProtection { Self.protectionKind }
    var description: String { "Flatpak Secret portal (\(sandbox.applicationID ?? "unnamed application"))" }
    var released: any KeySource { self }
    var protects: String {
        "stops a leaked backup of the app's data, other local users and other sandboxed apps; disk theft only as far as "
            + "the login password (the secret is in the login keyring); not malware running as you outside a sandbox"
    }

    static func fromSettings(_ settings: SecItemConfiguration, _ context: KeySourceContext) -> (any KeySource)? {
        guard let sandbox = FlatpakSandbox.detect(settings.environment) else { return nil }
        let named = settings.keySource == name
        // Unnamed, it stands in for the generated key file, so only where that would
        // apply (a file store; not a PostgreSQL schema that every host shares).
        guard named || !context.generatedKeyFilePath.isEmpty else { return nil }
        let timeout = SecretServiceBackend.Configuration(settings).promptTimeout
        return PortalKeySource(sandbox: sandbox, named: named, timeout: timeout)
    }

    func newKey(_ context: KeySourceContext) throws(SecItemError) -> KeyEncryptionKey {
        let salt = try Crypto.randomBytes(32)
        return KeyEncryptionKey(
            kek: try derive(salt, context), protection: protection, parameters: [Self.saltParameter: .bytes(salt)])
    }

    func existingKey(_ header: KeychainHeader?, _ context: KeySourceContext) throws(SecItemError) -> KeyEncryptionKey {
        // The automatic choice opens a store made before with the generated key file as before.
        if !named, let header, header.protection == .key {
            return try SealedStoreKeySource.automatic.source.existingKey(header, context)
        }
        try expect(header, context, "the Flatpak Secret portal key source")
        guard let salt = header?.parameters[Self.saltParameter]?.bytes, salt.count >= 16 else {
            throw SecItemError(
                errSecInvalidKeychain,
                "the key source portal: the keychain \(context.store) lacks its salt (meta row \(Self.saltParameter))")
        }
        return KeyEncryptionKey(
            kek: try derive(salt, context), protection: protection, parameters: [Self.saltParameter: .bytes(salt)])
    }

    func diagnosis(_ settings: SecItemConfiguration, _ context: KeySourceContext) -> (note: String, keyFile: String?) {
        let how = named ? "SECITEM_KEY_SOURCE=portal" : "chosen automatically inside the \(sandbox.description)"
        let state: String
        do throws(SecItemError) {
            state = "the portal answers (Secret interface version \(try SecretPortal.version(timeout: .seconds(5))))"
        } catch {
            state = "the portal does not answer: \(error.detail ?? error.message); a new keychain cannot be created with this source"
        }
        return (
            "key: portal (\(how)): the Flatpak Secret portal's per-application secret, HKDF with a salt in the header; "
                + "\(state)", nil
        )
    }

    /// The portal's secret, through HKDF with `salt`.
    private func derive(_ salt: [UInt8], _ context: KeySourceContext) throws(SecItemError) -> SecretBytes {
        let secret: SecretBytes
        do throws(SecItemError) {
            secret = try SecretPortal.retrieveSecret(timeout: timeout)
        } catch {
            let advice =
                named
                ? "" : "; SECITEM_KEY_SOURCE=automatic keeps a generated key file beside the data instead (it protects a copied database alone)"
            throw SecItemError(
                error.status,
                "the key source portal (\(sandbox.description), keychain \(context.store)): \(error.detail ?? error.message)\(advice)")
        }
        return try SecretPortal.key(from: secret, salt: salt)
    }
}

extension SealedStoreKeySource {
    /// The Flatpak Secret portal's per-application secret, through HKDF with a salt in
    /// the store's header (`SECITEM_KEY_SOURCE=portal`). Only inside a Flatpak sandbox.
    /// - Throws: `errSecParam` outside a sandbox (`/.flatpak-info`, `FLATPAK_ID`;
    ///   `SECITEM_FLATPAK_INFO` names another info file).
    public static func flatpakPortal(
        environment: [String: String], timeout: Duration = .seconds(120)
    ) throws(SecItemError) -> SealedStoreKeySource {
        DesktopKeySources.register()
        guard let sandbox = FlatpakSandbox.detect(environment) else {
            throw SecItemError(errSecParam, "the portal key source: \(PortalKeySource.missingSetting)")
        }
        return SealedStoreKeySource(PortalKeySource(sandbox: sandbox, named: true, timeout: timeout))
    }
}

extension SecretPortal {
    /// The secret the portal wrote into the pipe `fd` (its read end), read to its end
    /// (at most ``capacity`` bytes) within `timeout`: the step of
    /// ``retrieveSecret(timeout:)`` after the portal answered, with the same errors.
    package static func readSecret(from fd: Int32, timeout: Duration) throws(SecItemError) -> SecretBytes {
        var buffer = [UInt8](repeating: 0, count: capacity)
        defer { wipe(&buffer) }
        var length: gsize = 0
        let result = buffer.withUnsafeMutableBufferPointer { out in
            csecitem_portal_read_secret(fd, out.baseAddress, gsize(capacity), timeout.milliseconds, &length)
        }
        return try outcome(result, buffer, Int(length), response: 0, error: nil, timeout: timeout)
    }

    /// The key-encryption key of the portal key source: HKDF-SHA256 of the portal's
    /// secret with `salt` (the store's).
    /// - Throws: `errSecAuthFailed` for a secret under 16 bytes (too short to be a key).
    package static func key(from secret: SecretBytes, salt: [UInt8]) throws(SecItemError) -> SecretBytes {
        guard secret.count >= 16 else {
            throw SecItemError(
                errSecAuthFailed, "the key source portal: the Flatpak Secret portal gave a \(secret.count)-byte secret (too short to be a key)")
        }
        return try Crypto.hkdf(secret, salt: salt, info: PortalKeySource.info)
    }
}
