import Foundation

/// The configuration file, `$XDG_CONFIG_HOME/secitem/config` (`~/.config/secitem/config`).
///
/// A few `key = value` lines; `#` starts a comment; blank lines are ignored.
/// Every key has an environment variable, which wins when both are set:
///
/// | key | environment | meaning |
/// |---|---|---|
/// | `backend` | `SECITEM_BACKEND` | `file`, `secret-service`, `postgresql` or `memory`; unset: the automatic choice |
/// | `file` | `SECITEM_FILE` | the file backend's SQLite file |
/// | `key-file` | `SECITEM_KEY_FILE` | the file backend's key file (0600, owned by the user) |
/// | `passphrase-file` | `SECITEM_PASSPHRASE_FILE` | a file holding the passphrase (0600, owned by the user) |
/// | `key-source` | `SECITEM_KEY_SOURCE` | `key-file`, `systemd-credential`, `passphrase`, `tpm2` or `automatic`; with the SecretService trait `secret-service` or `portal` |
/// | `collection` | `SECITEM_COLLECTION` | the Secret Service collection (alias or object path) |
/// | `access-groups` | `SECITEM_ACCESS_GROUPS` | the entitled access groups, `a,b,c` (the first is the default) |
/// | `postgresql-url` | `SECITEM_POSTGRESQL_URL` | the PostgreSQL backend's libpq URI or `key=value` string (password in `~/.pgpass`) |
/// | `postgresql-schema` | `SECITEM_POSTGRESQL_SCHEMA` | the PostgreSQL backend's schema; default `secitem` |
/// | `application-id` | `SECITEM_APPLICATION_ID` | the application identifier (``SecItemApplicationIdentifier``) |
/// | `key-cache-timeout` | `SECITEM_KEY_CACHE_TIMEOUT` | seconds a passphrase's derived key stays in the kernel's session key cache; default 300, `0` turns it off |
///
/// `SECITEM_CONFIG` names another file; `SECITEM_CONFIG=none` ignores the file.
/// The file never holds a secret itself: passphrases come from `passphrase-file`.
public struct SecItemConfigFile: Sendable, Equatable {
    /// The keys the file accepts, and the environment variable each stands for.
    public static let variables: [(key: String, variable: String)] = [
        ("backend", "SECITEM_BACKEND"),
        ("file", "SECITEM_FILE"),
        ("key-file", "SECITEM_KEY_FILE"),
        ("passphrase-file", "SECITEM_PASSPHRASE_FILE"),
        ("key-source", "SECITEM_KEY_SOURCE"),
        ("collection", "SECITEM_COLLECTION"),
        ("access-groups", "SECITEM_ACCESS_GROUPS"),
        ("postgresql-url", "SECITEM_POSTGRESQL_URL"),
        ("postgresql-schema", "SECITEM_POSTGRESQL_SCHEMA"),
        ("application-id", "SECITEM_APPLICATION_ID"),
        ("key-cache-timeout", "SECITEM_KEY_CACHE_TIMEOUT"),
    ]

    /// Where the file is (or would be); `nil` when no home is known or `SECITEM_CONFIG=none`.
    public let path: String?
    /// Whether the file exists.
    public let exists: Bool
    /// Its settings, by key.
    public let settings: [String: String]

    public init(path: String?, exists: Bool, settings: [String: String]) {
        self.path = path
        self.exists = exists
        self.settings = settings
    }

    /// The path the environment gives for the file.
    public static func path(environment: [String: String]) -> String? {
        if let explicit = environment["SECITEM_CONFIG"], !explicit.isEmpty {
            return explicit == "none" ? nil : explicit
        }
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") { return xdg + "/secitem/config" }
        if let home = environment["HOME"], !home.isEmpty { return home + "/.config/secitem/config" }
        return nil
    }

    /// Reads the file; a missing file is an empty configuration.
    /// - Throws: `errSecParam` for an unknown key or a line that is not `key = value`
    ///   (naming the file and line); `errSecIO` when the file exists but cannot be read.
    public static func load(environment: [String: String]) throws(SecItemError) -> SecItemConfigFile {
        guard let path = path(environment: environment) else {
            return SecItemConfigFile(path: nil, exists: false, settings: [:])
        }
        guard FileManager.default.fileExists(atPath: path) else {
            return SecItemConfigFile(path: path, exists: false, settings: [:])
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SecItemError(errSecIO, "cannot read the config file \(path)")
        }
        return try parse(String(decoding: data, as: UTF8.self), path: path)
    }

    /// Parses the text of a config file.
    public static func parse(_ text: String, path: String) throws(SecItemError) -> SecItemConfigFile {
        var settings: [String: String] = [:]
        let known = Set(variables.map(\.key))
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw SecItemError(errSecParam, "\(path) line \(number + 1): expected 'key = value'")
            }
            let key = line[..<equals].trimmingSpaces()
            var value = line[line.index(after: equals)...].trimmingSpaces()
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            guard known.contains(key) else {
                throw SecItemError(
                    errSecParam,
                    "\(path) line \(number + 1): unknown key '\(key)'; known keys: \(variables.map(\.key).joined(separator: ", "))")
            }
            settings[key] = value
        }
        return SecItemConfigFile(path: path, exists: true, settings: settings)
    }
}

