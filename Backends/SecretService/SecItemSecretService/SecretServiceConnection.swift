import SecItemCore
import Synchronization

/// The one session of a backend, behind a lock, reopened after the provider or
/// bus went away.
///
/// The lock: libsecret and GDBus proxies are not meant to be driven from several
/// threads at once, and the backend's multi-step operations (check then create,
/// update with rollback) must not interleave within a process.
///
/// Checked `Sendable`: the non-Sendable `Session` lives only inside the `Mutex`.
final class SecretServiceConnection: Sendable {
    let configuration: SecretServiceBackend.Configuration
    private let state: Mutex<Session?>

    /// Opens a session.
    init(configuration: SecretServiceBackend.Configuration) throws(SecItemError) {
        self.configuration = configuration
        var progress = Session.OpenProgress()
        state = Mutex(try Session.open(configuration, progress: &progress))
    }

    /// Takes over a session already open (the probe's), with this configuration's timeout.
    init(configuration: SecretServiceBackend.Configuration, adopting session: sending Session) {
        self.configuration = configuration
        session.adopt(timeout: configuration.timeout)
        state = Mutex(session)
    }

    /// Runs `body` with the session, reopening it if an earlier call found the
    /// provider gone. A call that finds the bus or provider unavailable drops the
    /// session so that the next call reconnects.
    func withSession<R: Sendable>(_ body: (Session) throws(SecItemError) -> R) throws(SecItemError) -> R {
        try state.withLock { (session: inout Session?) throws(SecItemError) -> R in
            let current: Session
            if let session {
                current = session
            } else {
                var progress = Session.OpenProgress()
                current = try Session.open(configuration, progress: &progress)
                session = current
            }
            do throws(SecItemError) {
                return try body(current)
            } catch {
                if error.status == errSecNotAvailable { session = nil }
                throw error
            }
        }
    }

    /// How the collection was chosen, for diagnostics.
    var collectionDescription: String? {
        state.withLock { session in session.map { "\($0.collectionPath) (\($0.collectionSource))" } }
    }
}
