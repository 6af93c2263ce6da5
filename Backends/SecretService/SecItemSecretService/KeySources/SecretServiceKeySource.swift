import Foundation
import SecItemCore
public import SecItemSealedStore

/// The desktop keyring holds the key (`SECITEM_KEY_SOURCE=secret-service`): the file
/// store's key-encryption key is the secret of one Secret Service item in the login
/// (`default`) collection, so the user's login unlocks the store and a disk or backup
/// without the login keyring reveals nothing.
///
/// The item has its own `xdg:schema` (``schema``) and the attribute `store`: a random
/// id recorded in the store's header (`meta` row `kek_store`), so a copied or moved
/// file finds its key and two stores never share one. It is created only when a store
/// is created (or rekeyed to this source); opening a store whose item is gone is
/// `errSecNotAvailable`, never a new key. A locked keyring is
/// `errSecInteractionNotAllowed` (no prompt), no Secret Service `errSecNotAvailable`;
/// every message names this source, and nothing is written when it fails.
struct SecretServiceKeySource: KeySource {
    static let name = "secret-service"
    static let missingSetting = "the Secret Service key source is selected by name only"
    static let protectionKind = KeyProtection(rawValue: "secret-service")
    /// The key item's `xdg:schema`.
    static let schema = "org.secitem.KeychainKey"
    /// The header row naming the key item (its `store` attribute).
    static let storeParameter = KeychainHeader.parameterPrefix + "store"

    /// The bound on each D-Bus call (`SECITEM_SECRET_SERVICE_TIMEOUT`); the collection
    /// is always the default one (the `default` alias, else `login`).
    var service: SecretServiceBackend.Configuration

    var protection: KeyProtection { Self.protectionKind }
    var description: String { "Secret Service key item (\(Self.schema))" }
    var released: any KeySource { self }
    var protects: String {
        "stops disk theft and a leaked backup as far as the login password is strong (the key is in the login keyring), "
            + "and other local users; not malware running as you while the keyring is unlocked"
    }

    static func fromSettings(_ settings: SecItemConfiguration, _ context: KeySourceContext) -> (any KeySource)? {
        guard settings.keySource == name else { return nil }
        return SecretServiceKeySource(service: Self.service(settings))
    }

    /// The Secret Service settings this source uses: the timeout, never a namespace or
    /// another collection (the key lives where the login unlocks it).
    static func service(_ settings: SecItemConfiguration) -> SecretServiceBackend.Configuration {
        var service = SecretServiceBackend.Configuration(settings)
        service.collection = nil
        service.namespace = nil
        return service
    }

    func newKey(_ context: KeySourceContext) throws(SecItemError) -> KeyEncryptionKey {
        let storeID = try Crypto.randomBytes(16).map { String(format: "%02x", $0) }.joined()
        let kek = try SecretBytes(random: Crypto.keyLength)
        try withSession(context) { (session) throws(SecItemError) in
            if try session.collectionLocked() { throw locked(context, session) }
            var secret = kek.withBytes { Data(bytes: $0, count: $1) }
            defer { secret.resetBytes(in: 0..<secret.count) }
            _ = try session.create(
                attributes: [ItemCodec.Reserved.schema: Self.schema, "store": storeID, "path": context.store],
                label: "secitem keychain key: \(context.store)", data: secret)
        }
        return KeyEncryptionKey(kek: kek, protection: protection, parameters: [Self.storeParameter: .text(storeID)])
    }

    /// Deletes the key item ``newKey(_:)`` created for a store that was not created (or a
    /// rekey that was not committed): the one item with this schema, the new random store id
    /// and the store's path; never another.
    func discardNewKey(_ key: KeyEncryptionKey, _ context: KeySourceContext) {
        guard let storeID = key.parameters[Self.storeParameter]?.text, !storeID.isEmpty else { return }
        try? withSession(context) { (session) throws(SecItemError) in
            for path in try session.search([ItemCodec.Reserved.schema: Self.schema, "store": storeID, "path": context.store]) {
                _ = try session.delete(path)
            }
        }
    }

    func existingKey(_ header: KeychainHeader?, _ context: KeySourceContext) throws(SecItemError) -> KeyEncryptionKey {
        try expect(header, context, "the Secret Service key source")
        guard let storeID = header?.parameters[Self.storeParameter]?.text, !storeID.isEmpty else {
            throw SecItemError(
                errSecInvalidKeychain,
                "the key source secret-service: the keychain \(context.store) names no Secret Service key item (meta row \(Self.storeParameter))")
        }
        let kek = try withSession(context) { (session) throws(SecItemError) -> SecretBytes in
            let found = try session.search([ItemCodec.Reserved.schema: Self.schema, "store": storeID], checkingLock: true)
            if found.locked { throw locked(context, session) }
            if let failure = found.lockFailure { throw failure }
            guard !found.paths.isEmpty else {
                throw SecItemError(
                    errSecNotAvailable,
                    "the key source secret-service: the collection \(session.collectionPath) has no key item for the keychain "
                        + "\(context.store) (store \(storeID)): it was deleted, or this is another keyring; "
                        + "the keychain is left as it is")
            }
            var secrets = try session.secrets(found.paths)
            defer {
                for path in secrets.keys { secrets[path]!.resetBytes(in: 0..<secrets[path]!.count) }
            }
            guard let secret = found.paths.lazy.compactMap({ secrets[$0] }).first(where: { $0.count == Crypto.keyLength }) else {
                throw SecItemError(
                    errSecAuthFailed,
                    "the key source secret-service: the key item for the keychain \(context.store) holds no 32-byte key")
            }
            return SecretBytes(copying: secret)
        }
        return KeyEncryptionKey(kek: kek, protection: protection, parameters: [Self.storeParameter: .text(storeID)])
    }

    func diagnosis(_ settings: SecItemConfiguration, _ context: KeySourceContext) -> (note: String, keyFile: String?) {
        (
            "key: secret-service, an item (\(Self.schema)) in the login keyring holds the key-encryption key", nil
        )
    }

    /// Runs `body` on a new session with the default collection; errors name this source.
    private func withSession<R>(
        _ context: KeySourceContext, _ body: (SecretServiceSession) throws(SecItemError) -> R
    ) throws(SecItemError) -> R {
        do throws(SecItemError) {
            var progress = SecretServiceSession.OpenProgress()
            let session = try SecretServiceSession.open(service, progress: &progress)
            return try body(session)
        } catch where !(error.detail ?? "").hasPrefix("the key source secret-service") {
            throw SecItemError(
                error.status,
                "the key source secret-service (for the keychain \(context.store)): \(error.detail ?? error.message)")
        }
    }

    private func locked(_ context: KeySourceContext, _ session: SecretServiceSession) -> SecItemError {
        SecItemError(
            errSecInteractionNotAllowed,
            "the key source secret-service: the keyring holding the key of the keychain \(context.store) "
                + "(\(session.collectionPath)) is locked; unlock it (log in) and try again")
    }
}

extension SealedStoreKeySource {
    /// The key-encryption key as one item in the login keyring (the Secret Service's
    /// `default` collection), created with the store; `SECITEM_KEY_SOURCE=secret-service`.
    ///
    /// A new store gets a random key stored as the secret of an item with the schema
    /// `org.secitem.KeychainKey`; reopening it needs that item: a locked keyring is
    /// `errSecInteractionNotAllowed`, a missing item `errSecNotAvailable` (never a new key).
    /// - Parameter timeout: The bound on each D-Bus call.
    public static func secretServiceItem(timeout: Duration = .seconds(5)) -> SealedStoreKeySource {
        DesktopKeySources.register()
        return SealedStoreKeySource(SecretServiceKeySource(service: SecretServiceBackend.Configuration(timeout: timeout)))
    }
}
