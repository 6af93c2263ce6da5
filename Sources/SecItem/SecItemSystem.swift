public import SecItemCore
import SecItemPolkit
import Synchronization

/// The process-wide keychain: which backend the global `SecItem…` functions use.
///
/// By default the backend is chosen once per process, on first use, from the
/// process configuration (``SecItemConfiguration/process``: code → environment →
/// config file → defaults; see ``SecItemBackendChoice/resolve(configuration:)``). An
/// explicit ``bootstrap(_:)`` replaces the choice. A task can override it for its
/// own calls with `SecItemClient.withClient(_:operation:)`, which is how parallel
/// tests each get an isolated store.
public enum SecItemSystem {
    private static let state = Mutex<SecItemClient?>(nil)

    /// Makes `client` the process default, replacing any earlier choice.
    public static func bootstrap(_ client: SecItemClient) {
        state.withLock { $0 = client }
    }

    /// Makes `backend` the process default, with the given entitled access groups
    /// (by default the process configuration's).
    public static func bootstrap(backend: any SecItemBackend, accessGroups: AccessGroups? = nil) {
        bootstrap(
            SecItemClient(
                backend: backend, accessGroups: accessGroups ?? SecItemConfiguration.process.accessGroups,
                accessAuthority: PolkitAccessAuthority.processDefault))
    }

    /// Sets the code layer of the process configuration: `settings` win over the
    /// environment and the config file. The backend is chosen again on the next call.
    public static func bootstrap(configuration settings: SecItemConfiguration.Settings) {
        SecItemConfiguration.setProcessConfiguration(.resolve(code: settings))
        state.withLock { $0 = nil }
    }

    /// The client the global functions use in the current task.
    /// - Throws: ``SecItemError`` when the default backend cannot be opened (for
    ///   example `errSecNotAvailable`, `errSecAuthFailed`), with the reason.
    public static func currentClient() throws(SecItemError) -> SecItemClient {
        if let client = SecItemClient.taskClient { return client }
        return try defaultClient()
    }

    /// The process default client, chosen and opened on first use.
    public static func defaultClient() throws(SecItemError) -> SecItemClient {
        if let client = state.withLock({ $0 }) { return client }
        let configuration = SecItemConfiguration.process
        let chosen = try SecItemBackendChoice.resolve(configuration: configuration)
        // Protected items ask logind and polkit on the system bus (SecItemPolkit).
        let client = SecItemClient(
            backend: chosen.backend, accessGroups: configuration.accessGroups,
            accessAuthority: PolkitAccessAuthority.processDefault)
        // Another thread may have won the race; keep the first so every caller shares one store.
        return state.withLock { current in
            if let current { return current }
            current = client
            return client
        }
    }
}
