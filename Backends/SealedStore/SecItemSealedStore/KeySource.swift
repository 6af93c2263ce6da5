public import Foundation
public import SecItemCore
import Synchronization

/// One way of getting a sealed store's key-encryption key (KEK): a key file, a
/// passphrase through scrypt, a key given in code, the generated key file.
///
/// The key-encryption key only wraps the store's random data key
/// (``KeychainHeader/wrap(_:kek:)``), so every source protects the same rows.
/// A new source is one file: a type adopting this protocol, a static factory on
/// ``SealedStoreKeySource`` for code, and (when a setting selects it) one line in
/// ``KeySources/registered``. `docs/architecture.md`, "Adding a key source", walks it.
///
/// The rules a source keeps:
/// - never prints or throws its secret (``description`` names the kind, and a path at most);
/// - ``existingKey(_:_:)`` checks the header's ``KeyProtection`` before any costly
///   derivation, so a mismatch is `errSecAuthFailed` naming both kinds;
/// - ``released`` drops the secret, keeping what identifies the source;
/// - ``newKey(_:)`` leaves the key the store opens with today readable: `secitem rekey`
///   commits the new wrapping in one transaction after `newKey` returns, so a source
///   that keeps its key outside the store (a sealed blob, a keyring item) writes the new
///   one beside the old, never over it, or an interrupted rekey leaves a store neither
///   key opens;
/// - ``protects`` says honestly what it stops (docs/key-sources.md has the long form).
package protocol KeySource: Sendable, CustomStringConvertible {
    /// The name `SECITEM_KEY_SOURCE` (`key-source` in the config file) selects it by.
    static var name: String { get }
    /// The source a resolved configuration describes, or `nil` when its settings are absent.
    /// - Throws: `errSecParam` when its settings are present but unusable.
    static func fromSettings(_ settings: SecItemConfiguration, _ context: KeySourceContext) throws(SecItemError) -> (any KeySource)?
    /// What `SECITEM_KEY_SOURCE=<name>` needs and lacks, for the error when ``fromSettings(_:_:)`` gives `nil`.
    static var missingSetting: String { get }
    /// The settings it reads (``SecItemSetting``, declared in its own file): the backends
    /// that use key sources declare them with their own (``KeySources/settings``).
    static var settings: [SecItemSettingDeclaration] { get }

    /// What a store protected by this source records in its header.
    var protection: KeyProtection { get }
    /// The key for a new wrapping: a new store, or a rekey (a passphrase gets a fresh salt).
    func newKey(_ context: KeySourceContext) throws(SecItemError) -> KeyEncryptionKey
    /// Undoes ``newKey(_:)`` when the store (or the rekey) it was made for was not
    /// committed: a source that keeps the new key outside the store (a keyring item)
    /// removes what that call created, and never anything else; best effort, never
    /// throws (the caller reports its own failure). The default does nothing: the key
    /// lived in memory or in the store's header only.
    func discardNewKey(_ key: KeyEncryptionKey, _ context: KeySourceContext)
    /// The key that opens an existing store with `header` (`nil`: the key alone, no store yet).
    func existingKey(_ header: KeychainHeader?, _ context: KeySourceContext) throws(SecItemError) -> KeyEncryptionKey
    /// This source without the secret it carries: what a backend keeps once its key is derived.
    var released: any KeySource { get }
    /// One line for `secitem diagnose`, and the key file whose permissions it should check.
    func diagnosis(_ settings: SecItemConfiguration, _ context: KeySourceContext) -> (note: String, keyFile: String?)
    /// One line for `secitem diagnose`: which of disk theft, a leaked backup, another local
    /// user and malware running as the same user this source stops, and which it does not.
    var protects: String { get }
    /// Lets ``SessionKeyCache`` keep the key this source derives (worth it when deriving is
    /// slow): calls `body` with the secret a cached key must be proved against (a
    /// passphrase) and returns its result. The default, `nil`, keeps the source's keys out
    /// of the cache.
    func withSessionCacheProof<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R?
    /// Where this source keeps the stores' high-water marks when it has storage of its
    /// own (a TPM NV counter, the login keyring); `nil` (the default): the state
    /// directory's ``StateDirectoryWitness``. See ``RollbackWitness`` for the rules.
    /// - Parameters:
    ///   - stateDirectory: The state directory's marks (`nil` without one), which
    ///     a source may keep beside its own (``TPM2CounterWitness`` does: the file holds the
    ///     digest, the counter the generation).
    ///   - unlocked: The key the store was opened with and its header (`nil` when the
    ///     caller has none), for a witness that authenticates what it keeps with a key
    ///     derived from the store's (the login keyring's mark item).
    func rollbackWitness(stateDirectory: String?, unlocked: UnlockedStoreKey?) -> (any RollbackWitness)?
}

/// The key-encryption key an open store was unlocked with, and the header it unlocked:
/// what a ``RollbackWitness`` keeping marks in the key source's own storage derives its
/// authentication key from (never stored, never printed).
package struct UnlockedStoreKey: Sendable {
    package var kek: SecretBytes
    package var header: KeychainHeader

    package init(kek: SecretBytes, header: KeychainHeader) {
        self.kek = kek
        self.header = header
    }
}

extension KeySource {
    /// None, unless the source declares the settings it reads.
    package static var settings: [SecItemSettingDeclaration] { [] }
    package func withSessionCacheProof<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R? { nil }
    package func discardNewKey(_ key: KeyEncryptionKey, _ context: KeySourceContext) {}
}

/// The key sources a setting can select, in their order of precedence when none is
/// named (a key file, then a systemd credential, before a passphrase before the
/// generated key file; the TPM only when named).
/// A new source that a setting selects adds one line here.
public enum KeySources {
    /// The sources of this module (a key file, then a systemd credential, before a
    /// passphrase; the TPM only when named; the generated key file last: it always applies).
    private static let builtIn: [any KeySource.Type] = [
        KeyFileKeySource.self, SystemdCredentialKeySource.self, PassphraseKeySource.self, TPM2KeySource.self,
        GeneratedKeyFileSource.self,
    ]

    /// Sources that live in modules above this one and are added with
    /// ``register(_:protection:)``: the Secret Service item and the Flatpak portal,
    /// which need libsecret and GIO, so they live on the Secret Service side (its
    /// package trait) and this module links neither (an app built with `traits: []`
    /// links no GLib). The module `SecItem` registers them before any configuration
    /// is resolved (`SecItemBackendRegistry`).
    private static let added = Mutex<[(source: any KeySource.Type, protection: KeyProtection)]>([])

    /// Adds a key source from another module (once; a second registration of the
    /// same name is ignored). It comes after this module's key file and passphrase and
    /// before the generated key file in the order of precedence.
    package static func register(_ source: any KeySource.Type, protection: KeyProtection) {
        added.withLock { list in
            guard !list.contains(where: { $0.source.name == source.name }) else { return }
            list.append((source, protection))
        }
    }

    /// Every source, in the order of precedence when none is named.
    package static var registered: [any KeySource.Type] {
        builtIn.dropLast() + added.withLock { $0.map(\.source) } + builtIn.suffix(1)
    }


    /// Whether a store's header may record `protection`: a built-in one, or one a source with
    /// a new kind of wrapping added. (An array, not a `Set`: every open asks, and a `Set`'s
    /// first use costs the runtime a scan of every conformance in the program.)
    package static func knows(_ protection: KeyProtection) -> Bool {
        [KeyProtection.key, .passphrase, .tpm2].contains(protection) || added.withLock { $0.contains { $0.protection == protection } }
    }

    /// `key-source`, `SECITEM_KEY_SOURCE`: which source, by name; unset, the first whose
    /// settings are present.
    package static let keySource = SecItemSetting<String>.text(
        "key-source", scope: "key-sources",
        help: "Which key source unlocks the file and PostgreSQL stores, by name (unset: a key file, else a passphrase, else the generated key file).",
        expected: "a key source's name (key-file, systemd-credential, passphrase, tpm2, automatic; with the SecretService trait secret-service, portal)")

    /// Every setting the key sources and the sealed store read (the key cache, the
    /// rollback check): what a backend that keeps sealed rows declares besides its own
    /// (`SecItemBackendProvider.settings`).
    public static var settings: [SecItemSettingDeclaration] {
        [keySource.declaration] + registered.flatMap { $0.settings }
            + [SessionKeyCache.timeoutSetting.declaration, RollbackCheck.setting.declaration]
    }

    /// The source a resolved configuration describes: the one `key-source` names, else
    /// the first registered one whose settings are present.
    /// - Throws: `errSecParam` for an unknown name, or one whose setting is missing.
    package static func resolve(_ settings: SecItemConfiguration, _ context: KeySourceContext) throws(SecItemError)
        -> SealedStoreKeySource
    {
        try PassphraseKeySource.refuseEmptySetting(settings)
        guard let name = try settings.value(keySource) else {
            for source in registered {
                if let found = try source.fromSettings(settings, context) { return SealedStoreKeySource(found) }
            }
            return .automatic
        }
        guard let source = registered.first(where: { $0.name == name }) else {
            let names = registered.map { $0.name }
            throw SecItemError(
                errSecParam,
                "SECITEM_KEY_SOURCE is \"\(name)\"; expected \(names.dropLast().joined(separator: ", ")) or \(names.last ?? "")")
        }
        guard let found = try source.fromSettings(settings, context) else {
            throw SecItemError(errSecParam, "SECITEM_KEY_SOURCE=\(name) but \(source.missingSetting)")
        }
        return SealedStoreKeySource(found)
    }
}

/// What a key source needs to know about the store it unlocks.
package struct KeySourceContext: Sendable {
    /// Names the store in errors (after "the keychain"): its path, or "PostgreSQL schema s (…)".
    package var store: String
    /// The scrypt cost for a new passphrase wrapping.
    package var scryptParameters: ScryptParameters
    /// Where ``SealedStoreKeySource/automatic`` keeps its key; empty when no home is known.
    package var generatedKeyFilePath: String
    /// How long, in seconds, ``SessionKeyCache`` keeps a key a source derived (0: not at all).
    package var keyCacheTimeout: Int

    package init(
        store: String, scryptParameters: ScryptParameters = .default, generatedKeyFilePath: String = "",
        keyCacheTimeout: Int = 0
    ) {
        self.store = store
        self.scryptParameters = scryptParameters
        self.generatedKeyFilePath = generatedKeyFilePath
        self.keyCacheTimeout = keyCacheTimeout
    }
}

/// How a store's data key is wrapped, as its header records it (`kek` in `meta`).
package struct KeyProtection: RawRepresentable, Hashable, Sendable {
    package var rawValue: String
    package init(rawValue: String) { self.rawValue = rawValue }

    /// A 256-bit key (raw, key file or generated key file).
    package static let key = KeyProtection(rawValue: "key")
    /// A passphrase through scrypt (the header holds its parameters and salt).
    package static let passphrase = KeyProtection(rawValue: "passphrase")

    /// How errors name it.
    package var phrase: String {
        switch self {
        case .passphrase: "a passphrase"
        case .key: "a key (raw key or key file)"
        case .tpm2: "a key sealed to a TPM (key source tpm2)"
        default: rawValue
        }
    }
}

/// Where a sealed store's key-encryption key comes from (the file and PostgreSQL
/// backends' `keySource`; `SQLiteBackend.KeySource` is this type).
///
/// The key-encryption key only wraps the store's random data key. Changing it
/// (`SQLiteBackend.rekey(to:rewrapOnly:)`) also replaces the data key and
/// re-encrypts every item, unless `rewrapOnly` asks for the fast re-wrap.
/// Never printed: `description` and `dump` show the kind of source, never a
/// key or passphrase.
public struct SealedStoreKeySource: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package let source: any KeySource

    package init(_ source: any KeySource) { self.source = source }

    /// A 256-bit key given in code (exactly 32 bytes).
    public static func rawKey(_ key: Data) -> SealedStoreKeySource { SealedStoreKeySource(RawKeySource(key: key)) }

    /// A file holding a 256-bit key: 32 raw bytes, 64 hex digits or base64.
    /// Refused when group- or world-accessible or owned by another user, as ssh does.
    public static func keyFile(_ path: String) -> SealedStoreKeySource { SealedStoreKeySource(KeyFileKeySource(path: path)) }

    /// A passphrase, stretched with scrypt (parameters stored with the store).
    ///
    /// The backend reads it once, to derive the key-encryption key when it opens
    /// (or, for a rekey, the new one), and keeps no reference to it afterwards:
    /// once the caller drops its own copies, the ``Passphrase``'s buffer is zeroed.
    /// Read it from a terminal or a file straight into ``Passphrase/init(bytes:)``.
    public static func passphrase(_ passphrase: Passphrase) -> SealedStoreKeySource {
        SealedStoreKeySource(PassphraseKeySource(passphrase: passphrase))
    }

    /// A passphrase given as a `String`, converted at once into a ``Passphrase``.
    ///
    /// The `String` itself is the caller's: Swift gives no way to zero it, so it
    /// stays in memory as long as the caller (and whatever it came from) keeps it.
    public static func passphrase(_ text: String) -> SealedStoreKeySource { .passphrase(Passphrase(text)) }

    /// The embedded default: a random key file generated on first use (the file
    /// backend's `generatedKeyFilePath`). It protects a copy of the database alone,
    /// not against someone who can read the user's files.
    public static var automatic: SealedStoreKeySource { SealedStoreKeySource(GeneratedKeyFileSource()) }

    /// The kind of source: `key-file`, `systemd-credential`, `passphrase`, `tpm2`, `raw-key` or `automatic`
    /// (the names `SECITEM_KEY_SOURCE` takes, where a setting can select it).
    public var kind: String { type(of: source).name }

    /// Whether this is ``automatic``: a key file generated on this host (a store shared
    /// between hosts refuses it).
    package var isGenerated: Bool { source is GeneratedKeyFileSource }

    /// The key file this source reads, if it is one (a systemd credential included;
    /// `nil` for the generated key file).
    public var keyFilePath: String? { (source as? KeyFileKeySource)?.path ?? (source as? SystemdCredentialKeySource)?.path }

    public var description: String { source.description }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// This source without the secret it carries (see ``KeySource/released``).
    package var released: SealedStoreKeySource { SealedStoreKeySource(source.released) }

    /// `secitem diagnose`'s lines on this source: its name and what it protects against
    /// (``KeySource/protects``), and the session key cache where the source uses it.
    package func diagnosisLines(keyCacheTimeout: Int) -> [String] {
        var lines = ["key source: \(kind): \(source.protects)"]
        if source.withSessionCacheProof({ _ in true }) == true {
            lines.append(
                keyCacheTimeout > 0
                    ? "key cache: the derived key stays \(keyCacheTimeout) s in the kernel's user keyring, readable by your "
                        + "user only (\(SessionKeyCache.timeoutSetting.variable); secitem lock drops it)"
                    : "key cache: off (\(SessionKeyCache.timeoutSetting.variable)=0): every process runs scrypt")
        }
        return lines
    }
}

extension KeySource {
    /// Throws `errSecAuthFailed` when `header` says the store is protected otherwise.
    package func expect(_ header: KeychainHeader?, _ context: KeySourceContext, _ what: String) throws(SecItemError) {
        guard let header, header.protection != protection else { return }
        throw SecItemError(
            errSecAuthFailed, "the keychain \(context.store) is protected by \(header.protection.phrase), but \(what) was given")
    }
}
