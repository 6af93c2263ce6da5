public import SecItemSecurity
import SecItemModel
import Foundation

/// The configuration file, `$XDG_CONFIG_HOME/secitem/config` (`~/.config/secitem/config`).
///
/// A few `key = value` lines; `#` starts a comment; blank lines are ignored. The keys
/// are those of the declared settings (``SecItemSettingCatalog``; `secitem _generate
/// settings` prints the table, docs/settings.md holds it); each has an environment
/// variable, which wins when both are set.
///
/// `SECITEM_CONFIG` names another file; `SECITEM_CONFIG=none` ignores the file.
/// The file never holds a secret itself: passphrases come from `passphrase-file`.
public struct SecItemConfigFile: Sendable, Equatable {
    /// The keys the file accepts, and the environment variable each stands for: those
    /// of the settings declared so far that may be in the file.
    public static var variables: [(key: String, variable: String)] {
        SecItemSettingCatalog.declared.filter(\.inConfigFile).map { ($0.key, $0.variable) }
    }

    /// Where the file is (or would be); `nil` when no home is known or `SECITEM_CONFIG=none`.
    public let path: String?
    /// Whether the file exists.
    public let exists: Bool
    /// Its settings, by key.
    public let settings: [String: String]
    /// The line each key is on (1-based).
    public let lines: [String: Int]

    public init(path: String?, exists: Bool, settings: [String: String], lines: [String: Int] = [:]) {
        self.path = path
        self.exists = exists
        self.settings = settings
        self.lines = lines
    }

    /// `errSecParam` naming the file and line of the first key that none of `declared`
    /// allows in the file, or `nil`.
    public func unknownKeyProblem(_ declared: [SecItemSettingDeclaration]) -> SecItemError? {
        let known = declared.filter(\.inConfigFile)
        let keys = Set(known.map(\.key))
        guard let (key, line) = lines.filter({ !keys.contains($0.key) }).min(by: { $0.value < $1.value }) else { return nil }
        var message = "\(path ?? "the config file") line \(line): unknown key '\(key)'"
        if let secret = declared.first(where: { $0.key == key && !$0.inConfigFile }) {
            message += " (\(secret.variable) is given in the environment only)"
        }
        return SecItemError(errSecParam, message + "; known keys: \(known.map(\.key).joined(separator: ", "))")
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
    /// - Throws: `errSecParam` for a line that is not `key = value` (naming the file and
    ///   line); `errSecIO` when the file exists but cannot be read. An unknown key is
    ///   ``unknownKeyProblem(_:)``'s, asked once the settings are declared.
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
        var lines: [String: Int] = [:]
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw SecItemError(errSecParam, "\(path) line \(number + 1): expected 'key = value'")
            }
            let key = line[..<equals].trimmingSpaces()
            var value = line[line.index(after: equals)...].trimmingSpaces()
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            settings[key] = value
            lines[key] = number + 1
        }
        return SecItemConfigFile(path: path, exists: true, settings: settings, lines: lines)
    }
}

