public import SecItemCore
import SecItem

/// What `secitem diagnose` reports: which backend would be used and why, and for
/// each registered backend whether it is usable and why not. Opening nothing that
/// does not exist yet, creating nothing, printing no secret. The facts about each
/// backend come from its provider (``SecItemBackendProvider/diagnose(_:)``).
public struct BackendDiagnosis: Sendable {
    /// One backend's findings.
    public struct Finding: Sendable {
        /// The backend's name (`secret-service`, `file`, `memory`, …).
        public var backend: String
        /// Whether it can be used now.
        public var usable: Bool
        /// Facts, one per line (paths, modes, causes); no secrets.
        public var notes: [String]
    }

    /// The backend the process would use, or `nil` when none can be (see ``reason``).
    public var chosen: String?
    /// Why it was chosen, or why nothing can be.
    public var reason: String
    /// Whether the chosen backend looks usable.
    public var chosenUsable: Bool
    /// Per backend, in the automatic choice's order.
    public var findings: [Finding]
    /// The config file and its settings.
    public var configuration: [String]
    /// Every declared setting some layer gives, as `key = value (origin)` (secrets as `(set)`).
    public var settings: [String] = []
    /// The environment variables in effect (secrets shown as `(set)`).
    public var environment: [String]

    /// The variables `diagnose` lists when set besides the declared settings' (the
    /// command's own secrets, and where the config file is).
    static let sharedVariables = ["SECITEM_EXPORT_PASSPHRASE", "XDG_CONFIG_HOME"]

    /// The variables listed, in order (every declared setting's, the shared ones, then
    /// each registered provider's other variables, once each), and those shown as `(set)`.
    static func shownVariables() -> (names: [String], secret: Set<String>) {
        var names = SecItemBackendRegistry.settings.map(\.variable)
        var secret = SecItemConfiguration.Variable.secrets.union(SecItemSettingCatalog.secretVariables)
        for name in sharedVariables where !names.contains(name) { names.append(name) }
        for provider in SecItemBackendRegistry.providers {
            for name in provider.environmentVariables where !names.contains(name) { names.append(name) }
            secret.formUnion(provider.secretEnvironmentVariables)
        }
        return (names, secret)
    }

    /// Examines `environment` (and the config file it names) as the automatic choice would.
    public static func run(environment: [String: String]) -> BackendDiagnosis {
        run(configuration: .resolve(environment: environment), environment: environment)
    }

    /// Examines a resolved configuration; `environment` is only listed (secrets as `(set)`).
    public static func run(configuration: SecItemConfiguration, environment: [String: String]) -> BackendDiagnosis {
        var diagnosis = BackendDiagnosis(
            chosen: nil, reason: "", chosenUsable: false, findings: [], configuration: [], environment: [])
        let shown = shownVariables()
        for name in shown.names {
            // Secrets the command took out of its environment (SecretEnvironment) are still "set".
            let taken = SecretEnvironment.value(name).map { $0.isEmpty ? "" : "(set)" }
            guard let value = environment[name] ?? taken, !value.isEmpty else { continue }
            diagnosis.environment.append("\(name)=\(shown.secret.contains(name) ? "(set)" : value)")
        }

        let file = configuration.configFile
        if let path = file.path {
            diagnosis.configuration.append("config file: \(path)\(file.exists ? "" : " (not present)")")
        } else {
            diagnosis.configuration.append("config file: none (SECITEM_CONFIG=none or no home directory)")
        }
        for (key, _) in file.lines.sorted(by: { $0.value < $1.value }) {
            guard let value = file.settings[key] else { continue }
            let secret = SecItemSettingCatalog.declaration(forKey: key)?.isSecret ?? false
            diagnosis.configuration.append("  \(key) = \(secret ? "(set)" : value)")
        }
        for declaration in SecItemBackendRegistry.settings {
            guard let (value, origin) = configuration.shown(declaration) else { continue }
            diagnosis.settings.append("\(declaration.key) = \(value) (\(origin))")
        }
        if let problem = configuration.problem {
            diagnosis.configuration.append("unusable: \(problem)")
            diagnosis.reason = "the configuration is unusable: \(problem)"
            if let memory = SecItemBackendRegistry.provider(for: .memory) {
                let found = memory.diagnose(configuration)
                diagnosis.findings = [Finding(backend: memory.kind.rawValue, usable: found.usable, notes: found.notes)]
            }
            return diagnosis
        }

        var found: [BackendKind: BackendAvailability] = [:]
        for provider in SecItemBackendRegistry.providers {
            let availability = provider.diagnose(configuration)
            found[provider.kind] = availability
            diagnosis.findings.append(
                Finding(backend: provider.kind.rawValue, usable: availability.usable, notes: availability.notes))
        }

        if let kind = configuration.backend {
            diagnosis.chosen = kind.rawValue
            diagnosis.reason = SecItemBackendChoice.describe(kind, origin: configuration.backendOrigin, quoted: false)
            if let availability = found[kind] {
                diagnosis.chosenUsable = availability.usable
            } else {
                diagnosis.reason += " — but '\(kind)' is not a backend; use one of \(SecItemBackendChoice.names.joined(separator: ", "))"
            }
            return diagnosis
        }
        // The automatic choice, as SecItemBackendChoice.resolve(configuration:) makes it.
        let ranked = SecItemBackendRegistry.providers.filter { $0.automaticRank != nil }
        var why: [String] = []
        for provider in ranked {
            let availability = found[provider.kind]
            if provider.kind == ranked.last?.kind {
                diagnosis.chosen = provider.kind.rawValue
                diagnosis.reason = "automatic: \(provider.displayName), because \(why.joined(separator: "; "))"
                diagnosis.chosenUsable = availability?.usable ?? false
            } else if let availability, availability.usable {
                diagnosis.chosen = provider.kind.rawValue
                diagnosis.reason = "automatic: \(availability.summary)"
                diagnosis.chosenUsable = true
                break
            } else {
                why.append(availability?.summary ?? "\(provider.displayName) is not usable")
            }
        }
        if diagnosis.chosen == nil { diagnosis.reason = "no backend is registered for the automatic choice" }
        return diagnosis
    }
}
