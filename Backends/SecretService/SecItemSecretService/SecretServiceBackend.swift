internal import CSecItemLibsecret
public import SecItemCore
public import Foundation

/// Keychain items in the desktop user's keyring, through the Secret Service
/// D-Bus API (gnome-keyring, KeePassXC, KWallet's bridge) and libsecret.
///
/// Each keychain item is one Secret Service item in one collection (the
/// `default` alias unless configured); its secret is `kSecValueData`, byte-exact;
/// its attributes are readable names (`service`, `account`, …) under the
/// `xdg:schema` `org.secitem.Item`, so `secret-tool lookup service S account A`
/// and Python's `keyring.get_password(S, A)` find generic passwords stored here.
/// `docs/secret-service-mapping.md` has the whole mapping.
///
/// The Secret Service has no transactions; the backend keeps the SecItem rules
/// anyway: an add checks the primary key before and after creating (of two
/// processes racing, exactly one succeeds), an update checks every collision
/// first and puts changed items back if a later write fails.
///
/// Every D-Bus call is bounded by ``Configuration/timeout``: no bus, no provider,
/// or a provider that stops answering gives `errSecNotAvailable` within that time,
/// with a detail naming the cause. A locked collection gives
/// `errSecInteractionNotAllowed` unless the query allows interaction
/// (`kSecUseAuthenticationUI` = allow), in which case the provider's unlock
/// prompt is shown.
///
/// ```swift
/// let backend = try SecretServiceBackend()              // SECITEM_COLLECTION or "default"
/// let client = SecItemClient(backend: backend)
/// ```
///
/// Tests can give each case an empty view of the same collection with
/// ``Configuration/namespace``.
public final class SecretServiceBackend: SecItemBackend {
    /// Where and how the backend talks to the Secret Service.
    public struct Configuration: Sendable, Hashable {
        /// A collection alias (`default`, `login`, `session`, …) or object path
        /// (`/org/freedesktop/secrets/collection/…`). `nil`: the `default` alias,
        /// falling back to the `login` collection; never the in-memory `session`
        /// collection unless named here.
        public var collection: String?
        /// A store tag: when set, every item written carries the attribute
        /// `secitem-namespace` with this value and every search requires it, so
        /// backends with different namespaces see disjoint, independent stores in the
        /// same collection (tests use a fresh UUID per case). `nil`: only items
        /// without a namespace are visible.
        public var namespace: String?
        /// The bound on every D-Bus call (connecting included).
        public var timeout: Duration
        /// The bound on an unlock prompt, shown only when a query allows interaction.
        public var promptTimeout: Duration
        /// Whether items other tools stored (access group ``SecretServiceBackend/foreignItemsAccessGroup``)
        /// may have their secret updated or be deleted. Default `false`: they are
        /// read-only, and an update or delete naming their group (or one of them by
        /// persistent reference) is `errSecReadOnly`. Even when `true`, only such a
        /// named write reaches them: a search across every entitled group (the sign-out
        /// wipe `SecItemDelete([kSecClass: c])`) never does.
        /// Environment: `SECITEM_SECRET_SERVICE_FOREIGN_WRITES=1`.
        public var foreignItemsWritable: Bool
        public init(
            collection: String? = nil, namespace: String? = nil, timeout: Duration = .seconds(5),
            promptTimeout: Duration = .seconds(120), foreignItemsWritable: Bool = false
        ) {
            self.collection = collection
            self.namespace = namespace
            self.timeout = timeout
            self.promptTimeout = promptTimeout
            self.foreignItemsWritable = foreignItemsWritable
        }

        /// The configuration from the environment: `SECITEM_COLLECTION`,
        /// `SECITEM_SECRET_SERVICE_NAMESPACE`, `SECITEM_SECRET_SERVICE_TIMEOUT`
        /// (seconds, decimals allowed); unset or empty variables take the defaults.
        public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
            -> Configuration
        {
            Configuration(SecItemConfiguration.environmentOnly(environment))
        }

        /// The Secret Service part of a resolved process configuration: its
        /// collection, plus `SECITEM_SECRET_SERVICE_NAMESPACE` and
        /// `SECITEM_SECRET_SERVICE_TIMEOUT` from its environment.
        public init(_ settings: SecItemConfiguration) {
            // A value that is not one is passed over, as the defaults are safe ones
            // (`secitem diagnose` shows every setting and where it came from).
            self.init(
                collection: (try? settings.value(Settings.collection)) ?? nil,
                namespace: (try? settings.value(Settings.namespace)) ?? nil,
                foreignItemsWritable: ((try? settings.value(Settings.foreignWrites)) ?? nil) ?? false)
            if let timeout = (try? settings.value(Settings.timeout)) ?? nil { self.timeout = timeout }
        }
    }

    /// The outcome of ``probe(configuration:)``: how far a connection got.
    public struct ProbeResult: Sendable, Equatable, CustomStringConvertible {
        /// A D-Bus session bus accepted a connection.
        public var busReachable: Bool
        /// A Secret Service provider answered and opened a session.
        public var providerAnswers: Bool
        /// The collection's object path, when one was found.
        public var collectionPath: String?
        /// How the collection was chosen (for example the fallback to `login`).
        public var collectionSource: String?
        /// Whether the collection is locked, when known.
        public var locked: Bool?
        /// Why the backend is not usable, when it is not.
        public var problem: SecItemError?
        /// How long the probe took.
        public var elapsed: Duration
        /// The session the probe opened (`SecretServiceSession.serial`), for tests.
        var sessionSerial: Int?

        /// Whether the backend can be used: a provider answered and the collection
        /// was found. It may be locked (``locked``): the Secret Service is still the
        /// user's keyring, and a locked read says so (`errSecInteractionNotAllowed`).
        public var isUsable: Bool { providerAnswers && problem == nil }

        /// Whether reads work now without a prompt: usable and unlocked.
        public var isUnlocked: Bool { isUsable && locked == false }

        public var description: String {
            var parts = ["bus: \(busReachable ? "reachable" : "unreachable")"]
            parts.append("provider: \(providerAnswers ? "answers" : "none")")
            if let collectionPath { parts.append("collection: \(collectionPath) (\(collectionSource ?? ""))") }
            if let locked { parts.append(locked ? "locked" : "unlocked") }
            if let problem { parts.append("problem: \(problem)") }
            return parts.joined(separator: ", ")
        }
    }

    /// `secret-service`: what users choose it by, and what diagnostics print.
    public var kind: BackendKind { .secretService }

    /// The access group of the items other Secret Service clients stored
    /// (`secret-tool`, Python keyring, git-credential-libsecret): visible only to a
    /// client entitled to it; their secrets can be updated and they can be deleted in
    /// place only when the backend is opened with ``Configuration/foreignItemsWritable``
    /// and the write names them (docs/secret-service-mapping.md, "Items other tools stored").
    public static let foreignItemsAccessGroup = ForeignItems.accessGroup

    /// The configuration the backend was opened with.
    public let configuration: Configuration
    private let connection: SecretServiceConnection

    /// Opens the Secret Service: connects to the bus, opens a session with the
    /// provider and finds the collection, each step bounded by the timeout.
    /// - Throws: `errSecNotAvailable` (no bus, no provider, no answer),
    ///   `errSecNoSuchKeychain` (the collection does not exist).
    public init(configuration: Configuration = .fromEnvironment()) throws(SecItemError) {
        self.configuration = configuration
        connection = try SecretServiceConnection(configuration: configuration)
    }

    private init(configuration: Configuration, connection: SecretServiceConnection) {
        self.configuration = configuration
        self.connection = connection
    }

    /// The collection in use and how it was chosen, for diagnostics.
    public var collectionDescription: String? { connection.collectionDescription }

    /// Checks, within `configuration.timeout` per step, whether a bus is reachable,
    /// whether a provider answers, which collection would be used and whether it is
    /// locked. Never prompts and never throws.
    public static func probe(configuration: Configuration = .fromEnvironment()) -> ProbeResult {
        probeAndOpen(probing: configuration, then: nil).result
    }

    /// ``probe(configuration:)``, and when the probe found the Secret Service
    /// usable, a backend on the very connection and session the probe opened
    /// (no second connection), using `configuration` for its calls.
    ///
    /// With a `configuration`, the probe costs nothing beyond opening the session
    /// the backend then uses: the collection's lock state is not read
    /// (``ProbeResult/locked`` stays `nil`); the backend reads it when a search
    /// comes back empty, as it always does.
    /// - Parameters:
    ///   - probing: The configuration of the probe (its short bound per step).
    ///   - configuration: The backend's configuration; `nil`: probe only.
    public static func probeAndOpen(probing: Configuration, then configuration: Configuration?)
        -> (result: ProbeResult, backend: SecretServiceBackend?)
    {
        let start = ContinuousClock.now
        var result = ProbeResult(busReachable: false, providerAnswers: false, elapsed: .zero)
        var progress = SecretServiceSession.OpenProgress()
        var opened: SecretServiceSession?
        do throws(SecItemError) {
            let session = try SecretServiceSession.open(probing, progress: &progress)
            result.collectionPath = session.collectionPath
            result.collectionSource = session.collectionSource
            if configuration == nil { result.locked = try session.collectionLocked() }
            result.sessionSerial = session.serial
            opened = session
        } catch {
            result.problem = error
        }
        result.busReachable = progress.busReachable
        result.providerAnswers = progress.providerAnswers
        result.elapsed = ContinuousClock.now - start
        guard let configuration, let session = opened, result.isUsable else { return (result, nil) }
        let backend = SecretServiceBackend(
            configuration: configuration, connection: SecretServiceConnection(configuration: configuration, adopting: session))
        return (result, backend)
    }

    /// ``probe(configuration:)`` with the environment's configuration and the given bound.
    public static func probe(timeout: Duration) -> ProbeResult {
        var configuration = Configuration.fromEnvironment()
        configuration.timeout = timeout
        return probe(configuration: configuration)
    }

    /// Item property reads sent so far on the current session (see `SecretServiceSession.propertyReads`).
    var propertyReads: Int { (try? connection.withSession { $0.propertyReads }) ?? 0 }
    /// The paths of the items having at least `attributes`, in any namespace (tests
    /// check what the backend stored against what they compute independently).
    func searchPaths(_ attributes: [String: String]) throws(SecItemError) -> [String] {
        try connection.withSession { (session) throws(SecItemError) -> [String] in try session.search(attributes) }
    }

    /// The number of the session in use (see `SecretServiceSession.serial`).
    var sessionSerial: Int? { try? connection.withSession { $0.serial } }
    /// How many sessions the provider lost so far, each replaced by a new one (KWallet's lost sessions).
    var sessionsLost: Int { connection.sessionsLost }
    /// The provider signals counted so far on the current session (`LockStateCache`); `nil` before the watch starts.
    var lockSignals: Int32? { try? connection.withSession { $0.lockState.watch.map(SecretServiceSession.lockWatchGeneration) } }
    /// Closes the current session on the provider, leaving the backend holding it: the
    /// next secret sent or read fails as on KWallet's lost sessions (tests).
    func closeSessionOnProvider() throws(SecItemError) {
        try connection.withSession { (session) throws(SecItemError) in try session.closeOnProvider() }
    }
    /// The secrets of `paths`, read with one `GetSecrets` as a query's read does (tests).
    func secrets(atPaths paths: [String]) throws(SecItemError) -> [String: Data] {
        try connection.withSession { (session) throws(SecItemError) -> [String: Data] in try session.secrets(paths) }
    }
    /// Reads of the collection's `Locked` so far on the current session (see `SecretServiceSession.lockReads`).
    var lockReads: Int { (try? connection.withSession { $0.lockReads }) ?? 0 }

    // MARK: SecItemBackend

    private func collectionItems(_ session: SecretServiceSession) -> CollectionItems {
        CollectionItems(session: session, namespace: configuration.namespace, foreignItemsWritable: configuration.foreignItemsWritable)
    }

    public func add(_ item: StoredItem) throws(SecItemError) {
        try connection.withSession { (session) throws(SecItemError) in
            try collectionItems(session).add(item)
        }
    }

    public func fetch(matching query: ItemQuery, limit: Int?) throws(SecItemError) -> [StoredItem] {
        try connection.withSession { (session) throws(SecItemError) -> [StoredItem] in
            let found = try collectionItems(session)
                .find(query, limit: limit, loadSecrets: true)
            return found.map(\.item)
        }
    }

    public func update(matching query: ItemQuery, _ transform: (StoredItem) -> StoredItem) throws(SecItemError) -> Int {
        try connection.withSession { (session) throws(SecItemError) -> Int in
            try collectionItems(session).update(query, transform)
        }
    }

    public func delete(matching query: ItemQuery) throws(SecItemError) -> Int {
        try connection.withSession { (session) throws(SecItemError) -> Int in
            try collectionItems(session).delete(query)
        }
    }
}

extension SecretServiceBackend: SecItemForeignItemsExposing {
    /// ``foreignItemsAccessGroup``, for tools that ask by capability.
    public var foreignItemsAccessGroup: String { Self.foreignItemsAccessGroup }
}
