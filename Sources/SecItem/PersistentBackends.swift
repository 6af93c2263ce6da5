import SecItemCore
import SecItemSQLite
import SecItemSecretService
import Foundation

// The persistent backends and the automatic choice (docs/cli.md, "Which keychain").
//
// Order: an explicit `SecItemSystem.bootstrap` → `SECITEM_BACKEND` (both handled in
// SecItemSystem.swift) → `backend =` in the config file → the probe: the Secret
// Service when a session bus is reachable and a provider answers within a short
// bound, else the encrypted file. Never the memory backend unless asked.

extension BackendChoice {
    static func openPersistent(_ name: String, environment: [String: String]) throws(SecItemError) -> any SecItemBackend {
        let env = try SecItemSettings.effectiveEnvironment(environment)
        switch name {
        case "file":
            return try SQLiteBackend(configuration: SQLiteBackend.Configuration.fromEnvironment(env))
        default:
            let bus = SessionBus.locate(env)
            guard bus.address != nil else {
                throw SecItemError(errSecNotAvailable, "the Secret Service needs a D-Bus session bus: \(bus.source)")
            }
            return try SecretServiceBackend(configuration: SecretServiceBackend.Configuration.fromEnvironment(env))
        }
    }

    static func automatic(environment: [String: String]) throws(SecItemError) -> BackendChoice {
        let file = try SecItemConfigFile.load(environment: environment)
        if let name = file.settings["backend"], !name.isEmpty {
            return BackendChoice(
                backend: try open(name, environment: environment),
                reason: "backend = \(name) in the config file \(file.path ?? "")")
        }
        let env = try SecItemSettings.effectiveEnvironment(environment)
        let status = SecretServiceStatus.probe(environment: env)
        var why = status.summary
        if status.isUsable {
            do {
                let backend = try openPersistent("secret-service", environment: environment)
                return BackendChoice(backend: backend, reason: "automatic: \(status.summary)")
            } catch {
                why = "the Secret Service answered the probe but could not be opened: \(error)"
            }
        }
        let backend = try openPersistent("file", environment: environment)
        return BackendChoice(backend: backend, reason: "automatic: the encrypted file, because \(why)")
    }
}
