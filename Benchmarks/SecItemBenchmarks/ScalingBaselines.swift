import CSecItemCrypto
import CSecItemSQLite3
import Foundation
import Glibc
import SecItem
import Synchronization

/// The minimal designs under threads, measured beside the backends in the scaling
/// group so the machine's own limit is visible: what two cores give when nothing
/// but the irreducible work is shared.
///
/// - Memory: the memory group's baseline (a Swift dictionary keyed by service and
///   account, the data beside it), the same `[String: Any]` query an app builds, kept
///   twice so that a lookup never waits for an add (``MemoryStore``).
/// - File: the file group's minimal design (`MinimalFileKeychain`: one HMAC, one
///   indexed SELECT, one AES-256-GCM open per lookup; one HMAC, one seal and one
///   durable INSERT per add, WAL, `synchronous=FULL`) with each thread on its own
///   SQLite connection and its own libcrypto contexts, opened before the run: no pool,
///   no lock of its own. Only SQLite's and the kernel's sharing of one file remain.
enum ScalingBaselines {
    /// The memory baseline: a lookup never waits for an add (the smallest way to
    /// that: two copies of the dictionary, Left-Right). A reader announces itself on
    /// one of two counters, reads the copy the writer published and leaves; the
    /// writer (one at a time) inserts into the other copy, publishes it, waits for
    /// the readers of the old one to leave and inserts there too. A plain
    /// `pthread_rwlock_t` here gave no floor: its writer, adding without pause, took
    /// the lock again before a woken reader ran (a lone reader kept 3% of its lookups).
    final class MemoryStore: @unchecked Sendable {
        // @unchecked: a copy's `entries` is written only by the writer holding `writer`,
        // while no reader reads that copy (the counters drained after it was unpublished).
        final class Copy {
            var entries: [String: Data] = [:]
        }

        private let left = Copy()
        private let right = Copy()
        private let published = Atomic<Int>(0)
        private let version = Atomic<Int>(0)
        private let readers0 = Atomic<Int>(0)
        private let readers1 = Atomic<Int>(0)
        private let writer: UnsafeMutablePointer<pthread_mutex_t>

        init(items: Int) {
            writer = .allocate(capacity: 1)
            pthread_mutex_init(writer, nil)
            for i in 0..<items {
                let key = Workload.service + "\u{0}" + Workload.account(i)
                left.entries[key] = Workload.data(i)
                right.entries[key] = Workload.data(i)
            }
        }

        deinit {
            pthread_mutex_destroy(writer)
            writer.deallocate()
        }

        static func key(_ query: [String: Any]) -> String {
            (query[kSecAttrService as String] as? String ?? "") + "\u{0}" + (query[kSecAttrAccount as String] as? String ?? "")
        }

        func lookup(_ account: String) -> Bool {
            let key = Self.key(Workload.lookupQuery(account))
            let v = version.load(ordering: .sequentiallyConsistent)
            if v == 0 { readers0.wrappingAdd(1, ordering: .sequentiallyConsistent) } else { readers1.wrappingAdd(1, ordering: .sequentiallyConsistent) }
            defer {
                if v == 0 { readers0.wrappingSubtract(1, ordering: .sequentiallyConsistent) } else { readers1.wrappingSubtract(1, ordering: .sequentiallyConsistent) }
            }
            let copy = published.load(ordering: .sequentiallyConsistent) == 0 ? left : right
            return copy.entries[key] != nil
        }

        private func drain(_ v: Int) {
            func count() -> Int {
                v == 0 ? readers0.load(ordering: .sequentiallyConsistent) : readers1.load(ordering: .sequentiallyConsistent)
            }
            while count() != 0 { sched_yield() }
        }

        func add(_ k: Int, tag: String) {
            let query = Workload.addQuery(k, items: 1_000, account: "w-\(tag)-\(k)")
            let key = Self.key(query)
            let data = query[kSecValueData as String] as? Data ?? Data()
            pthread_mutex_lock(writer)
            defer { pthread_mutex_unlock(writer) }
            let p = published.load(ordering: .sequentiallyConsistent)
            (p == 0 ? right : left).entries[key] = data
            published.store(1 - p, ordering: .sequentiallyConsistent)
            let v = version.load(ordering: .sequentiallyConsistent)
            drain(1 - v)
            version.store(1 - v, ordering: .sequentiallyConsistent)
            drain(v)
            (p == 0 ? left : right).entries[key] = data
        }
    }

    /// One connection of the file baseline: `MinimalFileKeychain`'s lookup and add on a
    /// file whose keys it is given, so that every thread opens the same file.
    final class FileConnection {
        private let db: OpaquePointer
        private let hmac: OpaquePointer
        private let gcm: OpaquePointer
        private let select, insert: OpaquePointer
        private var plain = [UInt8](repeating: 0, count: 1024)
        private var pk = [UInt8](repeating: 0, count: 32)

        /// Opens (with `create`: creates, with the minimal design's one table) `path`.
        init(path: String, keys: [UInt8], create: Bool) throws {
            let handle = try BaselineConnection.openMinimal(path: path, create: create)
            db = handle
            (hmac, gcm) = try BaselineConnection.contexts(keys: keys)
            func prepare(_ sql: String) throws -> OpaquePointer { try BaselineConnection.prepare(handle, sql) }
            select = try prepare("SELECT box FROM items WHERE pk = ?")
            insert = try prepare("INSERT INTO items(pk, box) VALUES (?, ?)")
        }

        deinit {
            sqlite3_finalize(select)
            sqlite3_finalize(insert)
            sqlite3_close_v2(db)
            csecitem_hmac_free(hmac)
            csecitem_gcm_free(gcm)
        }

        private func key(_ account: String) -> Bool {
            let message = RawFileKeychain.primaryKeyBytes(account: account)
            return message.withUnsafeBufferPointer { m in
                pk.withUnsafeMutableBufferPointer { csecitem_hmac_run(hmac, m.baseAddress, m.count, nil, 0, $0.baseAddress) }
            } == 0
        }

        /// One HMAC, one indexed SELECT, one GCM open: whether the item was there and opened.
        func lookup(_ account: String) -> Bool {
            guard key(account) else { return false }
            pk.withUnsafeBytes { _ = sqlite3_bind_blob(select, 1, $0.baseAddress, 32, nil) }
            defer { sqlite3_reset(select) }
            guard sqlite3_step(select) == SQLITE_ROW, let b = sqlite3_column_blob(select, 0) else { return false }
            let count = Int(sqlite3_column_bytes(select, 0))
            guard count >= 28 else { return false }
            let n = count - 28
            if plain.count < n { plain = [UInt8](repeating: 0, count: n) }
            let c = b.assumingMemoryBound(to: UInt8.self)
            let rc = plain.withUnsafeMutableBufferPointer { csecitem_gcm_open(gcm, c, pk, 32, c + 12, n, c + 12 + n, $0.baseAddress) }
            plain.withUnsafeMutableBytes { csecitem_cleanse($0.baseAddress, n) }
            return rc == 0
        }

        /// One HMAC, one seal, one INSERT in its own durable transaction.
        func add(account: String, label: String, data: [UInt8]) throws {
            guard key(account) else { throw BenchmarkError("HMAC") }
            let box = try BaselineConnection.sealMinimal(gcm, pk: pk, account: account, label: label, data: data)
            pk.withUnsafeBytes { _ = sqlite3_bind_blob(insert, 1, $0.baseAddress, 32, csecitem_sqlite_transient()) }
            box.withUnsafeBytes { _ = sqlite3_bind_blob(insert, 2, $0.baseAddress, Int32($0.count), csecitem_sqlite_transient()) }
            let step = sqlite3_step(insert)
            sqlite3_reset(insert)
            guard step == SQLITE_DONE else { throw BenchmarkError("sqlite: \(String(cString: sqlite3_errmsg(db)))") }
        }

        func bulk(_ body: () throws -> Void) throws {
            sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
            try body()
            sqlite3_exec(db, "COMMIT", nil, nil, nil)
        }
    }

    /// The file baseline's connections: one per reading thread and one for the writer,
    /// each used by one thread at a time (the scaling run gives thread `t` connection
    /// `t`, the writer the last), so none needs a lock.
    final class FileStore: @unchecked Sendable {
        // @unchecked: connection `i` is used only by the thread the run numbers `i`.
        private let connections: [FileConnection]

        init(path: String, items: Int, readers: Int) throws {
            var keys = try randomBytes(64)
            defer { csecitem_cleanse(&keys, 64) }
            let first = try FileConnection(path: path, keys: keys, create: true)
            try first.bulk {
                for i in 0..<items {
                    try first.add(account: Workload.account(i), label: Workload.label(i, items: items), data: bytes(Workload.data(i)))
                }
            }
            connections = try [first] + (0..<readers).map { _ in try FileConnection(path: path, keys: keys, create: false) }
        }

        func lookup(thread: Int, _ account: String) -> Bool { connections[1 + thread].lookup(account) }

        func add(_ k: Int, tag: String) {
            _ = try? connections[0].add(account: "w-\(tag)-\(k)", label: Workload.label(k, items: 1_000), data: bytes(Workload.data(k)))
        }
    }
}
