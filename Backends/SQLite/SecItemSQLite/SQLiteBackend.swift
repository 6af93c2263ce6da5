import Foundation
public import SecItemCore
public import SecItemSealedStore
import Synchronization

/// The encrypted file backend: one SQLite file, every item sealed with
/// AES-256-GCM (OpenSSL), safe under crashes, many threads and many processes.
///
/// Each item is one row: its UUID, its class, a keyed HMAC of its primary key
/// under a UNIQUE index (duplicates fail atomically, across processes), keyed
/// HMACs of `svce`, `acct`, `srvr`, `labl`, the access group and the sync state
/// for indexed lookup, and one AES-256-GCM box of every attribute and the data.
/// The random data key is stored wrapped by a key-encryption key from a
/// ``KeySource``. The format is in `docs/file-format.md`.
///
/// ```swift
/// let backend = try SQLiteBackend(configuration: .fromEnvironment())
/// let client = SecItemClient(backend: backend)
/// ```
///
/// Thread-safe: each connection lives in a `Mutex` (checked `Sendable`, no
/// `@unchecked`). Writes take turns on the first connection, as SQLite requires;
/// lookups run on it when it is free and otherwise on a pool of read
/// connections (``Configuration/readConnections``), so threads read in parallel
/// and never wait for a writer's commit. Process-safe: WAL, `synchronous=FULL`,
/// writes in `BEGIN IMMEDIATE` transactions and a busy timeout; a call returns
/// only after its change is durable.
public final class SQLiteBackend: SecItemBackend {
    /// What this backend was opened with, without its secret: a passphrase or raw
    /// key is dropped once the key is derived (here it is an empty passphrase or
    /// empty data), so the backend never holds it. Key file paths are kept.
    public let configuration: Configuration
    /// The first connection: every write, and reads when it is free.
    let state: Mutex<SQLiteConnection?>
    /// Pooled read connections (ReadConnections.swift), opened on first need.
    let readers: [ReaderSlot]
    /// What a pooled reader is opened from.
    let seed: Mutex<ReaderSeed>
    /// Threads holding or waiting for ``state`` (writers, and readers that found it free).
    let firstClaims = ConnectionClaims()
    let closed = Atomic<Bool>(false)
    /// Inside ``inBulkTransaction(_:)``: reads go to the first connection, into its open transaction.
    let bulkWrite = Atomic<Bool>(false)

    /// `file`: what users choose it by, and what diagnostics print.
    public var kind: BackendKind { .file }

    /// Opens the keychain file, creating it when missing.
    ///
    /// The key derivation (scrypt for a passphrase) runs here, once.
    /// - Throws: `errSecAuthFailed` when the key or passphrase does not unlock the
    ///   file (nothing written); `errSecInvalidKeychain` when the file is not a
    ///   keychain, is damaged, or has a newer format; `errSecNotAvailable` when the
    ///   key file is missing; `errSecParam` for a key file others can read, owned by
    ///   another user, or not holding a key; `errSecIO` for file-system failures.
    ///
    /// The passphrase or raw key in `configuration` is read here and not kept: the
    /// backend holds only the derived key-encryption key and data key, in buffers
    /// zeroed when it is closed or freed.
    public init(configuration: Configuration) throws(SecItemError) {
        self.configuration = configuration.released
        let connection = try SQLiteConnection.open(configuration)
        seed = Mutex(connection.readerSeed)
        state = Mutex(connection)
        readers = (0..<max(0, configuration.readConnections)).map { _ in ReaderSlot() }
        OpenBackends.register(self)
    }

    deinit { OpenBackends.unregister(self) }

    /// Closes the file; later calls throw `errSecNotAvailable`.
    ///
    /// The WAL is emptied first when no other connection needs it, and the last
    /// connection's close removes it. A backend still open when the process exits
    /// (`exit`, or returning from `main`: programs using the global `SecItem…`
    /// functions never close theirs) is closed by an `atexit` handler, so no WAL
    /// holding deleted items' pages is left behind.
    public func close() {
        closed.store(true, ordering: .releasing)
        closeReaders()
        state.withLock { connection in
            connection?.db.close()
            connection = nil
        }
    }

    // MARK: SecItemBackend

    public func add(_ item: StoredItem) throws(SecItemError) {
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in try c.addItem(item) }
    }

    public func fetch(matching query: ItemQuery, limit: Int?) throws(SecItemError) -> [StoredItem] {
        try withReader { (c: SQLiteConnection) throws(SecItemError) in
            try c.read { () throws(SecItemError) in try c.items(query, limit: limit) }
        }
    }

    public func update(matching query: ItemQuery, _ transform: (StoredItem) -> StoredItem) throws(SecItemError) -> Int {
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in try c.updateItems(matching: query, transform) }
    }

    public func delete(matching query: ItemQuery) throws(SecItemError) -> Int {
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in try c.deleteItems(matching: query) }
    }

    // MARK: Maintenance

    /// The file's format version: 3, or 1 or 2 for a file not yet upgraded (it is
    /// on its first write, or by ``upgrade()``).
    public var formatVersion: Int {
        (try? withConnection { (c: SQLiteConnection) throws(SecItemError) in Int(c.format) }) ?? 0
    }

    /// Where this backend keeps its rollback evidence: the witness its connections check
    /// with (the configuration's, else the key source's, else the state directory's);
    /// `nil` with the check off or the backend closed. For `secitem diagnose` and tests.
    package var rollbackWitness: (any RollbackWitness)? {
        try? withConnection { (c: SQLiteConnection) throws(SecItemError) in c.rollback.witness }
    }

    /// Checks the file's structure and schema, every row, and (format 2) the set
    /// of rows against the file's commitment.
    /// - Returns: What was found; ``VerificationReport/isIntact`` when all is well.
    /// - Throws: `errSecInvalidKeychain` when the SQLite file itself is damaged, its
    ///   schema was altered or its commitment does not authenticate.
    public func verify() throws(SecItemError) -> VerificationReport {
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in
            try c.rollback.prime()
            var report = try c.db.transaction(write: false) { () throws(SecItemError) in try c.verify() }
            report.rollback = c.rollback.finding
            return report
        }
    }

    /// Accepts the file as it is now as this host's high-water mark: after a deliberate
    /// restore of an older copy, which the rollback evidence otherwise refuses
    /// (`secitem accept-restore`). Logged by the witness (``StateDirectoryWitness``:
    /// `accepted.log` in the state directory).
    /// - Parameter note: Who accepts and why, for the log.
    /// - Returns: The mark before (`<generation>:<hex>`, `nil` when there was none) and now.
    /// - Throws: `errSecParam` when the check is off (nothing to accept); `errSecIO`
    ///   when the mark cannot be written; `errSecUnimplemented` for a format-1 file.
    public func acceptRestore(note: String) throws(SecItemError) -> (before: String?, now: String) {
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in
            let state = try c.db.transaction(write: false) { () throws(SecItemError) in try c.currentState() }
            guard let state else {
                throw SecItemError(errSecUnimplemented, "a format-1 file keeps no commitment; run `secitem upgrade` first")
            }
            let before = try c.rollback.accept(state, note: note)
            return (before?.description, state.description)
        }
    }

    /// Upgrades a format-1 or format-2 file to format 3 in one transaction (every
    /// row re-encrypted under a new data key, with its `seq` bound into its box; a
    /// format-1 file's rows also move to the format-2 table). A file is also upgraded
    /// by its first write; reading never upgrades.
    /// - Returns: Whether the file was upgraded (false: it already was format 3).
    /// - Throws: `errSecDecode` when a row is damaged (the upgrade would lose it):
    ///   the file stays format 1.
    @discardableResult
    public func upgrade() throws(SecItemError) -> Bool {
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in
            let before = c.format
            try c.write { () throws(SecItemError) in }
            return before < c.format
        }
    }

    /// How many times this backend's connection re-read the file's state because
    /// another connection had committed (tests only).
    package var synchronisations: Int {
        (try? withConnection { (c: SQLiteConnection) throws(SecItemError) in c.synchronisations }) ?? -1
    }

    /// Called with a row's index and the number of rows before a whole-file rewrite
    /// (rotation, upgrade) re-encrypts that row, inside its transaction: throwing fails
    /// the rewrite there, and it rolls back. Tests inject a failure or a pause with it
    /// (``upgrade(beforeRow:)``, ``rotateDataKey(beforeRow:)``).
    package typealias RewriteObserver = (_ index: Int, _ count: Int) throws(SecItemError) -> Void

    /// ``upgrade()`` with `beforeRow` called before each row is re-encrypted, with the
    /// upgrade's transaction open: a test's failure (it throws) or pause goes there.
    package func upgrade(beforeRow: @escaping RewriteObserver) throws(SecItemError) {
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in
            c.beforeUpgradedRow = beforeRow
            defer { c.beforeUpgradedRow = nil }
            try c.write { () throws(SecItemError) in }
        }
    }

    /// Protects the file with a new passphrase, key file or raw key.
    ///
    /// By default this *rotates*: a new random data key, every row re-encrypted,
    /// read back and checked, and the new key wrapped under the new key-encryption
    /// key, in one crash-safe transaction. So an old copy of the file plus the old
    /// passphrase or key opens nothing written after the rekey.
    ///
    /// `rewrapOnly` keeps the old, fast behaviour: the same data key, re-wrapped.
    /// An old backup plus the old secret then still opens every item added later.
    ///
    /// Other processes that have the file open must reopen it with the new key.
    /// - Throws: what opening with `newSource` would throw for a bad key file;
    ///   `errSecDecode` when a row is damaged (rotation would lose it: see
    ///   ``verify()``). The file is unchanged on any error.
    public func rekey(to newSource: KeySource, rewrapOnly: Bool = false) throws(SecItemError) {
        let newKEK = try KeyEncryptionKey.forRekey(
            newSource, configuration.keyContext, format: KeychainHeader.fileFormatVersion)
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in
            let old = c.header
            try c.write { () throws(SecItemError) in
                if rewrapOnly {
                    try c.rewrap(newKEK)
                } else {
                    try c.rewriteEverything(newKEK: newKEK)
                }
            }
            // The old key opens nothing current now; it leaves the session key cache.
            SessionKeyCache.drop(store: configuration.keyContext.store, header: old)
            updateSeed(c)
        }
        // Their key-encryption key is the old one: they reopen from the new seed.
        closeReaders()
    }

    /// Replaces the data key: every row is re-encrypted under a new random key,
    /// read back and checked, and the new key wrapped, all in one transaction.
    /// On any failure the file keeps the old key and every old row.
    /// - Throws: `errSecDecode` when a row is damaged (see ``verify()``): rotation
    ///   would lose it, so it is refused.
    public func rotateDataKey() throws(SecItemError) {
        try rotateDataKey(beforeRow: nil)
    }

    /// ``rotateDataKey()`` with `beforeRow` called before each row is re-encrypted, with
    /// the rotation's transaction open: a test's failure (it throws) or pause goes there.
    package func rotateDataKey(beforeRow: RewriteObserver?) throws(SecItemError) {
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in
            try c.write { () throws(SecItemError) in try c.rewriteEverything(newKEK: nil, beforeRow: beforeRow) }
        }
    }

    /// The SQL that creates a keychain's tables (the current format), for the
    /// benchmark's baseline, which must use the very same schema (docs/file-format.md).
    package static var schemaSQL: String { KeychainSchema.format2 }

    /// Runs `body` with every write it makes on this backend joined into one
    /// `BEGIN IMMEDIATE` transaction, committed (one fsync) when `body` returns and
    /// rolled back when it throws. For filling large keychains quickly (the
    /// benchmarks populate 100,000 items this way); not for concurrent use: calls
    /// other threads make meanwhile join the same transaction.
    package func inBulkTransaction(_ body: () throws -> Void) throws {
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in
            try c.db.execute("BEGIN IMMEDIATE")
            c.bulk = true
            bulkWrite.store(true, ordering: .releasing)
        }
        do {
            try body()
        } catch {
            try? withConnection { (c: SQLiteConnection) throws(SecItemError) in
                c.bulk = false
                bulkWrite.store(false, ordering: .releasing)
                c.forgetState()
                try c.db.execute("ROLLBACK")
            }
            throw error
        }
        try withConnection { (c: SQLiteConnection) throws(SecItemError) in
            c.bulk = false
            bulkWrite.store(false, ordering: .releasing)
            do throws(SecItemError) {
                try c.db.execute("COMMIT")
                c.forgetState()
            } catch {
                c.forgetState()
                throw error
            }
        }
    }

    func withConnection<R: Sendable>(_ body: (SQLiteConnection) throws(SecItemError) -> R) throws(SecItemError) -> R {
        // Claimed first, so readers looking for a free connection leave it alone.
        firstClaims.claim()
        defer { firstClaims.release() }
        return try state.withLock { (connection: inout SQLiteConnection?) throws(SecItemError) -> R in
            guard let connection else { throw Self.closedError }
            return try body(connection)
        }
    }
}

/// The backends of this process that are still open, closed by one `atexit`
/// handler (installed with the first): a program that never closes its store
/// (every program using the global `SecItem…` functions) leaves no WAL behind.
/// A process killed by a signal runs no handler: SQLite's recovery on the next
/// open, and the next checkpoint, deal with its WAL.
enum OpenBackends {
    private static let open = OpenObjects<SQLiteBackend>()
    private static let handler: Void = { atexit { OpenBackends.closeAll() } }()

    static func register(_ backend: SQLiteBackend) {
        _ = handler
        open.register(backend)
    }

    static func unregister(_ backend: SQLiteBackend) { open.unregister(ObjectIdentifier(backend)) }

    /// Closes every backend still open (at exit).
    static func closeAll() {
        for backend in open.removeAll() { backend.close() }
    }
}

/// Objects registered while they live, held weakly: each unregisters in its `deinit`.
///
/// No strong reference to a registered object is ever made or dropped while the lock
/// is held. Loading a weak reference makes one, and if another thread drops the
/// object's last other reference meanwhile, releasing it runs the object's `deinit`,
/// whose `unregister` would take the same lock on the same thread: Swift's `Mutex`
/// stops the process there ("Recursive call to lock Mutex"; CI's ASan step met it when
/// tests opened and dropped file backends on many threads). So entries are found by
/// identity, and weak references are loaded only after the lock is released.
package final class OpenObjects<Object: AnyObject & Sendable>: Sendable {
    private struct Entry: Sendable {
        let id: ObjectIdentifier
        weak var object: Object?
    }

    private let entries = Mutex<[Entry]>([])

    package init() {}

    /// Adds `object`; it calls ``unregister(_:)`` with its identity in its `deinit`.
    package func register(_ object: Object) {
        let entry = Entry(id: ObjectIdentifier(object), object: object)
        entries.withLock { $0.append(entry) }
    }

    /// Removes the object with this identity (from its `deinit`: no reference to it is loaded).
    package func unregister(_ id: ObjectIdentifier) {
        entries.withLock { entries in entries.removeAll { $0.id == id } }
    }

    /// Every object still alive, strongly held by the caller; the registry is left empty.
    package func removeAll() -> [Object] {
        let taken = entries.withLock { entries in
            defer { entries.removeAll() }
            return entries
        }
        return taken.compactMap(\.object)
    }

    /// How many objects are registered (tests).
    package var count: Int { entries.withLock { $0.count } }
}
