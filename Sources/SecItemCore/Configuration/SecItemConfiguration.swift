public import Foundation
import Synchronization

/// The process configuration, resolved once: which backend, which access groups,
/// where the file backend's file and key are, which Secret Service collection.
///
/// Every setting is taken from the first layer that gives it, in this order
/// (``resolve(code:environment:)`` is the one place that applies it):
///
/// 1. **code**: a ``Settings`` value passed by the program
///    (`SecItemSystem.bootstrap(configuration:)`),
/// 2. **environment**: `SECITEM_BACKEND`, `SECITEM_FILE`, … (``Settings/init(environment:)``),
/// 3. **config file**: `$XDG_CONFIG_HOME/secitem/config` (``SecItemConfigFile``),
/// 4. **defaults**: the automatic backend choice, the default access group, the
///    backends' default paths.
///
/// A passphrase never travels in a dictionary: it is a ``Passphrase`` (from code,
/// `SECITEM_PASSPHRASE`, or read from `passphrase-file`), zeroed when dropped and
/// never printed.
public struct SecItemConfiguration: Sendable, CustomStringConvertible {
    /// One layer of settings: what code, the environment or the config file says;
    /// `nil` means "not said here".
    public struct Settings: Sendable {
        /// The backend; `nil` everywhere means the automatic choice.
        public var backend: BackendKind?
        /// The file backend's SQLite file.
        public var file: String?
        /// The file backend's key file.
        public var keyFile: String?
        /// A file holding the file backend's passphrase (0600, owned by the user).
        public var passphraseFile: String?
        /// `key-file`, `passphrase` or `automatic`: which key source the file backend uses.
        public var keySource: String?
        /// The file backend's passphrase (code or `SECITEM_PASSPHRASE`; never the config file).
        public var passphrase: Passphrase?
        /// The Secret Service collection (alias or object path).
        public var collection: String?
        /// The entitled access groups, the first being the default for new items.
        public var accessGroups: [String]?
        /// The bound on each step of the Secret Service probe.
        public var probeTimeout: Duration?
        /// The PostgreSQL backend's libpq connection URI or `key=value` string (a
        /// password belongs in `~/.pgpass`, not here).
        public var postgresqlURL: String?
        /// The PostgreSQL backend's schema.
        public var postgresqlSchema: String?
        /// The application identifier (``SecItemApplicationIdentifier``): the default access
        /// group when ``accessGroups`` lists none.
        public var applicationIdentifier: String?
        /// How long a passphrase's derived key stays in the kernel's session key cache, in
        /// whole seconds as written (`0`: no cache); checked where it is used.
        public var keyCacheTimeout: String?

        public init(
            backend: BackendKind? = nil, file: String? = nil, keyFile: String? = nil, passphraseFile: String? = nil,
            keySource: String? = nil, passphrase: Passphrase? = nil, collection: String? = nil,
            accessGroups: [String]? = nil, probeTimeout: Duration? = nil, postgresqlURL: String? = nil,
            postgresqlSchema: String? = nil, applicationIdentifier: String? = nil, keyCacheTimeout: String? = nil
        ) {
            self.backend = backend
            self.file = file
            self.keyFile = keyFile
            self.passphraseFile = passphraseFile
            self.keySource = keySource
            self.passphrase = passphrase
            self.collection = collection
            self.accessGroups = accessGroups
            self.probeTimeout = probeTimeout
            self.postgresqlURL = postgresqlURL
            self.postgresqlSchema = postgresqlSchema
            self.applicationIdentifier = applicationIdentifier
            self.keyCacheTimeout = keyCacheTimeout
        }

        /// What the environment says; unset and empty variables say nothing, except
        /// `SECITEM_PASSPHRASE`: set but empty, it is an empty passphrase, which the
        /// file backend refuses (the operator meant a passphrase, not the generated key file).
        /// A `SECITEM_PASSPHRASE` taken out of the process environment by
        /// ``SecretEnvironment/take(_:)`` counts as set when `env` does not have it.
        public init(environment env: [String: String]) {
            func value(_ name: String) -> String? {
                guard let v = env[name], !v.isEmpty else { return nil }
                return v
            }
            self.init(
                backend: value(Variable.backend).map(BackendKind.init(rawValue:)), file: value(Variable.file),
                keyFile: value(Variable.keyFile), passphraseFile: value(Variable.passphraseFile),
                keySource: value(Variable.keySource),
                passphrase: env[Variable.passphrase].map(Passphrase.init) ?? SecretEnvironment.value(Variable.passphrase),
                collection: value(Variable.collection), accessGroups: value(Variable.accessGroups).map(Self.groups),
                probeTimeout: value(Variable.probeTimeout).flatMap(Self.probeTimeout),
                postgresqlURL: value(Variable.postgresqlURL) ?? SecretEnvironment.value(Variable.postgresqlURL)
                    .flatMap { $0.isEmpty ? nil : $0.exposedString() },
                postgresqlSchema: value(Variable.postgresqlSchema),
                applicationIdentifier: value(Variable.applicationIdentifier),
                keyCacheTimeout: value(Variable.keyCacheTimeout))
        }

        /// What the config file says.
        public init(configFile: SecItemConfigFile) {
            let s = configFile.settings
            func value(_ key: String) -> String? {
                guard let v = s[key], !v.isEmpty else { return nil }
                return v
            }
            self.init(
                backend: value("backend").map(BackendKind.init(rawValue:)), file: value("file"),
                keyFile: value("key-file"), passphraseFile: value("passphrase-file"), keySource: value("key-source"),
                collection: value("collection"), accessGroups: value("access-groups").map(Self.groups),
                postgresqlURL: value("postgresql-url"), postgresqlSchema: value("postgresql-schema"),
                applicationIdentifier: value("application-id"), keyCacheTimeout: value("key-cache-timeout"))
        }

        static func groups(_ text: String) -> [String] { text.split(separator: ",").map(String.init) }

        static func probeTimeout(_ text: String) -> Duration? {
            guard let seconds = Double(text), seconds > 0, seconds <= 60 else { return nil }
            return .milliseconds(Int64(seconds * 1000))
        }
    }

    /// Where a setting came from.
    public enum Origin: Sendable, Hashable, CustomStringConvertible {
        case code
        /// The environment variable.
        case environment(String)
        /// The config file, at this path.
        case configFile(String)
        case defaults

        public var description: String {
            switch self {
            case .code: return "code"
            case .environment(let variable): return variable
            case .configFile(let path): return "the config file \(path)"
            case .defaults: return "the defaults"
            }
        }
    }

    /// The environment variables, by setting.
    public enum Variable {
        public static let backend = "SECITEM_BACKEND"
        public static let file = "SECITEM_FILE"
        public static let keyFile = "SECITEM_KEY_FILE"
        public static let passphraseFile = "SECITEM_PASSPHRASE_FILE"
        public static let keySource = "SECITEM_KEY_SOURCE"
        public static let passphrase = "SECITEM_PASSPHRASE"
        public static let collection = "SECITEM_COLLECTION"
        public static let accessGroups = "SECITEM_ACCESS_GROUPS"
        public static let probeTimeout = "SECITEM_PROBE_TIMEOUT"
        public static let applicationIdentifier = "SECITEM_APPLICATION_ID"
        public static let config = "SECITEM_CONFIG"
        public static let postgresqlURL = "SECITEM_POSTGRESQL_URL"
        public static let postgresqlSchema = "SECITEM_POSTGRESQL_SCHEMA"
        public static let keyCacheTimeout = "SECITEM_KEY_CACHE_TIMEOUT"
        /// The variables that hold secrets (shown as `(set)`, never passed on).
        public static let secrets: Set<String> = [passphrase, "SECITEM_EXPORT_PASSPHRASE"]
    }

    // MARK: The layers

    /// What code said.
    public private(set) var code: Settings
    /// What the environment said.
    public let environmentSettings: Settings
    /// The config file (path, whether present, its settings).
    public let configFile: SecItemConfigFile
    /// What the config file said.
    public let fileSettings: Settings
    /// The process environment without its secrets, for the facts backends derive
    /// defaults from (`HOME`, `XDG_*`, `CREDENTIALS_DIRECTORY`, `DBUS_SESSION_BUS_ADDRESS`).
    public let environment: [String: String]
    /// Why the configuration cannot open a persistent backend (an unreadable config
    /// file or passphrase file), or `nil`. The memory backend does not care.
    public private(set) var problem: SecItemError?
    /// Whether ``problem`` came from reading the config file (no passphrase file is read then).
    private let configFileFailed: Bool

    // MARK: The resolved settings

    /// The backend asked for, or `nil` for the automatic choice.
    public var backend: BackendKind? { setting(\.backend)?.value }
    /// Where ``backend`` came from (``Origin/defaults`` for the automatic choice).
    public var backendOrigin: Origin { setting(\.backend)?.origin ?? .defaults }
    /// The file backend's SQLite file, when given.
    public var file: String? { setting(\.file)?.value }
    /// The file backend's key file, when given.
    public var keyFile: String? { setting(\.keyFile)?.value }
    /// The passphrase file, when given.
    public var passphraseFile: String? { setting(\.passphraseFile)?.value }
    /// The key source named, when one is.
    public var keySource: String? { setting(\.keySource)?.value }
    /// The passphrase: given in code or `SECITEM_PASSPHRASE`, else read from ``passphraseFile``.
    public private(set) var passphrase: Passphrase?
    /// The Secret Service collection, when given.
    public var collection: String? { setting(\.collection)?.value }
    /// The entitled access groups: those listed for this process (code or
    /// `SECITEM_ACCESS_GROUPS`; the first is the default), else the
    /// ``applicationIdentifier`` (the default group, as on Apple platforms) followed by
    /// the config file's `access-groups`.
    ///
    /// The config file is the user's, read by every program on the account: its
    /// groups are *shared* groups each program is also entitled to, never a default
    /// group, so it cannot make unrelated programs (and the git credential helper) one
    /// application whose wipe takes the others' items.
    public var accessGroups: AccessGroups {
        if let listed = listedAccessGroups { return AccessGroups(listed) }
        return AccessGroups([applicationIdentifier.value] + configFileAccessGroups)
    }

    /// The groups listed for this process (code, `SECITEM_ACCESS_GROUPS`), when any
    /// non-blank one is. The config file's are not among them: see ``accessGroups``.
    private var listedAccessGroups: [String]? {
        guard let groups = code.accessGroups ?? environmentSettings.accessGroups, Self.anyNonBlank(groups) else {
            return nil
        }
        return groups
    }

    /// The config file's `access-groups`, shared groups added after the program's own
    /// (empty when code or the environment list groups: those win).
    private var configFileAccessGroups: [String] {
        guard let groups = fileSettings.accessGroups, Self.anyNonBlank(groups) else { return [] }
        return groups
    }

    private static func anyNonBlank(_ groups: [String]) -> Bool {
        groups.contains(where: { !$0.trimmingCharacters(in: .whitespaces).isEmpty })
    }

    /// The application identifier: code, `SECITEM_APPLICATION_ID`, `application-id`,
    /// then the bundle, `FLATPAK_ID`, the executable (``SecItemApplicationIdentifier``). An
    /// unusable explicit one is passed over here; ``checkApplicationIdentifier()``
    /// reports it.
    public var applicationIdentifier: SecItemApplicationIdentifier {
        if let id = try? resolvedApplicationIdentifier() { return id }
        var env = environment
        env[Variable.applicationIdentifier] = nil
        return (try? SecItemApplicationIdentifier.process(environment: env))
            ?? SecItemApplicationIdentifier(SecItemApplicationIdentifier.derived(fromExecutable: nil), source: .executable)
    }

    /// The application identifier, or `errSecParam` naming the setting when the one
    /// given explicitly cannot be one (empty, a comma, a control character).
    public func resolvedApplicationIdentifier() throws(SecItemError) -> SecItemApplicationIdentifier {
        try SecItemApplicationIdentifier.process(
            code: code.applicationIdentifier, environment: environment, configFile: fileSettings.applicationIdentifier)
    }

    /// Throws when the access groups come from the application identifier and the
    /// identifier given explicitly is unusable (what opening the process keychain checks).
    public func checkApplicationIdentifier() throws(SecItemError) {
        if listedAccessGroups == nil { _ = try resolvedApplicationIdentifier() }
    }

    /// The entitlements of a tool with an identity of its own (the git credential
    /// helper): the groups listed for the process (code, `SECITEM_ACCESS_GROUPS`), else
    /// the application identifier given explicitly (code, `SECITEM_APPLICATION_ID`,
    /// `application-id`), else `toolIdentifier` — never one derived from the bundle,
    /// Flatpak or executable, so every entry point of the tool (and every name it is
    /// installed under) shares items — followed by the config file's shared `access-groups`.
    /// - Throws: `errSecParam` when the explicit application identifier is unusable.
    public func accessGroups(toolIdentifier: String) throws(SecItemError) -> AccessGroups {
        if let listed = listedAccessGroups { return AccessGroups(listed) }
        let own = setting(\.applicationIdentifier) != nil ? try resolvedApplicationIdentifier().value : toolIdentifier
        return AccessGroups([own] + configFileAccessGroups)
    }

    /// The entitlements of an operator tool (the `secitem` command): every access
    /// group, as Keychain Access on a Mac sees every item. Items added without a
    /// group go to the default group of ``accessGroups(toolIdentifier:)``, whose
    /// groups stay listed (so the Secret Service's foreign items are seen when
    /// `org.secitem.foreign` is among them).
    /// - Throws: `errSecParam` when the explicit application identifier is unusable.
    public func operatorAccessGroups(toolIdentifier: String) throws(SecItemError) -> AccessGroups {
        .everyGroup(listing: try accessGroups(toolIdentifier: toolIdentifier).groups)
    }
    /// The bound on each step of the Secret Service probe; default 0.8 s.
    public var probeTimeout: Duration { setting(\.probeTimeout)?.value ?? .milliseconds(800) }

    /// The PostgreSQL connection string, when given.
    public var postgresqlURL: String? { setting(\.postgresqlURL)?.value }
    /// The PostgreSQL schema, when given.
    public var postgresqlSchema: String? { setting(\.postgresqlSchema)?.value }

    /// The precedence, in one place: the first layer that says a setting wins.
    public func setting<T>(_ key: KeyPath<Settings, T?>) -> (value: T, origin: Origin)? {
        if let value = code[keyPath: key] { return (value, .code) }
        if let value = environmentSettings[keyPath: key] { return (value, .environment(Self.variable(for: key))) }
        if let value = fileSettings[keyPath: key] { return (value, .configFile(configFile.path ?? "")) }
        return nil
    }

    private static func variable<T>(for key: KeyPath<Settings, T?>) -> String {
        switch key {
        case \Settings.backend: return Variable.backend
        case \Settings.file: return Variable.file
        case \Settings.keyFile: return Variable.keyFile
        case \Settings.passphraseFile: return Variable.passphraseFile
        case \Settings.keySource: return Variable.keySource
        case \Settings.passphrase: return Variable.passphrase
        case \Settings.collection: return Variable.collection
        case \Settings.accessGroups: return Variable.accessGroups
        case \Settings.probeTimeout: return Variable.probeTimeout
        case \Settings.postgresqlURL: return Variable.postgresqlURL
        case \Settings.postgresqlSchema: return Variable.postgresqlSchema
        case \Settings.applicationIdentifier: return Variable.applicationIdentifier
        case \Settings.keyCacheTimeout: return Variable.keyCacheTimeout
        default: return "the environment"
        }
    }

    // MARK: Resolving

    /// Resolves the configuration: `code`, then `environment`, then the config file
    /// it names, then the defaults. Never throws: a config file or passphrase file
    /// that cannot be read is kept in ``problem``, which opening a persistent
    /// backend reports.
    public static func resolve(
        code: Settings = Settings(), environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> SecItemConfiguration {
        var problem: SecItemError?
        let file: SecItemConfigFile
        do throws(SecItemError) {
            file = try SecItemConfigFile.load(environment: environment)
        } catch {
            problem = error
            file = SecItemConfigFile(path: SecItemConfigFile.path(environment: environment), exists: true, settings: [:])
        }
        return SecItemConfiguration(
            code: code, environment: environment, configFile: file, problem: problem)
    }

    /// A configuration from `environment` alone, ignoring any config file (for
    /// backends opened directly from the environment, as their `fromEnvironment` do).
    public static func environmentOnly(_ environment: [String: String]) -> SecItemConfiguration {
        SecItemConfiguration(
            code: Settings(), environment: environment, configFile: SecItemConfigFile(path: nil, exists: false, settings: [:]),
            problem: nil)
    }

    private init(code: Settings, environment: [String: String], configFile: SecItemConfigFile, problem: SecItemError?) {
        self.code = code
        self.environmentSettings = Settings(environment: environment)
        self.configFile = configFile
        self.fileSettings = Settings(configFile: configFile)
        self.environment = environment.filter { !Variable.secrets.contains($0.key) }
        self.configFileFailed = problem != nil
        self.passphrase = nil
        self.problem = problem
        resolvePassphrase()
    }

    /// Takes the passphrase from code or the environment, else reads the passphrase
    /// file the layers name (unless the config file could not be read).
    private mutating func resolvePassphrase() {
        passphrase = code.passphrase ?? environmentSettings.passphrase
        guard !configFileFailed else { return }  // the problem stays the config file's
        problem = nil
        guard passphrase == nil,
            let path = code.passphraseFile ?? environmentSettings.passphraseFile ?? fileSettings.passphraseFile
        else { return }
        do throws(SecItemError) {
            passphrase = try PrivateFile.readPassphrase(path)
        } catch {
            problem = error
        }
    }

    /// This configuration with `code` as its code layer and the environment and config
    /// file as they were read: what `SecItemSystem.bootstrap(configuration:)` makes of
    /// the process configuration, so that a program's start-up reads the config file
    /// once (a passphrase file it names is read again).
    public func replacingCode(_ code: Settings) -> SecItemConfiguration {
        var copy = self
        copy.code = code
        copy.resolvePassphrase()
        return copy
    }

    /// This configuration with `backend` set in the code layer (what a command's
    /// `--backend NAME` or `migrate --from/--to` means), reading nothing again: a
    /// program that opens two backends resolves, and reads the config file, once.
    public func selecting(_ backend: BackendKind) -> SecItemConfiguration {
        var copy = self
        copy.code.backend = backend
        return copy
    }

    /// Throws ``problem`` when there is one: what a persistent backend's provider
    /// calls before opening anything.
    public func checkUsable() throws(SecItemError) {
        if let problem { throw problem }
    }

    public var description: String {
        var parts = ["backend: \(backend?.rawValue ?? "automatic")"]
        if let file { parts.append("file: \(file)") }
        if let collection { parts.append("collection: \(collection)") }
        parts.append("access groups: \(accessGroups.groups.joined(separator: ","))")
        if passphrase != nil { parts.append("passphrase: (set)") }
        return "SecItemConfiguration(\(parts.joined(separator: ", ")))"
    }

    // MARK: The process configuration

    private static let processState = Mutex<SecItemConfiguration?>(nil)

    /// The process's configuration: resolved from the process environment on first
    /// use, or the one given to ``setProcessConfiguration(_:)``.
    public static var process: SecItemConfiguration {
        // Resolved under the lock, so that threads racing to the first use read the
        // config file once between them (resolving touches no other lock).
        processState.withLock { state in
            if let state { return state }
            let resolved = resolve()
            state = resolved
            return resolved
        }
    }

    /// Replaces the process configuration.
    public static func setProcessConfiguration(_ configuration: SecItemConfiguration) {
        processState.withLock { $0 = configuration }
    }

    /// Replaces the code layer of the process configuration, keeping the environment
    /// and config file it read (resolving them now if nothing has yet): what
    /// `SecItemSystem.bootstrap(configuration:)` calls.
    public static func setProcessCode(_ code: Settings) {
        processState.withLock { state in state = (state ?? resolve()).replacingCode(code) }
    }
}
