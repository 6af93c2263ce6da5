import Foundation
import SecItem
import SecItemCore
import SecItemPolkit

/// What every verb runs with: the environment (with the config file applied by
/// the SecItem module) and the backend asked for on the command line.
struct Invocation: Sendable {
    let environment: [String: String]
    let arguments: ParsedArguments

    /// The environment with `--backend` applied (checked by ``backend(_:)`` before any verb runs).
    var effectiveEnvironment: [String: String] {
        var env = environment
        if let backend = arguments.value("backend") { env["SECITEM_BACKEND"] = backend }
        return env
    }

    /// `--backend`'s value as a backend this build has, or `nil` when not given.
    /// - Throws: a usage error naming the flag and the backends there are.
    static func backend(_ arguments: ParsedArguments) throws(CommandError) -> BackendKind? {
        guard let name = arguments.value("backend") else { return nil }
        return try backend(named: name)
    }

    /// The backend `name` names in this build.
    /// - Throws: a usage error naming `--backend` and the backends there are.
    static func backend(named name: String) throws(CommandError) -> BackendKind {
        let kind = BackendKind(rawValue: name)
        guard SecItemBackendRegistry.provider(for: kind) != nil else {
            throw CommandError(
                .usage, "--backend: '\(name)' is not a backend; use one of \(SecItemBackendChoice.names.joined(separator: ", "))")
        }
        return kind
    }

    /// Opens the keychain this invocation uses: `--backend`, else the process choice.
    func client() throws(CommandError) -> SecItemClient {
        try Self.client(SecItemConfiguration.resolve(environment: effectiveEnvironment))
    }

    /// The command's own application identifier: where items added without -G go
    /// when no group or application identifier is configured.
    static let toolIdentifier = "org.secitem.cli"

    /// The operator's entitlements: every group (docs/cli.md, "Access groups").
    static func entitlements(_ configuration: SecItemConfiguration) throws(SecItemError) -> AccessGroups {
        try configuration.operatorAccessGroups(toolIdentifier: toolIdentifier)
    }

    /// Opens the backend `configuration` names, or its automatic choice. Commands that
    /// open two (migrate) resolve the configuration once and pass
    /// ``SecItemConfiguration/selecting(_:)`` of it for each.
    ///
    /// The passphrase taken from `SECITEM_PASSPHRASE` at start-up is dropped once the
    /// backend is open (the backend keeps only the key derived from it), unless
    /// `keepPassphrase` says another backend is still to be opened with it.
    static func client(_ configuration: SecItemConfiguration, keepPassphrase: Bool = false) throws(CommandError)
        -> SecItemClient
    {
        defer { if !keepPassphrase { SecretEnvironment.forget(SecItemConfiguration.Variable.passphrase) } }
        do {
            let choice = try SecItemBackendChoice.resolve(configuration: configuration)
            noteFallback(choice, configuration)
            return SecItemClient(
                backend: choice.backend, accessGroups: try entitlements(choice.configuration),
                accessAuthority: PolkitAccessAuthority.processDefault)
        } catch {
            let which = configuration.backend.map { "the \($0) backend" } ?? "the keychain"
            throw CommandError(error, context: "cannot open \(which)")
        }
    }

    /// Says so on stderr when the automatic choice passed over a Secret Service that
    /// answered on the session bus but could not be used (no login collection, say):
    /// the items then go to the encrypted file, which the user may not expect.
    /// A configured backend (`SECITEM_BACKEND`, `--backend`, the config file) says nothing.
    static func noteFallback(_ choice: SecItemBackendChoice, _ configuration: SecItemConfiguration) {
        guard configuration.backend == nil, choice.backend.kind != .secretService else { return }
        let status = SecItemSecretServiceStatus.probe(configuration)
        guard status.providerAnswers else { return }
        Console.error(
            "secitem: note: \(status.summary); using the \(choice.backend.kind) keychain instead "
                + "(`secitem diagnose` says more; SECITEM_BACKEND or --backend chooses one and silences this)\n")
    }
}
