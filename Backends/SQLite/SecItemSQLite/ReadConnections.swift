import Foundation
import Glibc
import SecItemCore
import SecItemSealedStore
import Synchronization

/// What a pooled read connection starts from: the keys and the state the backend's
/// first connection established and checked when the file was opened, so a reader
/// neither re-derives the key-encryption key nor repeats the open's checks (schema,
/// index roots, integrity check). Its first read synchronises as any connection
/// does when another has committed: the header and the authenticated row-set
/// commitment are read, and the schema is checked only if its version moved.
struct ReaderSeed: Sendable {
    var header: KeychainHeader
    var kek: SecretBytes
    var schemaVersion: Int64
}

/// One pooled read connection, opened on first need.
final class ReaderSlot: Sendable {
    let connection = Mutex<SQLiteConnection?>(nil)
    /// Threads using or waiting for ``connection`` (see ``ConnectionClaims``).
    let claims = ConnectionClaims()
    /// Whether ``connection`` has been opened (a thread's own slot is tried first only then).
    let opened = Atomic<Bool>(false)
}

/// How many threads hold or wait for one connection's `Mutex`, so that a thread
/// looking for a free connection asks this counter, in user space, and takes the
/// lock only when it is free.
///
/// The standard library's `Mutex` is a priority-inheritance futex on Linux: a failed
/// `withLockIfAvailable` is a `FUTEX_TRYLOCK_PI` system call, and it leaves the
/// lock marked as contended, so the holder's unlock is a second system call. A
/// reader trying the connections in turn made both on nearly every lookup: two
/// threads on two cores did no more lookups than one (the scaling benchmark, issue 24).
struct ConnectionClaims: ~Copyable, Sendable {
    private let count = Atomic<Int>(0)

    /// Claims the connection when nobody holds or waits for it.
    @inline(__always)
    func tryClaim() -> Bool {
        count.load(ordering: .relaxed) == 0 && count.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged
    }

    /// Joins the threads holding or waiting for the connection (before a blocking `withLock`).
    @inline(__always)
    func claim() { count.wrappingAdd(1, ordering: .acquiring) }

    @inline(__always)
    func release() { count.wrappingSubtract(1, ordering: .releasing) }
}

/// A number that differs between threads, the same for one thread's every call: its
/// pooled reader comes from it, so a thread keeps reading on one connection (its
/// pages and statements warm in that core's cache) instead of taking turns with others.
@inline(__always)
func threadSlotHash() -> Int {
    var x = UInt64(pthread_self())
    x ^= x >> 33
    x &*= 0xff51_afd7_ed55_8ccd
    x ^= x >> 33
    return Int(truncatingIfNeeded: x & 0x7fff_ffff)
}

extension SQLiteConnection {
    /// This connection's keys and state, for opening readers beside it.
    var readerSeed: ReaderSeed { ReaderSeed(header: header, kek: kek, schemaVersion: knownSchemaVersion) }

    /// Opens a connection that only reads, from `seed`: one `sqlite3_open`, one
    /// unwrap of the data key, two HKDFs, and one synchronisation (header and
    /// commitment; the schema only if it changed since the seed's check). Its own
    /// key contexts: libcrypto's are not shared between threads.
    static func openReader(_ configuration: SQLiteBackend.Configuration, _ seed: ReaderSeed) throws(SecItemError)
        -> SQLiteConnection
    {
        let db = try Database(
            path: configuration.path, busyTimeoutMilliseconds: Int32(clamping: configuration.busyTimeoutMilliseconds))
        guard let dataKey = try seed.header.unwrap(kek: seed.kek) else {
            throw SecItemError(
                errSecAuthFailed, "the keychain \(configuration.path) was rekeyed by another process; open it with the new key")
        }
        // Its own rollback check (not thread-safe, one per connection): the state it reads
        // is compared with this host's mark as the first connection's is.
        let connection = SQLiteConnection(
            db: db, header: seed.header, kek: seed.kek,
            codec: RowCodec(keys: try ItemKeys(dataKey: dataKey, format: Int(seed.header.format))),
            rollback: rollbackCheck(configuration, unlocked: UnlockedStoreKey(kek: seed.kek, header: seed.header)))
        connection.knownSchemaVersion = seed.schemaVersion
        connection.integrityCheckItemLimit = configuration.openIntegrityCheckItemLimit
        try connection.rollback.prime()
        try db.transaction(write: false) { () throws(SecItemError) in try connection.synchronise(force: true) }
        return connection
    }
}

extension SQLiteBackend {
    /// Runs a read on a connection no other thread is using: this thread's pooled
    /// reader when it is open and free; else the backend's first connection when it is
    /// free (so one thread alone never opens another); else any idle pooled reader
    /// (opening it); else it waits for this thread's pooled reader, never for the first
    /// connection, which a writer may be holding through its commit's fsync.
    /// Which connection is free is asked of ``ConnectionClaims`` (user space), never of
    /// a lock. Inside ``inBulkTransaction(_:)`` reads join the open transaction.
    func withReader<R: Sendable>(_ body: (SQLiteConnection) throws(SecItemError) -> R) throws(SecItemError) -> R {
        if bulkWrite.load(ordering: .acquiring) || readers.isEmpty { return try withConnection(body) }
        let own = threadSlotHash() % readers.count
        if readers[own].opened.load(ordering: .relaxed), let result = tryReader(own, body) { return try result.get() }
        if firstClaims.tryClaim() {
            defer { firstClaims.release() }
            // Nobody held or waited for it: the lock is free unless a writer claimed it
            // since and won the race to it; then this read goes to the pool.
            let onFirst = state.withLockIfAvailable { (connection: inout SQLiteConnection?) -> Result<R, SecItemError> in
                guard let connection else { return .failure(Self.closedError) }
                do throws(SecItemError) { return .success(try body(connection)) } catch { return .failure(error) }
            }
            if let onFirst { return try onFirst.get() }
        }
        for i in 0..<readers.count {
            if let result = tryReader((own &+ i) % readers.count, body) { return try result.get() }
        }
        let slot = readers[own]
        slot.claims.claim()
        defer { slot.claims.release() }
        return try slot.connection.withLock { connection in run(body, on: &connection, slot) }.get()
    }

    /// `body` on pooled reader `index` when nobody holds or waits for it, else `nil`.
    private func tryReader<R: Sendable>(_ index: Int, _ body: (SQLiteConnection) throws(SecItemError) -> R)
        -> Result<R, SecItemError>?
    {
        let slot = readers[index]
        guard slot.claims.tryClaim() else { return nil }
        defer { slot.claims.release() }
        return slot.connection.withLock { connection in run(body, on: &connection, slot) }
    }

    private func run<R: Sendable>(
        _ body: (SQLiteConnection) throws(SecItemError) -> R, on connectionSlot: inout sending SQLiteConnection?,
        _ slot: ReaderSlot
    ) -> Result<R, SecItemError> {
        do throws(SecItemError) {
            if let connection = connectionSlot { return .success(try body(connection)) }
            // `close` sets the flag before it empties the slots, each under its lock.
            guard !closed.load(ordering: .acquiring) else { return .failure(Self.closedError) }
            let seed = self.seed.withLock { $0 }
            let connection = try SQLiteConnection.openReader(configuration, seed)
            connectionSlot = connection
            slot.opened.store(true, ordering: .relaxed)
            return .success(try body(connection))
        } catch {
            return .failure(error)
        }
    }

    static var closedError: SecItemError { SecItemError(errSecNotAvailable, "the keychain file was closed") }

    /// After this backend changed the key-encryption key (rekey), or when it closes:
    /// closes every pooled reader (the next read opens one from the new seed).
    func closeReaders() {
        for slot in readers {
            slot.connection.withLock { connection in
                connection?.db.close()
                connection = nil
                slot.opened.store(false, ordering: .relaxed)
            }
        }
    }

    /// Records `connection`'s keys for readers opened from now on (after a write that changed them).
    func updateSeed(_ connection: SQLiteConnection) {
        let fresh = connection.readerSeed
        seed.withLock { $0 = fresh }
    }
}
