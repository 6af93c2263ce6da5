public import SecItemSecurity
public import SecItemModel
public import Foundation
import Synchronization

/// The process configuration, resolved once: the code, environment and config-file
/// layers, from which every declared setting is read.
///
/// The core declares a few settings (``SecItemCoreSettings``: the backend, the access
/// groups, the application identifier); each backend provider and key source declares
/// its own next to its code (``SecItemSetting``) and reads it with ``value(_:)``. Every
/// setting is taken from the first layer that gives it, in this order (``lookup(_:)``
/// is the one place that applies it, and says where the value came from, ``Origin``):
///
/// 1. **code**: a ``Settings`` value passed by the program
///    (`SecItemSystem.bootstrap(configuration:)`),
/// 2. **environment**: the setting's variable, `SECITEM_` and its key (`SECITEM_FILE`),
/// 3. **config file**: `$XDG_CONFIG_HOME/secitem/config` (``SecItemConfigFile``),
/// 4. **defaults**: the setting's default (the automatic backend choice, the default
///    access group and the backends' default paths are decided by their code).
///
/// A passphrase never travels in a dictionary: it is a ``Passphrase`` (from code,
/// `SECITEM_PASSPHRASE`, or read from `passphrase-file` by the passphrase key source),
/// zeroed when dropped and never printed.
public struct SecItemConfiguration: Sendable, CustomStringConvertible {
    /// What code says: values for declared settings (``subscript(_:)``), and the
    /// built-in settings as fields; `nil` means "not said here".
    ///
    /// The fields predate declared settings and stay for the code that uses them
    /// (`Settings(backend: .file, file: path)`); each is the value of the setting whose
    /// config-file key it names. A new setting gets no field: code sets it with
    /// `settings[MyBackendSettings.thing] = value`.
    public struct Settings: Sendable {
        /// The values, by config-file key.
        var values: [String: any Sendable] = [:]

        /// The value code gives `setting`.
        public subscript<Value>(_ setting: SecItemSetting<Value>) -> Value? {
            get { values[setting.key] as? Value }
            set { values[setting.key] = newValue.map { $0 as any Sendable } }
        }

        private subscript<Value: Sendable>(key key: String, as type: Value.Type) -> Value? {
            get { values[key] as? Value }
            set { values[key] = newValue.map { $0 as any Sendable } }
        }

        /// The backend (`backend`); `nil` everywhere means the automatic choice.
        public var backend: BackendKind? {
            get { self[key: "backend", as: BackendKind.self] }
            set { self[key: "backend", as: BackendKind.self] = newValue }
        }
        /// The file backend's SQLite file (`file`).
        public var file: String? {
            get { self[key: "file", as: String.self] }
            set { self[key: "file", as: String.self] = newValue }
        }
        /// The key file (`key-file`).
        public var keyFile: String? {
            get { self[key: "key-file", as: String.self] }
            set { self[key: "key-file", as: String.self] = newValue }
        }
        /// A file holding the passphrase (`passphrase-file`; 0600, owned by the user).
        public var passphraseFile: String? {
            get { self[key: "passphrase-file", as: String.self] }
            set { self[key: "passphrase-file", as: String.self] = newValue }
        }
        /// Which key source (`key-source`): `key-file`, `passphrase`, `automatic`, ….
        public var keySource: String? {
            get { self[key: "key-source", as: String.self] }
            set { self[key: "key-source", as: String.self] = newValue }
        }
        /// The passphrase (`SECITEM_PASSPHRASE`; never the config file).
        public var passphrase: Passphrase? {
            get { self[key: "passphrase", as: Passphrase.self] }
            set { self[key: "passphrase", as: Passphrase.self] = newValue }
        }
        /// The Secret Service collection (`collection`: alias or object path).
        public var collection: String? {
            get { self[key: "collection", as: String.self] }
            set { self[key: "collection", as: String.self] = newValue }
        }
        /// The entitled access groups (`access-groups`), the first being the default for new items.
        public var accessGroups: [String]? {
            get { self[key: "access-groups", as: [String].self] }
            set { self[key: "access-groups", as: [String].self] = newValue }
        }
        /// The bound on each step of the Secret Service probe (`probe-timeout`).
        public var probeTimeout: Duration? {
            get { self[key: "probe-timeout", as: Duration.self] }
            set { self[key: "probe-timeout", as: Duration.self] = newValue }
        }
        /// The PostgreSQL backend's libpq connection URI or `key=value` string
        /// (`postgresql-url`; a password belongs in `~/.pgpass`, not here).
        public var postgresqlURL: String? {
            get { self[key: "postgresql-url", as: String.self] }
            set { self[key: "postgresql-url", as: String.self] = newValue }
        }
        /// The PostgreSQL backend's schema (`postgresql-schema`).
        public var postgresqlSchema: String? {
            get { self[key: "postgresql-schema", as: String.self] }
            set { self[key: "postgresql-schema", as: String.self] = newValue }
        }
        /// The application identifier (`application-id`, ``SecItemApplicationIdentifier``):
        /// the default access group when ``accessGroups`` lists none.
        public var applicationIdentifier: String? {
            get { self[key: "application-id", as: String.self] }
            set { self[key: "application-id", as: String.self] = newValue }
        }

        /// How long a passphrase's derived key stays in the kernel's session key cache
        /// (`key-cache-timeout`), in whole seconds as written (`0`: no cache); checked where it is used.
        public var keyCacheTimeout: String? {
            get { self[key: "key-cache-timeout", as: String.self] }
            set { self[key: "key-cache-timeout", as: String.self] = newValue }
        }

        public init(
            backend: BackendKind? = nil, file: String? = nil, keyFile: String? = nil, passphraseFile: String? = nil,
            keySource: String? = nil, passphrase: Passphrase? = nil, collection: String? = nil,
            accessGroups: [String]? = nil, probeTimeout: Duration? = nil, postgresqlURL: String? = nil,
            postgresqlSchema: String? = nil, applicationIdentifier: String? = nil, keyCacheTimeout: String? = nil
        ) {
            self.keyCacheTimeout = keyCacheTimeout
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

    /// The environment variables of the settings that existed before settings were
    /// declared, for code that named them. Each is its declaration's `variable`
    /// (``SecItemSettingDeclaration``); a new setting is found in ``SecItemSettingCatalog``.
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
        /// The variables that hold secrets whatever is declared (shown as `(set)`, never
        /// passed on); the declared secrets are ``SecItemSettingCatalog/secretVariables``.
        public static let secrets: Set<String> = [passphrase, "SECITEM_EXPORT_PASSPHRASE", "SECITEM_NEW_PASSPHRASE"]
    }

    // MARK: The layers

    /// What code said.
    public private(set) var code: Settings
    /// The config file (path, whether present, its settings and their lines).
    public let configFile: SecItemConfigFile
    /// The process environment without its secrets, for the facts backends derive
    /// defaults from (`HOME`, `XDG_*`, `CREDENTIALS_DIRECTORY`, `DBUS_SESSION_BUS_ADDRESS`).
    public let environment: [String: String]
    /// The `SECITEM_*` variables, each held as a ``Passphrase`` (zeroed when dropped,
    /// never printed) whether or not its setting is declared a secret yet.
    private let settingVariables: [String: Passphrase]
    /// Why the config file could not be read, if it could not.
    private let readProblem: SecItemError?

    /// Why the configuration cannot open a persistent backend, or `nil`: a config file
    /// that cannot be read, or one with a key no declared setting has (naming the file
    /// and line; the keys are those declared when this is asked, see
    /// ``SecItemSettingCatalog``). The memory backend does not care.
    public var problem: SecItemError? {
        readProblem ?? configFile.unknownKeyProblem(SecItemSettingCatalog.declared)
    }

    // MARK: Reading a declared setting

    /// The value of `setting` and where it came from: code, then the environment
    /// (`setting.variable`, or the value ``SecretEnvironment`` took of it), then the
    /// config file (`setting.key`, when the setting may be there), then its default;
    /// `nil` when none gives one. Unset and empty variables and keys say nothing, unless
    /// the setting counts an empty value as given (a passphrase).
    /// - Throws: `errSecParam` when the text given is not a value of the setting, naming
    ///   the variable or the config file's line (and never a secret's text).
    public func lookup<Value>(_ setting: SecItemSetting<Value>) throws(SecItemError) -> (value: Value, origin: Origin)? {
        let declaration = setting.declaration
        if let value = code[setting] { return (value, .code) }
        // A field that holds text as written (`Settings.keyCacheTimeout`) is parsed as the environment's is.
        if let text = code.values[declaration.key] as? String {
            guard let value = setting.parse(text) else {
                throw SecItemError(errSecParam, "\(declaration.key) set in code is not valid; expected \(declaration.expected)")
            }
            return (value, .code)
        }
        if let raw = environmentValue(declaration.variable), setting.emptyIsGiven || !raw.isEmpty {
            guard let value = setting.parse(secret: raw) else {
                let shown = declaration.isSecret ? "" : " \"\(raw.exposedString())\""
                throw SecItemError(errSecParam, "\(declaration.variable) is\(shown) not valid; expected \(declaration.expected)")
            }
            return (value, .environment(declaration.variable))
        }
        if declaration.inConfigFile, let text = configFile.settings[declaration.key], !text.isEmpty {
            guard let value = setting.parse(text) else {
                let line = configFile.lines[declaration.key].map { " line \($0)" } ?? ""
                let shown = declaration.isSecret ? "" : " \"\(text)\""
                throw SecItemError(
                    errSecParam, "\(configFile.path ?? "the config file")\(line): \(declaration.key) is\(shown) not valid; expected \(declaration.expected)")
            }
            return (value, .configFile(configFile.path ?? ""))
        }
        if let value = setting.defaultValue { return (value, .defaults) }
        return nil
    }

    /// The value of `setting` (see ``lookup(_:)``), its default when no layer gives one.
    /// - Throws: `errSecParam` when the text given is not a value of the setting.
    public func value<Value>(_ setting: SecItemSetting<Value>) throws(SecItemError) -> Value? {
        try lookup(setting)?.value
    }

    /// One declared setting as `secitem diagnose` shows it: its value in words (a secret
    /// as `(set)`) and where it came from, or `nil` when no layer gives it.
    public func shown(_ declaration: SecItemSettingDeclaration) -> (value: String, origin: Origin)? {
        if let value = code.values[declaration.key] {
            return (declaration.isSecret ? "(set)" : "\(value)", .code)
        }
        if let raw = environmentValue(declaration.variable), !raw.isEmpty {
            return (declaration.isSecret ? "(set)" : raw.exposedString(), .environment(declaration.variable))
        }
        if declaration.inConfigFile, let text = configFile.settings[declaration.key], !text.isEmpty {
            return (declaration.isSecret ? "(set)" : text, .configFile(configFile.path ?? ""))
        }
        return nil
    }

    private func environmentValue(_ variable: String) -> Passphrase? {
        settingVariables[variable] ?? SecretEnvironment.value(variable)
    }

    /// The text a layer gives for config-file key `key` (code's value only when it is text).
    private func text(forKey key: String) -> String? {
        if let value = code.values[key] as? String { return value }
        if let raw = environmentValue(SecItemSettingDeclaration.variable(forKey: key)), !raw.isEmpty {
            return raw.exposedString()
        }
        if let text = configFile.settings[key], !text.isEmpty { return text }
        return nil
    }

    // MARK: The resolved settings

    /// The backend asked for, or `nil` for the automatic choice.
    public var backend: BackendKind? { (try? lookup(SecItemCoreSettings.backend))?.value }
    /// Where ``backend`` came from (``Origin/defaults`` for the automatic choice).
    public var backendOrigin: Origin { (try? lookup(SecItemCoreSettings.backend))?.origin ?? .defaults }
    /// `file`, when given (the file backend reads its declared setting).
    public var file: String? { text(forKey: "file") }
    /// `key-file`, when given.
    public var keyFile: String? { text(forKey: "key-file") }
    /// `passphrase-file`, when given.
    public var passphraseFile: String? { text(forKey: "passphrase-file") }
    /// `key-source`, when given.
    public var keySource: String? { text(forKey: "key-source") }
    /// The passphrase: given in code or `SECITEM_PASSPHRASE` (empty included), else read
    /// from ``passphraseFile`` (`nil` when it cannot be read: the passphrase key source
    /// reports why when a backend opens).
    public var passphrase: Passphrase? {
        if let given = code.passphrase ?? environmentValue(Variable.passphrase) { return given }
        return passphraseFile.flatMap { try? PrivateFile.readPassphrase($0) }
    }
    /// `collection`, when given.
    public var collection: String? { text(forKey: "collection") }
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
        let setting = SecItemCoreSettings.accessGroups
        let environmentGroups = environmentValue(setting.variable).flatMap { $0.isEmpty ? nil : setting.parse(secret: $0) }
        guard let groups = code.accessGroups ?? environmentGroups, Self.anyNonBlank(groups) else { return nil }
        return groups
    }

    /// The config file's `access-groups`, shared groups added after the program's own
    /// (empty when code or the environment list groups: those win).
    private var configFileAccessGroups: [String] {
        let setting = SecItemCoreSettings.accessGroups
        guard let text = configFile.settings[setting.key], !text.isEmpty, let groups = setting.parse(text),
            Self.anyNonBlank(groups)
        else { return [] }
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
        let key = SecItemCoreSettings.applicationIdentifier.key
        let fromFile = configFile.settings[key].flatMap { $0.isEmpty ? nil : $0 }
        return try SecItemApplicationIdentifier.process(
            code: code.applicationIdentifier, environment: environment, configFile: fromFile)
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
        let explicit = text(forKey: SecItemCoreSettings.applicationIdentifier.key) != nil
        let own = explicit ? try resolvedApplicationIdentifier().value : toolIdentifier
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
    /// `probe-timeout`: the bound on each step of the Secret Service probe; default 0.8 s.
    public var probeTimeout: Duration {
        if let given = code.probeTimeout { return given }
        guard let text = text(forKey: "probe-timeout"), let seconds = Double(text), seconds > 0, seconds <= 60 else {
            return .milliseconds(800)
        }
        return .milliseconds(Int64(seconds * 1000))
    }

    /// `postgresql-url`, when given.
    public var postgresqlURL: String? { text(forKey: "postgresql-url") }
    /// `postgresql-schema`, when given.
    public var postgresqlSchema: String? { text(forKey: "postgresql-schema") }

    // MARK: Resolving

    /// Resolves the configuration: `code`, then `environment`, then the config file
    /// it names, then the defaults. Never throws: a config file that cannot be read is
    /// kept in ``problem``, which opening a persistent backend reports.
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
        self.configFile = configFile
        let secrets = Variable.secrets.union(SecItemSettingCatalog.secretVariables)
        self.environment = environment.filter { !secrets.contains($0.key) }
        var variables: [String: Passphrase] = [:]
        for (name, value) in environment where name.hasPrefix("SECITEM_") { variables[name] = Passphrase(value) }
        self.settingVariables = variables
        self.readProblem = problem
    }

    /// This configuration with `code` as its code layer and the environment and config
    /// file as they were read: what `SecItemSystem.bootstrap(configuration:)` makes of
    /// the process configuration, so that a program's start-up reads the config file once.
    public func replacingCode(_ code: Settings) -> SecItemConfiguration {
        var copy = self
        copy.code = code
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
        if code.passphrase != nil || environmentValue(Variable.passphrase) != nil { parts.append("passphrase: (set)") }
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
