import Foundation
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
            rollback: RollbackCheck.make(
                mode: configuration.rollbackCheck, witness: configuration.rollbackWitness, keySource: configuration.keySource,
                store: witnessed(configuration.path),
                environment: configuration.environment ?? ProcessInfo.processInfo.environment))
        connection.knownSchemaVersion = seed.schemaVersion
        connection.integrityCheckItemLimit = configuration.openIntegrityCheckItemLimit
        try connection.rollback.prime()
        try db.transaction(write: false) { () throws(SecItemError) in try connection.synchronise(force: true) }
        return connection
    }
}

extension SQLiteBackend {
    /// Runs a read on a connection no other thread is using: the backend's first
    /// connection when it is free (so one thread alone never opens another), else an
    /// idle pooled reader, else it waits for a pooled reader, never for the first
    /// connection, which a writer may be holding through its commit's fsync.
    /// Inside ``inBulkTransaction(_:)`` reads join the open transaction.
    func withReader<R: Sendable>(_ body: (SQLiteConnection) throws(SecItemError) -> R) throws(SecItemError) -> R {
        if bulkWrite.load(ordering: .acquiring) || readers.isEmpty { return try withConnection(body) }
        let onFirst = state.withLockIfAvailable { (connection: inout SQLiteConnection?) -> Result<R, SecItemError> in
            guard let connection else { return .failure(Self.closedError) }
            do throws(SecItemError) { return .success(try body(connection)) } catch { return .failure(error) }
        }
        if let onFirst { return try onFirst.get() }
        let start = nextReader.wrappingAdd(1, ordering: .relaxed).oldValue
        for i in 0..<readers.count {
            let slot = readers[(start &+ i) % readers.count]
            if let result = slot.connection.withLockIfAvailable({ connection in run(body, on: &connection) }) {
                return try result.get()
            }
        }
        return try readers[start % readers.count].connection.withLock { connection in run(body, on: &connection) }.get()
    }

    private func run<R: Sendable>(_ body: (SQLiteConnection) throws(SecItemError) -> R, on slot: inout sending SQLiteConnection?)
        -> Result<R, SecItemError>
    {
        do throws(SecItemError) {
            if let connection = slot { return .success(try body(connection)) }
            // `close` sets the flag before it empties the slots, each under its lock.
            guard !closed.load(ordering: .acquiring) else { return .failure(Self.closedError) }
            let seed = self.seed.withLock { $0 }
            let connection = try SQLiteConnection.openReader(configuration, seed)
            slot = connection
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
            }
        }
    }

    /// Records `connection`'s keys for readers opened from now on (after a write that changed them).
    func updateSeed(_ connection: SQLiteConnection) {
        let fresh = connection.readerSeed
        seed.withLock { $0 = fresh }
    }
}
