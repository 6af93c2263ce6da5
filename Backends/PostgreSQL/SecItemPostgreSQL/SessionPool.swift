import Foundation
import SecItemCore
import SecItemSealedStore
import Synchronization

/// The keys every session of one backend should hold: the newest that any of them
/// read or made (a rotation, a rekey, another host's change noticed).
///
/// `@unchecked Sendable`: `KeychainHeader` is a value; the two `SecretBytes` are
/// never written after they are made (their buffers are only read), so handing them
/// to another thread is safe. Each session builds its own ``RowCodec`` from
/// `dataKey` (the codec's libcrypto contexts and buffers are one thread's).
struct PublishedKeys: @unchecked Sendable {
    var header: KeychainHeader
    var kek: SecretBytes
    var dataKey: SecretBytes
    /// Bumped on every publication: a session holding an older one adopts these.
    var version: Int
}

/// A backend's connections: at most ``size`` sessions, each with its own libpq
/// connection and its own copy of the keys' contexts, made when that many calls
/// run at once and kept for the next call (a single-threaded program uses one).
///
/// A call takes an idle session (or makes one, or waits for one when ``size``
/// are in use), runs on it alone, and gives it back. Nothing is held across the
/// fleet but what each statement takes on the server: reads take no lock; a
/// write holds the state row from `SELECT … FOR UPDATE` to `COMMIT`
/// (``PostgreSQLSession/write(_:)``), and nothing in this process serializes
/// writes beyond that.
final class SessionPool: @unchecked Sendable {
    // @unchecked: `idle`, `keys` and `closed` are only touched under `lock`;
    // a session is used by the one thread that took it out of `idle`.
    let size: Int
    private let slots: DispatchSemaphore
    private let lock = Mutex<Void>(())
    private var idle: [PostgreSQLSession]
    private var keys: PublishedKeys
    private var closed = false
    private var made = 1
    /// Whether writes check the tables for alterations (off only in tests).
    private var checksSchema = true
    /// What a new session needs: the configuration, the connection parameters, the SQL.
    private let prototype: PostgreSQLSession.Prototype

    init(first: PostgreSQLSession, size: Int) {
        prototype = first.prototype
        self.size = max(1, size)
        slots = DispatchSemaphore(value: self.size)
        keys = first.published(version: 0)
        first.keysVersion = 0
        idle = [first]
    }

    /// Runs `body` on a session of its own: an idle one, a new one (when fewer than
    /// ``size`` exist), or the first one given back.
    func withSession<R>(_ body: (PostgreSQLSession) throws(SecItemError) -> R) throws(SecItemError) -> R {
        slots.wait()
        defer { slots.signal() }
        let session = try take()
        defer { giveBack(session) }
        return try body(session)
    }

    private func take() throws(SecItemError) -> PostgreSQLSession {
        let (session, keys, isClosed, checksSchema): (PostgreSQLSession?, PublishedKeys, Bool, Bool) = lock.withLock { _ in
            (self.closed ? nil : self.idle.popLast(), self.keys, self.closed, self.checksSchema)
        }
        if isClosed { throw SecItemError(errSecNotAvailable, "the PostgreSQL keychain was closed") }
        if let session {
            session.checksSchema = checksSchema
            if session.keysVersion != keys.version { try session.adopt(keys) }
            return session
        }
        // Fewer than `size` sessions exist (a slot was free and no session idle): make one.
        let fresh = try PostgreSQLSession.sibling(of: prototype, keys: keys)
        fresh.checksSchema = checksSchema
        lock.withLock { _ in made += 1 }
        return fresh
    }

    private func giveBack(_ session: PostgreSQLSession) {
        lock.withLock { _ in
            if session.keysVersion == keys.version, session.header.epoch != keys.header.epoch {
                // This session changed the keys (a rotation, a rekey, another host's change it noticed first).
                keys = session.published(version: keys.version + 1)
                session.keysVersion = keys.version
            } else if session.keysVersion != keys.version, session.header.epoch > keys.header.epoch {
                keys = session.published(version: keys.version + 1)
                session.keysVersion = keys.version
            }
            if !closed { idle.append(session) }
        }
    }


    /// Closes every idle session; sessions in use close when they are given back.
    func close() {
        lock.withLock { _ in
            closed = true
            idle.removeAll()
        }
    }

    /// Turns the schema check of writes off for every session (tests only).
    func skipSchemaCheck() {
        lock.withLock { _ in checksSchema = false }
    }

    /// Where an idle session is connected, without the password.
    var endpoint: String {
        lock.withLock { _ in idle.lazy.compactMap { $0.pq?.endpoint }.first } ?? "not connected"
    }

    /// The round trips the idle sessions' current connections made (tests: call it
    /// while no call runs).
    var roundTrips: Int { lock.withLock { _ in idle.reduce(0) { $0 + ($1.pq?.roundTrips ?? 0) } } }

    /// How many sessions this pool has made (tests and diagnostics).
    var sessionsMade: Int { lock.withLock { _ in made } }
}
