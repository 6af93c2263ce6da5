import SecItemCore
import Synchronization

/// The one session of a backend, behind a lock, reopened after the provider or
/// bus went away.
///
/// The lock: libsecret and GDBus proxies are not meant to be driven from several
/// threads at once, and the backend's multi-step operations (check then create,
/// update with rollback) must not interleave within a process.
///
/// Checked `Sendable`: the non-Sendable `SecretServiceSession` lives only inside the `Mutex`.
final class SecretServiceConnection: Sendable {
    let configuration: SecretServiceBackend.Configuration
    private let state: Mutex<SecretServiceSession?>
    /// How many sessions this connection dropped because the provider lost them
    /// (``SecretServiceSession/sessionLost``), for the tests and diagnostics.
    private let lostSessions = Atomic<Int>(0)
    var sessionsLost: Int { lostSessions.load(ordering: .relaxed) }

    /// Opens a session.
    init(configuration: SecretServiceBackend.Configuration) throws(SecItemError) {
        self.configuration = configuration
        var progress = SecretServiceSession.OpenProgress()
        state = Mutex(try SecretServiceSession.open(configuration, progress: &progress))
    }

    /// Takes over a session already open (the probe's), with this configuration's timeout.
    init(configuration: SecretServiceBackend.Configuration, adopting session: sending SecretServiceSession) {
        self.configuration = configuration
        session.adopt(timeout: configuration.timeout)
        state = Mutex(session)
    }

    /// Runs `body` with the session, reopening it if an earlier call found the
    /// provider gone. A call that finds the bus or provider unavailable drops the
    /// session so that the next call reconnects.
    ///
    /// When `body` fails because the provider lost the session's key
    /// (``SecretServiceSession/sessionLost``: the session was closed, or KWallet cannot decrypt
    /// with it), a new session is opened and `body` runs again, up to
    /// ``lostSessionRetries`` times; the operations leave nothing behind on such a
    /// failure (an add removes the item KWallet created without its secret).
    func withSession<R: Sendable>(_ body: (SecretServiceSession) throws(SecItemError) -> R) throws(SecItemError) -> R {
        try state.withLock { (session: inout SecretServiceSession?) throws(SecItemError) -> R in
            var retries = 0
            while true {
                let current: SecretServiceSession
                if let session {
                    current = session
                } else {
                    var progress = SecretServiceSession.OpenProgress()
                    current = try SecretServiceSession.open(configuration, progress: &progress)
                    session = current
                }
                do throws(SecItemError) {
                    let result = try body(current)
                    if current.sessionLost {  // lost after all that mattered: the next call opens anew
                        session = nil
                        lostSessions.add(1, ordering: .relaxed)
                    }
                    return result
                } catch {
                    if error.status == errSecNotAvailable { session = nil }
                    guard current.sessionLost else { throw error }
                    session = nil
                    lostSessions.add(1, ordering: .relaxed)
                    guard retries < Self.lostSessionRetries else { throw error }
                    retries += 1
                }
            }
        }
    }

    /// How many times an operation runs again on a new session after the provider lost
    /// the one it used. Two: kwalletd5 5.103 sometimes loses a session just opened when
    /// another session of the same connection closes (seen in the test process, where
    /// many backends share the connection; docs/secret-service-mapping.md, "Providers").
    static let lostSessionRetries = 2

    /// How the collection was chosen, for diagnostics.
    var collectionDescription: String? {
        state.withLock { session in session.map { "\($0.collectionPath) (\($0.collectionSource))" } }
    }
}
