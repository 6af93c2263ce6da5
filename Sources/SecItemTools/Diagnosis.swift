import SecItemCore
import SecItemSQLite
import SecItem
import Foundation

/// What `secitem diagnose` reports: which backend would be used and why, and for
/// each backend whether it is usable and why not. Opening nothing that does not
/// exist yet, creating nothing, printing no secret.
public struct BackendDiagnosis: Sendable {
    /// One backend's findings.
    public struct Finding: Sendable {
        /// `secret-service`, `file` or `memory`.
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
    /// The environment variables in effect (secrets shown as `(set)`).
    public var environment: [String]

    static let secretVariables: Set<String> = ["SECITEM_PASSPHRASE", "SECITEM_EXPORT_PASSPHRASE"]
    static let shownVariables = [
        "SECITEM_BACKEND", "SECITEM_FILE", "SECITEM_KEY_FILE", "SECITEM_KEY_SOURCE", "SECITEM_PASSPHRASE",
        "SECITEM_PASSPHRASE_FILE", "SECITEM_COLLECTION", "SECITEM_ACCESS_GROUPS", "SECITEM_CONFIG",
        "SECITEM_PROBE_TIMEOUT", "SECITEM_EXPORT_PASSPHRASE", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR",
        "XDG_DATA_HOME", "XDG_CONFIG_HOME", "CREDENTIALS_DIRECTORY",
    ]

    /// Examines `environment` as the automatic choice would.
    public static func run(environment: [String: String]) -> BackendDiagnosis {
        var diagnosis = BackendDiagnosis(
            chosen: nil, reason: "", chosenUsable: false, findings: [], configuration: [], environment: [])
        for name in shownVariables {
            guard let value = environment[name], !value.isEmpty else { continue }
            diagnosis.environment.append("\(name)=\(secretVariables.contains(name) ? "(set)" : value)")
        }

        var configBackend: String?
        do throws(SecItemError) {
            let file = try SecItemConfigFile.load(environment: environment)
            if let path = file.path {
                diagnosis.configuration.append("config file: \(path)\(file.exists ? "" : " (not present)")")
            } else {
                diagnosis.configuration.append("config file: none (SECITEM_CONFIG=none or no home directory)")
            }
            for (key, _) in SecItemConfigFile.variables {
                if let value = file.settings[key] { diagnosis.configuration.append("  \(key) = \(value)") }
            }
            configBackend = file.settings["backend"].flatMap { $0.isEmpty ? nil : $0 }
        } catch {
            diagnosis.configuration.append("config file: unusable: \(error)")
            diagnosis.reason = "the config file is unusable: \(error)"
            diagnosis.findings = [memoryFinding()]
            return diagnosis
        }
        let effective: [String: String]
        do throws(SecItemError) {
            effective = try SecItemSettings.effectiveEnvironment(environment)
        } catch {
            diagnosis.reason = "the configuration is unusable: \(error)"
            return diagnosis
        }

        let service = SecretServiceStatus.probe(environment: effective)
        var serviceNotes = [service.busAddress.map { "bus: \($0) (from \(service.busSource))" } ?? "bus: none (\(service.busSource))"]
        serviceNotes.append(service.summary)
        if service.busAddress != nil {
            serviceNotes.append("probe took \(milliseconds(service.elapsed)) ms (bound \(milliseconds(SecretServiceStatus.timeout(effective))) ms per step)")
        }
        let file = fileFinding(effective)
        diagnosis.findings = [
            Finding(backend: "secret-service", usable: service.isUsable, notes: serviceNotes), file, memoryFinding(),
        ]

        if let name = environment["SECITEM_BACKEND"], !name.isEmpty {
            diagnosis.chosen = name
            diagnosis.reason = "SECITEM_BACKEND=\(name)"
        } else if let name = configBackend {
            diagnosis.chosen = name
            diagnosis.reason = "backend = \(name) in the config file"
        } else if service.isUsable {
            diagnosis.chosen = "secret-service"
            diagnosis.reason = "automatic: \(service.summary)"
        } else {
            diagnosis.chosen = "file"
            diagnosis.reason = "automatic: the encrypted file, because \(service.summary)"
        }
        if let chosen = diagnosis.chosen {
            if let finding = diagnosis.findings.first(where: { $0.backend == chosen }) {
                diagnosis.chosenUsable = finding.usable
            } else {
                diagnosis.reason += " — but '\(chosen)' is not a backend; use one of \(BackendChoice.names.joined(separator: ", "))"
            }
        }
        return diagnosis
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    private static func memoryFinding() -> Finding {
        Finding(
            backend: "memory", usable: true,
            notes: ["never chosen automatically; SECITEM_BACKEND=memory gives a store that lives as long as the process"])
    }

    private static func fileFinding(_ env: [String: String]) -> Finding {
        let configuration: SQLiteBackend.Configuration
        do throws(SecItemError) {
            configuration = try SQLiteBackend.Configuration.fromEnvironment(env)
        } catch {
            return Finding(backend: "file", usable: false, notes: ["not configurable: \(error)"])
        }
        var notes = ["file: \(configuration.path)"]
        var usable = true
        let exists = FileManager.default.fileExists(atPath: configuration.path)
        if !exists {
            let directory = (configuration.path as NSString).deletingLastPathComponent
            notes.append("the file does not exist yet; it is created (0600, in a 0700 directory) on first use under \(directory)")
        }
        var keyFile: String?
        switch configuration.keySource {
        case .keyFile(let path):
            notes.append("key: key file \(path)")
            keyFile = path
        case .passphrase:
            notes.append(
                "key: passphrase from \(env["SECITEM_PASSPHRASE_FILE"].map { "the passphrase file \($0)" } ?? "SECITEM_PASSPHRASE")")
        case .rawKey:
            notes.append("key: a raw key given in code")
        case .automatic:
            let path = configuration.generatedKeyFilePath
            if FileManager.default.fileExists(atPath: path) {
                notes.append("key: the generated key file \(path) (protects a copy of the database alone, not against someone who can read your files)")
                keyFile = path
            } else {
                notes.append("key: a key file is generated at \(path) on first use")
            }
        }
        if let keyFile, let problem = SecItemSettings.permissionProblem(keyFile) {
            notes.append("key file refused: \(problem)")
            usable = false
        }
        if let passphraseFile = env["SECITEM_PASSPHRASE_FILE"], let problem = SecItemSettings.permissionProblem(passphraseFile) {
            notes.append("passphrase file refused: \(problem)")
            usable = false
        }
        if usable && exists {
            do throws(SecItemError) {
                let backend = try SQLiteBackend(configuration: configuration)
                backend.close()
                notes.append("opened and unlocked")
            } catch {
                notes.append("cannot be opened: \(error)")
                usable = false
            }
        }
        return Finding(backend: "file", usable: usable, notes: notes)
    }
}
