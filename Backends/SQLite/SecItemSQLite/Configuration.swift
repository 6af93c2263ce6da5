public import Foundation
public import SecItemCore
import Glibc

extension SQLiteBackend {
    /// Where the key-encryption key comes from.
    ///
    /// The key-encryption key only wraps the file's random data key. Changing it
    /// (``SQLiteBackend/rekey(to:rewrapOnly:)``) also replaces the data key and
    /// re-encrypts every item, unless `rewrapOnly` asks for the fast re-wrap.
    /// Never printed: `description` and `dump` show the kind of source, never a
    /// key or passphrase.
    public enum KeySource: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        /// A 256-bit key given in code (exactly 32 bytes).
        case rawKey(Data)
        /// A file holding a 256-bit key: 32 raw bytes, 64 hex digits or base64.
        /// Refused when group- or world-accessible or owned by another user, as ssh does.
        case keyFile(String)
        /// A passphrase, stretched with scrypt (parameters stored in the file).
        ///
        /// The backend reads it once, to derive the key-encryption key when it
        /// opens (or, for ``SQLiteBackend/rekey(to:rewrapOnly:)``, the new one), and
        /// keeps no reference to it afterwards: once the caller drops its own
        /// copies, the ``Passphrase``'s buffer is zeroed. Read it from a terminal or
        /// a file straight into ``Passphrase/init(bytes:)``;
        /// ``passphrase(_:)-swift.type.method`` takes a `String` for convenience.
        case passphrase(Passphrase)
        /// The embedded default: a random key file generated on first use at
        /// ``Configuration/generatedKeyFilePath``. It protects a copy of the database
        /// alone, not against someone who can read the user's files.
        case automatic

        public var description: String {
            switch self {
            case .rawKey: return "raw key (redacted)"
            case .keyFile(let path): return "key file \(path)"
            case .passphrase: return "passphrase (redacted)"
            case .automatic: return "automatic key file"
            }
        }

        public var debugDescription: String { description }

        /// A passphrase given as a `String`, converted at once into a ``Passphrase``.
        ///
        /// The same as `.passphrase(Passphrase(text))`, kept so code written when the
        /// case took a `String` still compiles. The `String` itself is the caller's:
        /// Swift gives no way to zero it, so it stays in memory as long as the caller
        /// (and whatever it came from) keeps it.
        public static func passphrase(_ text: String) -> KeySource { .passphrase(Passphrase(text)) }

        /// This source without the secret it carries: a passphrase becomes an empty
        /// one and a raw key empty data (key files and the generated key file are
        /// paths, kept). What a backend keeps once its key is derived.
        package var released: KeySource {
            switch self {
            case .passphrase: return .passphrase(Passphrase(bytes: EmptyCollection<UInt8>()))
            case .rawKey: return .rawKey(Data())
            case .keyFile, .automatic: return self
            }
        }

        public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .enum) }
    }

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
        /// Up to how many items opening the file compares every index entry with its row
        /// (`PRAGMA integrity_check` of the items table: about 1 ms per 300 items);
        /// default 10,000. Larger stores get a check of each index's root alone on open,
        /// which catches a swapped `rootpage` but not a single overwritten index page;
        /// ``SQLiteBackend/verify()`` always runs the full check (docs/file-format.md,
        /// "The b-trees agree with each other").
        public var openIntegrityCheckItemLimit: Int = 10_000

        /// - Parameters:
        ///   - path: The SQLite file; created (0600, in a 0700 directory) when missing.
        ///   - keySource: Where the key-encryption key comes from.
        ///   - generatedKeyFilePath: The key file for ``KeySource/automatic``; by default
        ///     `$XDG_CONFIG_HOME/secitem/keychain.key` (`~/.config/…`).
        ///   - scryptParameters: The scrypt cost for new passphrase protection.
        public init(
            path: String, keySource: KeySource, generatedKeyFilePath: String? = nil,
            scryptParameters: ScryptParameters = .default, busyTimeoutMilliseconds: Int = 30_000
        ) {
            self.path = path
            self.keySource = keySource
            self.generatedKeyFilePath =
                generatedKeyFilePath ?? Self.defaultGeneratedKeyFilePath(ProcessInfo.processInfo.environment) ?? ""
            self.scryptParameters = scryptParameters
            self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        }

        public var description: String { "file keychain at \(path), \(keySource)" }

        /// This configuration with its key source ``KeySource/released``.
        package var released: Configuration {
            var copy = self
            copy.keySource = keySource.released
            return copy
        }

        /// The configuration the environment describes (no config file; the
        /// process configuration, config file included, is ``init(_:)``).
        ///
        /// | variable | meaning |
        /// |---|---|
        /// | `SECITEM_FILE` | the SQLite file; default `$XDG_DATA_HOME/secitem/keychain.db` (`~/.local/share/…`) |
        /// | `SECITEM_KEY_SOURCE` | `key-file`, `passphrase` or `automatic`: picks one explicitly |
        /// | `SECITEM_KEY_FILE` | a key file (first in precedence) |
        /// | `CREDENTIALS_DIRECTORY` | systemd credentials: `secitem.key` in it, when present, is the key file |
        /// | `SECITEM_PASSPHRASE` | a passphrase (after a key file) |
        /// | `XDG_CONFIG_HOME` | where ``KeySource/automatic`` keeps its key (last: nothing else set) |
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
            guard let path = settings.file ?? Self.defaultPath(env) else {
                throw SecItemError(errSecNotAvailable, "neither SECITEM_FILE, XDG_DATA_HOME nor HOME is set")
            }
            let keyFile: String? = settings.keyFile ?? Self.credentialsKeyFile(env)
            if let given = settings.passphrase, given.isEmpty {
                let origin = settings.setting(\.passphrase)?.origin
                let source = origin.map { "\($0)" } ?? "the passphrase file"
                throw SecItemError(
                    errSecParam,
                    "the passphrase (\(source)) is empty; give the passphrase, or unset it to use a key file or the generated key file")
            }
            let passphrase = settings.passphrase
            let source: KeySource
            switch settings.keySource {
            case nil:
                if let keyFile {
                    source = .keyFile(keyFile)
                } else if let passphrase {
                    source = .passphrase(passphrase)
                } else {
                    source = .automatic
                }
            case "key-file":
                guard let keyFile else {
                    throw SecItemError(errSecParam, "SECITEM_KEY_SOURCE=key-file but SECITEM_KEY_FILE is not set")
                }
                source = .keyFile(keyFile)
            case "passphrase":
                guard let passphrase else {
                    throw SecItemError(errSecParam, "SECITEM_KEY_SOURCE=passphrase but SECITEM_PASSPHRASE is not set")
                }
                source = .passphrase(passphrase)
            case "automatic":
                source = .automatic
            case let other?:
                throw SecItemError(
                    errSecParam, "SECITEM_KEY_SOURCE is \"\(other)\"; expected key-file, passphrase or automatic")
            }
            self.init(path: path, keySource: source, generatedKeyFilePath: Self.defaultGeneratedKeyFilePath(env) ?? "")
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

        private static func credentialsKeyFile(_ env: [String: String]) -> String? {
            guard let dir = nonEmpty(env["CREDENTIALS_DIRECTORY"]) else { return nil }
            let path = dir + "/secitem.key"
            return FileManager.default.fileExists(atPath: path) ? path : nil
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
