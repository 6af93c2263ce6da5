public import Foundation
public import SecItemCore
// Its key sources and scrypt parameters are part of this backend's configuration.
@_exported public import SecItemSealedStore
import Glibc

extension SQLiteBackend {
    /// Where the key-encryption key comes from: a key file, a passphrase, a raw
    /// key or the generated key file (``SealedStoreKeySource``, shared with the
    /// PostgreSQL backend).
    public typealias KeySource = SealedStoreKeySource

    /// Where the file is and how it is unlocked.
    public struct Configuration: Sendable, CustomStringConvertible {
        /// The SQLite file.
        public var path: String
        /// Where the key-encryption key comes from.
        public var keySource: KeySource
        /// The key file ``KeySource/automatic`` uses (created 0600 on first use).
        public var generatedKeyFilePath: String
        /// The scrypt cost used when a passphrase-protected file is created or rekeyed.
        public var scryptParameters: ScryptParameters
        /// How long a call waits for another connection's write lock, in milliseconds.
        public var busyTimeoutMilliseconds: Int
        /// Up to how many items a connection compares every index entry with its row
        /// before its first write (`PRAGMA integrity_check` of the items table: about 1 ms
        /// per 300 items); default 10,000. Reads need no such check: each row they return
        /// is compared with the query. Larger stores get a check of each index's root alone
        /// (on open), which catches a swapped `rootpage` but not a single overwritten index
        /// page; ``SQLiteBackend/verify()`` always runs the full check (docs/file-format.md,
        /// "The b-trees agree with each other").
        public var openIntegrityCheckItemLimit: Int = 10_000
        /// How long, in seconds, the key derived from a passphrase stays in the kernel's
        /// session key cache, so the next process to open the file skips scrypt
        /// (docs/key-sources.md, "The session key cache"). 0, the default for a
        /// configuration made in code, keeps nothing; from the process configuration
        /// (`SECITEM_KEY_CACHE_TIMEOUT`, `key-cache-timeout`) the default is 300.
        public var keyCacheTimeout: Int = 0
        /// What the file's rollback evidence does (docs/file-format.md, "Rollback evidence"):
        /// by default (``RollbackCheckMode/enforce``) a file put back from an older copy
        /// fails every call with `errSecDecode` once this host has seen a newer state of it.
        /// From `SECITEM_ROLLBACK_CHECK` (`on`, `report`, `off`) unless given.
        public var rollbackCheck: RollbackCheckMode
        /// Where this host keeps the file's high-water mark: `nil` (the default) means the
        /// key source's own storage when it has one, else ``StateDirectoryWitness`` in
        /// `$XDG_STATE_HOME/secitem/high-water` (`~/.local/state/…`).
        public var rollbackWitness: (any RollbackWitness)?
        /// How many extra SQLite connections lookups may use when several threads
        /// read at once (default 32; 0: every call shares the one connection). The
        /// file's WAL lets them read beside the one writer, so a lookup never waits
        /// for another thread's commit. Each is opened on first need, only when that
        /// many threads read at once, from the keys the backend already holds, without
        /// repeating the open's checks. Threads beyond this number queue for a
        /// connection, which costs a kernel hand-off per lookup.
        public var readConnections: Int = 32

        /// - Parameters:
        ///   - path: The SQLite file; created (0600, in a 0700 directory) when missing.
        ///   - keySource: Where the key-encryption key comes from.
        ///   - generatedKeyFilePath: The key file for ``KeySource/automatic``; by default
        ///     `$XDG_CONFIG_HOME/secitem/keychain.key` (`~/.config/…`).
        ///   - scryptParameters: The scrypt cost for new passphrase protection.
        ///   - rollbackCheck: What the rollback evidence does; by default what
        ///     `SECITEM_ROLLBACK_CHECK` says (`on` when unset or not understood).
        ///   - rollbackWitness: Where the high-water mark is kept (see ``rollbackWitness``).
        public init(
            path: String, keySource: KeySource, generatedKeyFilePath: String? = nil,
            scryptParameters: ScryptParameters = .default, busyTimeoutMilliseconds: Int = 30_000,
            rollbackCheck: RollbackCheckMode? = nil, rollbackWitness: (any RollbackWitness)? = nil
        ) {
            self.path = path
            self.keySource = keySource
            self.generatedKeyFilePath =
                generatedKeyFilePath ?? Self.defaultGeneratedKeyFilePath(ProcessInfo.processInfo.environment) ?? ""
            self.scryptParameters = scryptParameters
            self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
            self.rollbackCheck = rollbackCheck ?? (try? RollbackCheck.mode(ProcessInfo.processInfo.environment)) ?? .enforce
            self.rollbackWitness = rollbackWitness
        }

        public var description: String { "file keychain at \(path), \(keySource)" }

        /// The environment the state directory is found in (the process's, unless the
        /// configuration was resolved from another).
        package var environment: [String: String]?

        /// This configuration with its key source released (its secret dropped).
        package var released: Configuration {
            var copy = self
            copy.keySource = keySource.released
            return copy
        }

        /// What the key sources need to know about this file.
        package var keyContext: KeySourceContext {
            KeySourceContext(
                store: path, scryptParameters: scryptParameters, generatedKeyFilePath: generatedKeyFilePath,
                keyCacheTimeout: keyCacheTimeout)
        }

        /// The configuration the environment describes (no config file; the
        /// process configuration, config file included, is ``init(_:)``).
        ///
        /// | variable | meaning |
        /// |---|---|
        /// | `SECITEM_FILE` | the SQLite file; default `$XDG_DATA_HOME/secitem/keychain.db` (`~/.local/share/…`) |
        /// | `SECITEM_KEY_SOURCE` | `key-file`, `systemd-credential`, `passphrase`, `tpm2` or `automatic`: picks one explicitly (with `SecItem`'s SecretService trait also `secret-service`, `portal`: docs/key-sources.md) |
        /// | `SECITEM_FLATPAK_INFO` | the Flatpak info file that marks a sandbox (default `/.flatpak-info`; `FLATPAK_ID` too): inside one, the Secret portal keys the store |
        /// | `SECITEM_KEY_FILE` | a key file (first in precedence) |
        /// | `CREDENTIALS_DIRECTORY` | systemd credentials: `secitem.key` in it, when present, is the key file |
        /// | `SECITEM_PASSPHRASE` | a passphrase (after a key file) |
        /// | `XDG_CONFIG_HOME` | where ``KeySource/automatic`` keeps its key (last: nothing else set) |
        /// | `SECITEM_KEY_CACHE_TIMEOUT` | seconds a passphrase's derived key stays in the session key cache (default 300; 0: off) |
        /// | `SECITEM_ROLLBACK_CHECK` | `on` (default), `report` or `off`: the rollback evidence |
        /// | `XDG_STATE_HOME` | where the rollback evidence is kept (`~/.local/state` when unset) |
        ///
        /// - Throws: `errSecParam` for an unknown `SECITEM_KEY_SOURCE` or one whose
        ///   setting is missing; `errSecNotAvailable` when no home directory is known.
        public static func fromEnvironment(_ env: [String: String] = ProcessInfo.processInfo.environment)
            throws(SecItemError) -> Configuration
        {
            try Configuration(SecItemConfiguration.environmentOnly(env))
        }

        /// The file backend's part of a resolved process configuration: the file,
        /// and the key source (a key file before a passphrase before the generated
        /// key file, unless `key-source` picks one).
        /// - Throws: `errSecParam` for an unknown key source or one whose setting is
        ///   missing; `errSecNotAvailable` when no home directory is known.
        public init(_ settings: SecItemConfiguration) throws(SecItemError) {
            let env = settings.environment
            guard let path = try settings.value(SQLiteBackend.Settings.file) ?? Self.defaultPath(env) else {
                throw SecItemError(errSecNotAvailable, "neither SECITEM_FILE, XDG_DATA_HOME nor HOME is set")
            }
            let generated = Self.defaultGeneratedKeyFilePath(env) ?? ""
            let source = try KeySources.resolve(settings, KeySourceContext(store: path, generatedKeyFilePath: generated))
            self.init(
                path: path, keySource: source, generatedKeyFilePath: generated, rollbackCheck: try RollbackCheck.mode(settings))
            keyCacheTimeout = try SessionKeyCache.timeout(settings)
            environment = env
        }

        /// `$XDG_DATA_HOME/secitem/keychain.db`, or `~/.local/share/secitem/keychain.db`.
        public static func defaultPath(_ env: [String: String] = ProcessInfo.processInfo.environment) -> String? {
            if let xdg = nonEmpty(env["XDG_DATA_HOME"]), xdg.hasPrefix("/") { return xdg + "/secitem/keychain.db" }
            guard let home = home(env) else { return nil }
            return home + "/.local/share/secitem/keychain.db"
        }

        /// `$XDG_CONFIG_HOME/secitem/keychain.key`, or `~/.config/secitem/keychain.key`.
        public static func defaultGeneratedKeyFilePath(_ env: [String: String]) -> String? {
            if let xdg = nonEmpty(env["XDG_CONFIG_HOME"]), xdg.hasPrefix("/") {
                return xdg + "/secitem/keychain.key"
            }
            guard let home = home(env) else { return nil }
            return home + "/.config/secitem/keychain.key"
        }

        private static func home(_ env: [String: String]) -> String? {
            if let home = nonEmpty(env["HOME"]) { return home }
            guard let pw = getpwuid(getuid()), let dir = pw.pointee.pw_dir else { return nil }
            return nonEmpty(String(cString: dir))
        }

        private static func nonEmpty(_ s: String?) -> String? {
            guard let s, !s.isEmpty else { return nil }
            return s
        }
    }
}
