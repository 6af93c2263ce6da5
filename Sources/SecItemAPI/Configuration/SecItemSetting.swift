import CSecItemLinkHook
import SecItemSecurity
public import SecItemModel
import Foundation
import Synchronization

/// What a setting is, as the code that reads it declares it once: its config-file
/// key, the environment variable derived from that key, who declared it, whether it
/// holds a secret, its default and one line of help.
///
/// `secitem diagnose`, `secitem --help`, the config file's validation, `secitem-config(5)`
/// and the settings tables of the docs (`secitem _generate settings`) are all produced
/// from these declarations (``SecItemSettingCatalog``); nothing lists the settings by hand.
public struct SecItemSettingDeclaration: Sendable, Hashable, CustomStringConvertible {
    /// The config-file key (`postgresql-schema`).
    public let key: String
    /// The environment variable (`SECITEM_POSTGRESQL_SCHEMA`), derived from ``key``.
    public let variable: String
    /// Who declared it: `core`, a backend's kind (`file`, `postgresql`, …) or `key source`.
    public let scope: String
    /// Whether its value is or may hold a secret: shown as `(set)`, never printed,
    /// never in an error.
    public let isSecret: Bool
    /// Whether the config file may give it (a passphrase never: it comes from a file of its own).
    public let inConfigFile: Bool
    /// What a value looks like, for errors and the docs ("seconds, such as 10").
    public let expected: String
    /// The default, in words, when there is one.
    public let defaultDescription: String?
    /// One line of help.
    public let help: String

    /// - Parameters:
    ///   - key: The config-file key: lowercase words joined by `-`, the owner's name first
    ///     (`postgresql-schema`); the variable is `SECITEM_` and the key in capitals with `_`.
    ///   - scope: Who declared it (a backend's kind, a key source's name, or `core`).
    ///   - help: One line of help.
    ///   - expected: What a value looks like, for errors and the docs.
    ///   - isSecret: Whether its value is a secret (environment only, shown as `(set)`).
    ///   - inConfigFile: Whether the config file may give it.
    ///   - defaultDescription: The default in words, when there is one.
    public init(
        key: String, scope: String, help: String, expected: String = "text", isSecret: Bool = false,
        inConfigFile: Bool = true, defaultDescription: String? = nil
    ) {
        self.key = key
        self.variable = Self.variable(forKey: key)
        self.scope = scope
        self.isSecret = isSecret
        self.inConfigFile = inConfigFile
        self.expected = expected
        self.defaultDescription = defaultDescription
        self.help = help
    }

    /// `SECITEM_` and the key in capitals, `-` as `_`: `postgresql-url` → `SECITEM_POSTGRESQL_URL`.
    /// (Character by character, not Foundation's `replacingOccurrences`: every command
    /// declares every setting at start-up, and that call costs an `NSString` round trip.)
    public static func variable(forKey key: String) -> String {
        "SECITEM_" + String(key.uppercased().map { $0 == "-" ? "_" : $0 })
    }

    public var description: String { "\(key) (\(variable))" }
}

/// A setting with the type of its value: its ``declaration`` and how a value given as
/// text (environment, config file) becomes one, or is refused.
///
/// Declare it once, next to the code that reads it, as a `static let`; list it in the
/// provider's (or key source's) `settings`; read it with ``SecItemConfiguration/value(_:)``:
///
/// ```swift
/// enum TPMSettings {
///     static let tcti = SecItemSetting<String>.text(
///         "tpm-tcti", scope: "tpm", help: "The TPM's TCTI string.", default: "device:/dev/tpmrm0")
/// }
/// let tcti = try configuration.value(TPMSettings.tcti)   // code, SECITEM_TPM_TCTI, tpm-tcti, default
/// ```
public struct SecItemSetting<Value: Sendable>: Sendable {
    /// What the setting is.
    public let declaration: SecItemSettingDeclaration
    /// The value when no layer gives one.
    public let defaultValue: Value?
    private let parseText: @Sendable (String) -> Value?
    private let parseSecret: (@Sendable (Passphrase) -> Value?)?
    /// Whether an empty value counts as given (a passphrase: set but empty is refused,
    /// never taken as unset).
    public let emptyIsGiven: Bool

    /// - Parameters:
    ///   - declaration: Its name, variable, scope and help.
    ///   - defaultValue: The value when no layer gives one.
    ///   - emptyIsGiven: Whether an empty value counts as given.
    ///   - parse: The value for a text, or `nil` when the text is not one (the reader
    ///     then throws `errSecParam` naming the variable or the config file's line).
    public init(
        _ declaration: SecItemSettingDeclaration, default defaultValue: Value? = nil, emptyIsGiven: Bool = false,
        parse: @escaping @Sendable (String) -> Value?
    ) {
        self.declaration = declaration
        self.defaultValue = defaultValue
        self.parseText = parse
        self.parseSecret = nil
        self.emptyIsGiven = emptyIsGiven
    }

    private init(
        _ declaration: SecItemSettingDeclaration, emptyIsGiven: Bool, secret: @escaping @Sendable (Passphrase) -> Value?
    ) {
        self.declaration = declaration
        self.defaultValue = nil
        self.parseText = { secret(Passphrase($0)) }
        self.parseSecret = secret
        self.emptyIsGiven = emptyIsGiven
    }

    /// The config-file key.
    public var key: String { declaration.key }
    /// The environment variable.
    public var variable: String { declaration.variable }

    /// The value `text` stands for, or `nil` when it is not one.
    public func parse(_ text: String) -> Value? { parseText(text) }

    /// The value a secret held as a ``Passphrase`` stands for (taken from the environment
    /// by ``SecretEnvironment``), without a `String` copy where the value is a `Passphrase`.
    func parse(secret: Passphrase) -> Value? { parseSecret?(secret) ?? parseText(secret.exposedString()) }
}

extension SecItemSetting where Value == String {
    /// A text setting (a path, a name, a URI); any non-empty text is a value.
    /// - Parameters:
    ///   - key: The config-file key (the variable is derived from it).
    ///   - scope: Who declared it (a backend's kind, a key source's name, or `core`).
    ///   - help: One line of help.
    ///   - expected: What a value looks like, for errors and the docs.
    ///   - isSecret: Whether its value is a secret (environment only, shown as `(set)`).
    ///   - inConfigFile: Whether the config file may give it.
    ///   - defaultValue: The value when no layer gives one.
    ///   - defaultDescription: The default in words, when the code decides it (a path
    ///     derived from `$HOME`); defaults to `defaultValue`.
    public static func text(
        _ key: String, scope: String, help: String, expected: String = "text", isSecret: Bool = false,
        inConfigFile: Bool = true, default defaultValue: String? = nil, defaultDescription: String? = nil
    ) -> SecItemSetting<String> {
        SecItemSetting(
            SecItemSettingDeclaration(
                key: key, scope: scope, help: help, expected: expected, isSecret: isSecret, inConfigFile: inConfigFile,
                defaultDescription: defaultDescription ?? defaultValue),
            default: defaultValue, parse: { $0 })
    }
}

extension SecItemSetting where Value == Duration {
    /// A duration given in seconds (decimals allowed), within `range`.
    public static func seconds(
        _ key: String, scope: String, help: String, range: ClosedRange<Double>, default defaultValue: Duration? = nil,
        inConfigFile: Bool = true
    ) -> SecItemSetting<Duration> {
        // "5 s" rather than "5.0 s" (declared at every start-up: no Foundation string call).
        let shown = defaultValue.map { value -> String in
            let seconds = "\(Double(value.components.seconds) + Double(value.components.attoseconds) / 1e18)"
            return (seconds.hasSuffix(".0") ? String(seconds.dropLast(2)) : seconds) + " s"
        }
        return SecItemSetting(
            SecItemSettingDeclaration(
                key: key, scope: scope, help: help,
                expected: "seconds, more than \(Self.format(range.lowerBound)) and at most \(Self.format(range.upperBound))",
                inConfigFile: inConfigFile, defaultDescription: shown),
            default: defaultValue,
            parse: { text in
                guard let seconds = Double(text), seconds.isFinite, seconds > range.lowerBound, seconds <= range.upperBound
                else { return nil }
                return .milliseconds(Int64(seconds * 1000))
            })
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}

extension SecItemSetting where Value == Bool {
    /// A switch: `1`, `true` or `yes` turn it on; `0`, `false` or `no` off.
    public static func flag(
        _ key: String, scope: String, help: String, inConfigFile: Bool = true
    ) -> SecItemSetting<Bool> {
        SecItemSetting(
            SecItemSettingDeclaration(
                key: key, scope: scope, help: help, expected: "1 or 0", inConfigFile: inConfigFile, defaultDescription: "0"),
            default: false,
            parse: { text in
                switch text.lowercased() {
                case "1", "true", "yes": return true
                case "0", "false", "no": return false
                default: return nil
                }
            })
    }
}

extension SecItemSetting where Value == [String] {
    /// A comma-separated list.
    public static func list(
        _ key: String, scope: String, help: String, expected: String = "a,b,c"
    ) -> SecItemSetting<[String]> {
        SecItemSetting(
            SecItemSettingDeclaration(key: key, scope: scope, help: help, expected: expected),
            parse: { $0.split(separator: ",").map(String.init) })
    }
}

extension SecItemSetting where Value == Passphrase {
    /// A secret: never in the config file, never printed; set but empty counts as given
    /// (so that the code reading it can refuse an empty secret rather than ignore it).
    public static func secret(_ key: String, scope: String, help: String) -> SecItemSetting<Passphrase> {
        SecItemSetting(
            SecItemSettingDeclaration(
                key: key, scope: scope, help: help, expected: "a secret", isSecret: true, inConfigFile: false),
            emptyIsGiven: true, secret: { $0 })
    }
}

/// Every declared setting of the process: the core's own, those of every built-in
/// provider and key source, and those of each provider added with
/// `SecItemBackendRegistry.register(_:)`.
///
/// The built-in ones are present whenever the catalog is read, so whenever a
/// configuration is resolved, however early: a program that links the module `SecItem`
/// declares them through a link-time hook (`CSecItemLinkHook`: the core's weak reference
/// to SecItem's `secitem_declare_builtin_settings`), called on the first read. Nothing
/// has to touch the registry first.
///
/// The config file's keys are the declared ones that may be in it; a key no declaration
/// has is an error naming the file and line.
public enum SecItemSettingCatalog {
    private static let state = Mutex<[SecItemSettingDeclaration]>(SecItemCoreSettings.all)

    /// The built-in declarations, made once, before the first read (``declare(_:)``
    /// itself never waits for them: the hook calls it).
    private static let builtIn: Void = csecitem_declare_builtin_settings()

    /// Adds `declarations`, each once (a key already declared keeps its first declaration).
    public static func declare(_ declarations: [SecItemSettingDeclaration]) {
        state.withLock { declared in
            for declaration in declarations where !declared.contains(where: { $0.key == declaration.key }) {
                declared.append(declaration)
            }
        }
    }

    /// Every declared setting, in the order declared (the core's first).
    public static var declared: [SecItemSettingDeclaration] {
        _ = builtIn
        return state.withLock { $0 }
    }

    /// The declaration of config-file key `key`.
    public static func declaration(forKey key: String) -> SecItemSettingDeclaration? {
        _ = builtIn
        return state.withLock { $0.first { $0.key == key } }
    }

    /// The variables whose values are secrets.
    public static var secretVariables: Set<String> { Set(declared.filter(\.isSecret).map(\.variable)) }

    /// The declarations as a Markdown table (key, variable, meaning, default): what
    /// `secitem _generate settings` writes into the docs.
    public static func markdownTable(_ declarations: [SecItemSettingDeclaration]) -> String {
        var out = "| key | environment | meaning | value | default |\n|---|---|---|---|---|\n"
        for d in declarations {
            let key = d.inConfigFile ? "`\(d.key)`" : "(environment only)"
            var meaning = d.help.replacingOccurrences(of: "|", with: "\\|")
            if d.isSecret { meaning += " A secret: `diagnose` shows `(set)`." }
            out += "| \(key) | `\(d.variable)` | \(meaning) | \(d.expected) | \(d.defaultDescription.map { "`\($0)`" } ?? "") |\n"
        }
        return out
    }
}

/// The settings the core itself reads: which backend, the access groups, the
/// application identifier, and which config file.
public enum SecItemCoreSettings {
    /// `backend`, `SECITEM_BACKEND`: the backend by name; unset, the automatic choice.
    public static let backend = SecItemSetting<BackendKind>(
        SecItemSettingDeclaration(
            key: "backend", scope: "core",
            help: "The backend, by name: file, memory and those of the build's traits; unset, the automatic choice (the Secret Service when a provider answers, else the encrypted file).",
            expected: "a backend's name (secitem diagnose lists them)"),
        parse: { BackendKind(rawValue: $0) })
    /// `access-groups`, `SECITEM_ACCESS_GROUPS`.
    public static let accessGroups = SecItemSetting<[String]>.list(
        "access-groups", scope: "core",
        help: "The entitled access groups. The variable lists every group, the first being the default; the config file's are shared groups every program of the account is also entitled to, never a default.")
    /// `application-id`, `SECITEM_APPLICATION_ID`.
    public static let applicationIdentifier = SecItemSetting<String>.text(
        "application-id", scope: "core",
        help: "The application identifier: the program's default access group (and, with no access groups listed, its only one).",
        expected: "reverse-DNS name")
    /// `SECITEM_CONFIG`: another config file, or `none`.
    public static let config = SecItemSetting<String>.text(
        "config", scope: "core", help: "Another config file, or none to read no config file.", expected: "path or none",
        inConfigFile: false, defaultDescription: "$XDG_CONFIG_HOME/secitem/config")

    static var all: [SecItemSettingDeclaration] {
        [backend.declaration, accessGroups.declaration, applicationIdentifier.declaration, config.declaration]
    }
}
