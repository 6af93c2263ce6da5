internal import CSecItemLibsecret
import SecItemCore
import Synchronization

/// One session with the Secret Service: the session-bus connection, an open
/// encryption session (ours, opened with plain D-Bus calls: session.c), the resolved
/// collection, and libsecret's `SecretService` proxy once something needs it (its
/// prompts: unlocking, a prompted delete or create); plus what the session has learned
/// (the collection's lock state, where primary keys' holders were last seen).
///
/// Not thread-safe on its own: ``SecretServiceConnection`` only touches it under
/// its lock. Its calls into libsecret and GDBus are in `Libsecret.swift`.
final class SecretServiceSession {
    let connection: OpaquePointer
    /// The encryption session (a `CSecItemSession`, session.c): every secret read or
    /// written goes through it.
    let secretSession: OpaquePointer
    /// libsecret's proxy, opened on first use (``libsecretService()``): the lookups never
    /// need it, and its set-up costs round trips and millions of instructions (issue 24).
    var proxy: OpaquePointer?
    let collectionPath: String
    /// How the collection was chosen ("alias default", "fallback: login", …).
    let collectionSource: String
    /// The bound on every call; a session opened by the probe with its short bound
    /// takes the backend's when the backend adopts it (``adopt(timeout:)``).
    private(set) var timeout: Duration
    let promptTimeout: Duration
    /// This session's number among those the process opened (tests tell sessions apart by it).
    let serial = SecretServiceSession.opened.add(1, ordering: .relaxed).newValue
    private static let opened = Atomic<Int>(0)

    /// What the session knows of the collection's lock state (`LockStateCache.swift`).
    var lockState = LockStateCache()
    /// Where holders of primary keys were last seen (`HolderCache.swift`).
    var holders = HolderCache()
    /// How many item property reads (`GetAll`) this session has sent: the
    /// daemon's costliest read, which data-only lookups avoid (tests check that).
    var propertyReads = 0
    /// Set when the provider answered that it does not know this session, or sent a
    /// secret the session cannot decrypt (``GErrorFacts/losesSession``): every later
    /// secret would fail the same way, so ``SecretServiceConnection`` opens a new
    /// session and runs the operation again, once.
    var sessionLost = false
    /// How many times this session has read the collection's `Locked` (tests).
    var lockReads: Int { lockState.reads }

    var timeoutMilliseconds: Int32 { timeout.milliseconds }

    private init(
        connection: OpaquePointer, secretSession: OpaquePointer, collectionPath: String,
        collectionSource: String, timeout: Duration, promptTimeout: Duration
    ) {
        self.connection = connection
        self.secretSession = secretSession
        self.collectionPath = collectionPath
        self.collectionSource = collectionSource
        self.timeout = timeout
        self.promptTimeout = promptTimeout
    }

    deinit {
        Self.release(session: secretSession, proxy: proxy, connection: connection, watch: lockState.watch)
    }

    /// Takes `timeout` as the bound of every later call (the proxy's own included).
    func adopt(timeout: Duration) {
        self.timeout = timeout
        if let proxy { Self.setProxyTimeout(proxy, timeout.milliseconds) }
    }

    // MARK: Opening

    /// What stage an open reached, for ``SecretServiceBackend/probe(configuration:)``.
    struct OpenProgress {
        var busReachable = false
        var providerAnswers = false
    }

    /// Connects, opens the service and resolves the collection, each step bounded by `timeout`.
    ///
    /// One connection (the process's session bus), no libsecret proxy, and, for the
    /// usual configurations (an alias, or none: the `default` alias), no round trip of
    /// its own for the collection: its alias is read in the same round trip as
    /// the encryption session is opened.
    static func open(
        _ configuration: SecretServiceBackend.Configuration, progress: inout OpenProgress
    ) throws(SecItemError) -> SecretServiceSession {
        let timeout = configuration.timeout
        let connection = try connectBus(timeout)
        progress.busReachable = true
        let configured = configuration.collection
        let alias = configured.map { $0.hasPrefix("/") ? nil : $0 } ?? "default"
        let secretSession: OpaquePointer
        let aliasPath: Result<String?, SecItemError>?
        do throws(SecItemError) {
            (secretSession, aliasPath) = try beginSession(connection, readingAlias: alias, timeout)
        } catch {
            g_object_unref(UnsafeMutableRawPointer(connection))
            throw error
        }
        progress.providerAnswers = true
        // From here the SecretServiceSession owns both handles.
        let resolved: (path: String, source: String)
        do throws(SecItemError) {
            resolved = try resolveCollection(configured, alias: aliasPath, connection: connection, timeout: timeout)
        } catch {
            release(session: secretSession, proxy: nil, connection: connection, watch: nil)
            throw error
        }
        return SecretServiceSession(
            connection: connection, secretSession: secretSession, collectionPath: resolved.path,
            collectionSource: resolved.source, timeout: timeout, promptTimeout: configuration.promptTimeout)
    }

    private static let loginPath = "/org/freedesktop/secrets/collection/login"

    /// The configured collection (a path or an alias), else the `default` alias
    /// (unless it points at the in-memory `session` collection), else `login`.
    /// `alias` is what the configured alias (or `default`) names, read while the
    /// service was opened; `nil` for a configured path.
    private static func resolveCollection(
        _ configured: String?, alias: Result<String?, SecItemError>?, connection: OpaquePointer, timeout: Duration
    ) throws(SecItemError) -> (path: String, source: String) {
        if let configured, configured.hasPrefix("/") {
            guard try collectionExists(configured, connection: connection, timeout: timeout) else {
                throw SecItemError(errSecNoSuchKeychain, "the collection \(configured) does not exist")
            }
            return (configured, "configured path")
        }
        let named = try (alias ?? .success(nil)).get()
        if let configured {
            guard let path = named else {
                throw SecItemError(errSecNoSuchKeychain, "no collection has the alias \"\(configured)\"")
            }
            return (path, "configured alias \"\(configured)\"")
        }
        if let path = named, !path.hasSuffix("/session") {
            return (path, "alias \"default\"")
        }
        guard try collectionExists(loginPath, connection: connection, timeout: timeout) else {
            throw SecItemError(
                errSecNoSuchKeychain, "no \"default\" collection alias and no \"login\" collection; set SECITEM_COLLECTION")
        }
        return (loginPath, "fallback to \"login\" (no \"default\" alias)")
    }
}

extension Duration {
    /// Whole milliseconds, clamped to `Int32` (GDBus's timeout type).
    var milliseconds: Int32 { Int32(clamping: wholeMilliseconds) }
}
