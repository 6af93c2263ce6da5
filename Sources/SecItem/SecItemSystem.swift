public import SecItemCore
#if Polkit
import SecItemPolkit
#endif
import Synchronization

/// The process-wide keychain: which backend the global `SecItem…` functions use.
///
/// By default the backend is chosen once per process, on first use, from the
/// process configuration (`SecItemConfiguration.process`: code → environment →
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
                accessAuthority: defaultAccessAuthority))
    }

    /// Sets the code layer of the process configuration: `settings` win over the
    /// environment and the config file, which are those the process read on first use
    /// (read once per process). The backend is chosen again on the next call.
    public static func bootstrap(configuration settings: SecItemConfiguration.Settings) {
        SecItemConfiguration.setProcessCode(settings)
        state.withLock { $0 = nil }
    }

    /// Sets this program's application identifier, its default access group (the
    /// counterpart of an Apple app's bundle identifier), in the code layer of the
    /// process configuration: ahead of `SECITEM_APPLICATION_ID` and the config file.
    /// Call it once at start-up, before the first keychain call:
    ///
    /// ```swift
    /// try SecItemSystem.bootstrap(applicationIdentifier: "com.example.app")
    /// ```
    ///
    /// Access groups listed explicitly (`SECITEM_ACCESS_GROUPS`, `access-groups`)
    /// still name every group the process is entitled to. Other code settings given
    /// to ``bootstrap(configuration:)`` are kept; the backend is chosen again on the next call.
    /// - Throws: `errSecParam` when `identifier` is empty, holds a comma or a control
    ///   character, or starts or ends with a space; nothing changes then.
    public static func bootstrap(applicationIdentifier identifier: String) throws(SecItemError) {
        if let problem = SecItemApplicationIdentifier.problem(with: identifier) {
            throw SecItemError(errSecParam, "\(problem): '\(identifier)'")
        }
        var settings = SecItemConfiguration.process.code
        settings.applicationIdentifier = identifier
        bootstrap(configuration: settings)
    }

    /// The application identifier of this process and where it came from.
    /// - Throws: `errSecParam` when the one given explicitly is unusable.
    public static func applicationIdentifier() throws(SecItemError) -> SecItemApplicationIdentifier {
        try SecItemConfiguration.process.resolvedApplicationIdentifier()
    }

    /// The client the global functions use in the current task.
    /// - Throws: `SecItemError` when the default backend cannot be opened (for
    ///   example `errSecNotAvailable`, `errSecAuthFailed`), with the reason.
    public static func currentClient() throws(SecItemError) -> SecItemClient {
        if let client = SecItemClient.taskClient { return client }
        return try defaultClient()
    }

    /// Who answers for the session lock and user presence: logind and polkit on the
    /// system bus (the `Polkit` trait), else ``HeadlessAccessAuthority`` (the session
    /// counts as unlocked; user-presence items cannot be read).
    static var defaultAccessAuthority: any AccessAuthority {
        #if Polkit
        PolkitAccessAuthority.processDefault
        #else
        HeadlessAccessAuthority()
        #endif
    }

    /// The process default client, chosen and opened on first use.
    public static func defaultClient() throws(SecItemError) -> SecItemClient {
        if let client = state.withLock({ $0 }) { return client }
        let configuration = SecItemConfiguration.process
        // A bad SECITEM_APPLICATION_ID fails before any store is opened.
        try configuration.checkApplicationIdentifier()
        let chosen = try SecItemBackendChoice.resolve(configuration: configuration)
        TestProcessWarning.check(chosen, configuration)
        // Protected items ask logind and polkit on the system bus (SecItemPolkit), when built in.
        let client = SecItemClient(
            backend: chosen.backend, accessGroups: configuration.accessGroups,
            accessAuthority: defaultAccessAuthority)
        // Another thread may have won the race; keep the first so every caller shares one store.
        return state.withLock { current in
            if let current { return current }
            current = client
            return client
        }
    }
}
