public import SecItemCore
import Synchronization
#if SecretService
import SecItemSecretService
#endif

/// The backends selectable by name and by the automatic choice: one
/// `SecItemBackendProvider` each. The built-in ones (`file`, `memory`, and with
/// their package traits `secret-service` and `postgresql`) are registered from the start; a program or another module adds its
/// own with ``register(_:)`` before the first keychain call, and
/// `SECITEM_BACKEND=NAME` or `backend = NAME` then selects it.
public enum SecItemBackendRegistry {
    private static let state: Mutex<[any SecItemBackendProvider]> = {
        registerKeySources()
        return Mutex(builtIn)
    }()

    /// Declares the built-in providers' and key sources' settings (and adds the key sources
    /// beside optional backends): what the core calls, through the link-time hook
    /// (`secitem_declare_builtin_settings` below), before it first reads the declared
    /// settings. So the config file knows every built-in key whenever a configuration is
    /// resolved, also in a program that has not touched the registry yet.
    package static func declareBuiltIn() {
        registerKeySources()
        for provider in builtIn { SecItemSettingCatalog.declare(provider.settings) }
    }

    /// Adds the key sources that live beside an optional backend to the sealed store's
    /// list (`SECITEM_KEY_SOURCE=secret-service`, `portal`: they need GLib, which the
    /// sealed store does not link). Runs before any provider resolves a configuration;
    /// tools that open a file store without a provider call it first.
    package static func registerKeySources() {
        #if SecretService
        DesktopKeySources.register()
        #endif
    }

    /// The providers this build has: the file and memory stores always, the others
    /// when their package trait is on (`Package.swift`, docs/traits.md).
    private static var builtIn: [any SecItemBackendProvider] {
        var providers: [any SecItemBackendProvider] = []
        #if SecretService
        providers.append(SecItemSecretServiceBackendProvider())
        #endif
        providers.append(SecItemFileBackendProvider())
        #if PostgreSQL
        providers.append(SecItemPostgreSQLBackendProvider())
        #endif
        providers.append(SecItemMemoryBackendProvider())
        return providers
    }

    /// Adds `provider`, replacing a provider of the same kind, and declares its settings
    /// (the provider's `settings`: the config file accepts their keys).
    public static func register(_ provider: any SecItemBackendProvider) {
        SecItemSettingCatalog.declare(provider.settings)
        state.withLock { providers in
            providers.removeAll { $0.kind == provider.kind }
            providers.append(provider)
        }
    }

    /// Every provider: the automatically chosen ones in the order they are tried,
    /// then the others in the order they were registered.
    public static var providers: [any SecItemBackendProvider] {
        let all = state.withLock { $0 }
        let ranked = all.filter { $0.automaticRank != nil }.sorted { $0.automaticRank! < $1.automaticRank! }
        return ranked + all.filter { $0.automaticRank == nil }
    }

    /// The provider registered for `kind`.
    public static func provider(for kind: BackendKind) -> (any SecItemBackendProvider)? {
        state.withLock { providers in providers.first { $0.kind == kind } }
    }

    /// The names `SECITEM_BACKEND` accepts.
    public static var names: [String] { providers.map(\.kind.rawValue) }

    /// Every declared setting: the core's, then each registered provider's (what
    /// `secitem diagnose`, `--help`, `secitem-config(5)` and docs/settings.md list).
    public static var settings: [SecItemSettingDeclaration] { SecItemSettingCatalog.declared }
}

/// The other end of the core's link-time hook (`CSecItemLinkHook`): a program that links
/// this module has it, and the core calls it once, before its first read of the declared
/// settings. Not API: the C name is the contract.
@_cdecl("secitem_declare_builtin_settings")
package func secitemDeclareBuiltinSettings() {
    SecItemBackendRegistry.declareBuiltIn()
}

/// Which backend to use, and why.
public struct SecItemBackendChoice: Sendable {
    /// The opened backend.
    public let backend: any SecItemBackend
    /// Why it was chosen, in words, for `secitem diagnose`.
    public let reason: String
    /// The configuration it was chosen from (its access groups go with the backend).
    public let configuration: SecItemConfiguration

    /// The backend names `SECITEM_BACKEND` accepts.
    public static var names: [String] { SecItemBackendRegistry.names }

    /// Opens the backend `configuration` names, or the automatic choice's.
    ///
    /// The automatic choice tries the ranked providers in order (the Secret Service,
    /// then the encrypted file): the first whose probe finds it usable is opened;
    /// the last is the fallback and opened without a probe. Never the memory backend.
    /// - Throws: `errSecParam` for a name no provider has; what opening throws.
    public static func resolve(configuration: SecItemConfiguration) throws(SecItemError) -> SecItemBackendChoice {
        if let kind = configuration.backend {
            let origin = configuration.backendOrigin
            guard let provider = SecItemBackendRegistry.provider(for: kind) else {
                throw SecItemError(
                    errSecParam, "\(describe(kind, origin: origin, quoted: true)) is not a backend; use one of \(names.joined(separator: ", "))")
            }
            return SecItemBackendChoice(
                backend: try provider.open(configuration), reason: describe(kind, origin: origin, quoted: false),
                configuration: configuration)
        }
        try configuration.checkUsable()
        let ranked = SecItemBackendRegistry.providers.filter { $0.automaticRank != nil }
        guard let fallback = ranked.last else {
            throw SecItemError(errSecNotAvailable, "no backend is registered for the automatic choice")
        }
        var why: [String] = []
        for provider in ranked.dropLast() {
            let found = provider.probe(configuration)
            guard found.usable else {
                why.append(found.summary)
                continue
            }
            do throws(SecItemError) {
                let backend: any SecItemBackend
                if let opened = found.opened { backend = opened } else { backend = try provider.open(configuration) }
                return SecItemBackendChoice(backend: backend, reason: "automatic: \(found.summary)", configuration: configuration)
            } catch {
                why.append("\(provider.displayName) answered the probe but could not be opened: \(error)")
            }
        }
        let backend = try fallback.open(configuration)
        return SecItemBackendChoice(
            backend: backend, reason: "automatic: \(fallback.displayName), because \(why.joined(separator: "; "))",
            configuration: configuration)
    }

    /// Opens the backend `environment` (with its config file) asks for, or the automatic choice.
    public static func resolve(environment: [String: String]) throws(SecItemError) -> SecItemBackendChoice {
        try resolve(configuration: .resolve(environment: environment))
    }

    /// How a named backend was asked for: `SECITEM_BACKEND=file`, `backend = file in the config file …`.
    package static func describe(_ kind: BackendKind, origin: SecItemConfiguration.Origin, quoted: Bool) -> String {
        let name = quoted ? "'\(kind)'" : "\(kind)"
        switch origin {
        case .environment(let variable): return "\(variable)=\(name)"
        case .configFile(let path): return "backend = \(name) in the config file \(path)"
        case .code: return "backend \(name) set in code"
        case .defaults: return "backend \(name)"
        }
    }
}
