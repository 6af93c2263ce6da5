import Testing
import SecItemCore
import SecItemKeychain
import SecItemMemory
import SecItemSQLite
import SecItemTools
import Foundation
import Synchronization

/// A real backend that misbehaves on purpose, to break a copy where it matters:
/// - `duplicateAfter`: a batch add (``SecItemBatchAdding``) gets a second copy of
///   its first item slipped in after that many items, so the real store's own
///   batch (the file backend's one SQLite transaction) fails part-way on its
///   primary-key constraint;
/// - `alterReadOf`: reads of the item added at that position (0-based) come back
///   with another label, as from a store that does not keep what it is given.
class Meddling: SecItemBackend, @unchecked Sendable {
    let base: any SecItemBackend
    let duplicateAfter: Int?
    let alterReadOf: Int?
    /// Every item added, in order; the highest progress a batch reported.
    let log = Mutex<(added: [UUID], progress: Int)>(([], 0))

    init(_ base: any SecItemBackend, duplicateAfter: Int? = nil, alterReadOf: Int? = nil) {
        self.base = base
        self.duplicateAfter = duplicateAfter
        self.alterReadOf = alterReadOf
    }

    var kind: BackendKind { base.kind }
    var added: [UUID] { log.withLock { $0.added } }
    var progress: Int { log.withLock { $0.progress } }

    func add(_ item: StoredItem) throws(SecItemError) {
        try base.add(item)
        log.withLock { $0.added.append(item.id) }
    }

    func fetch(matching query: ItemQuery, limit: Int?) throws(SecItemError) -> [StoredItem] {
        let altered = alterReadOf.flatMap { index in log.withLock { index < $0.added.count ? $0.added[index] : nil } }
        return try base.fetch(matching: query, limit: limit).map { item in
            guard item.id == altered else { return item }
            var changed = item
            changed.attributes[SecConstant.kSecAttrLabel] = .string("not what was written")
            return changed
        }
    }

    func update(matching query: ItemQuery, _ transform: (StoredItem) -> StoredItem) throws(SecItemError) -> Int {
        try base.update(matching: query, transform)
    }

    func delete(matching query: ItemQuery) throws(SecItemError) -> Int {
        try base.delete(matching: query)
    }
}

/// ``Meddling`` over a backend that adds batches atomically (the file backend).
final class MeddlingBatch: Meddling, @unchecked Sendable, SecItemBatchAdding {
    func addAll(_ items: [StoredItem], progress: (Int) -> Void) throws(SecItemError) {
        guard let batch = base as? any SecItemBatchAdding else { throw SecItemError(errSecUnimplemented, "not a batch store") }
        var sent = items
        if let after = duplicateAfter, after < items.count {
            var twin = items[0]
            twin.id = UUID()
            sent.insert(twin, at: after)
        }
        try batch.addAll(sent) { n in
            log.withLock { $0.progress = max($0.progress, n) }
            progress(n)
        }
        log.withLock { $0.added.append(contentsOf: items.map(\.id)) }
    }
}

/// `VerifiedCopy`, the one copy → verify → roll back behind `secitem import`/`migrate`
/// (`KeychainTransfer.copy`) and every `Keychain` migration, on the real file backend.
@Suite("Verified copy: migrations and transfers, all or nothing")
struct VerifiedCopyTests {
    static let groups = AccessGroups(["verified"])

    static func source(_ count: Int) throws -> Keychain {
        let keychain = try Keychain(
            service: "com.example.legacy", client: SecItemClient(backend: MemoryBackend(), accessGroups: groups))
        for i in 0..<count { try keychain.set("secret-\(i) \u{0}\u{FF}", forKey: "user\(i)") }
        return keychain
    }

    static func keychain(_ backend: any SecItemBackend, service: String = "com.example.modern") throws -> Keychain {
        try Keychain(service: service, client: SecItemClient(backend: backend, accessGroups: groups))
    }

    static func legacyFile(_ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("legacy-\(UUID().uuidString)")
        try Data(text.utf8).write(to: url)
        return url
    }

    @Test("a Keychain migration into the file backend that fails part-way through its transaction leaves both stores unchanged")
    func migrationFailsInsideTheFileTransaction() throws {
        let file = try FileBackendStores.make()
        let source = try Self.source(5)
        let meddling = MeddlingBatch(file, duplicateAfter: 3)
        do {
            try Self.keychain(meddling).migrate(from: source, removeFromSource: true)
            Issue.record("the migration must fail")
        } catch let error as SecItemError {
            #expect(error.status == errSecDuplicateItem, "the store's own constraint: \(error)")
            #expect(error.detail?.hasPrefix("migration failed after 3 of 5 items and was rolled back") == true, "\(error)")
        }
        #expect(meddling.progress == 3, "the failure came inside the batch, after three rows were written")
        let target = try Self.keychain(file)
        #expect(try target.allKeys().isEmpty, "the transaction left nothing in the file")
        var everything = ItemQuery(itemClass: nil, accessGroups: [], synchronizable: .any)
        everything.coversEveryAccessGroup = true
        #expect(try file.fetch(matching: everything, limit: nil).isEmpty, "no row at all")
        #expect(try source.allKeys() == ["user0", "user1", "user2", "user3", "user4"], "the source is untouched")

        let report = try target.migrate(from: source, removeFromSource: true)
        #expect(report.migratedKeys.count == 5 && report.removedFromSource, "a retry on the same file moves everything")
        #expect(try target.string(forKey: "user4") == "secret-4 \u{0}\u{FF}")
        #expect(try source.allKeys().isEmpty)
    }

    @Test("a legacy file migrating into the file backend is one transaction: a failure in its second service writes nothing and keeps the file")
    func legacyFileIsOneTransaction() throws {
        let url = try Self.legacyFile(#"{"a": {"1": "x", "2": "y"}, "b": {"3": "z", "4": "w"}}"#)
        defer { try? FileManager.default.removeItem(at: url) }
        let file = try FileBackendStores.make()
        let meddling = MeddlingBatch(file, duplicateAfter: 3)
        #expect(throws: SecItemError.duplicateItem) {
            try Keychain.migrateLegacyFile(
                at: url, into: SecItemClient(backend: meddling, accessGroups: Self.groups), removeFile: true)
        }
        #expect(meddling.progress == 3, "service a and the first item of b were written inside the batch")
        #expect(try Self.keychain(file, service: "a").allKeys().isEmpty, "service a is not left behind")
        #expect(try Self.keychain(file, service: "b").allKeys().isEmpty)
        #expect(FileManager.default.fileExists(atPath: url.path), "the file is kept")

        let reports = try Keychain.migrateLegacyFile(
            at: url, into: SecItemClient(backend: file, accessGroups: Self.groups), removeFile: true)
        #expect(reports["a"]?.migratedKeys == ["1", "2"] && reports["b"]?.migratedKeys == ["3", "4"])
        #expect(try Self.keychain(file, service: "b").string(forKey: "4") == "w")
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test("a Keychain migration whose copy reads back different attributes is rolled back (the whole item is compared, not only its data)",
          arguments: [false, true])
    func migrationReadBackMismatch(fileBackend: Bool) throws {
        let store: any SecItemBackend = fileBackend ? try FileBackendStores.make() : MemoryBackend()
        let meddling = fileBackend ? MeddlingBatch(store, alterReadOf: 2) : Meddling(store, alterReadOf: 2)
        let source = try Self.source(4)
        do {
            try Self.keychain(meddling).migrate(from: source, removeFromSource: true)
            Issue.record("the migration must fail")
        } catch let error as SecItemError {
            #expect(error.status == errSecIO)
            #expect(error.detail?.hasPrefix("migration failed after 4 of 4 items and was rolled back") == true, "\(error)")
            #expect(error.detail?.contains("the key 'user2' did not read back identically") == true, "the key is named: \(error)")
            #expect(error.detail?.contains("4 removed again") == true, "\(error)")
        }
        #expect(meddling.added.count == 4, "all four were written before the check")
        #expect(try Self.keychain(store).allKeys().isEmpty, "and removed again")
        #expect(try source.allKeys().count == 4, "the source is untouched")
    }

    @Test("a transfer (secitem import/migrate) whose copy reads back differently removes everything it added",
          arguments: [false, true])
    func transferReadBackMismatch(fileBackend: Bool) throws {
        let source = try Self.source(3)
        let items = try KeychainTransfer.items(in: source.client.backend, .init(accessGroups: ["verified"])).items
        #expect(items.count == 3)
        let store: any SecItemBackend = fileBackend ? try FileBackendStores.make() : MemoryBackend()
        let meddling = fileBackend ? MeddlingBatch(store, alterReadOf: 1) : Meddling(store, alterReadOf: 1)
        do {
            try KeychainTransfer.copy(items, into: meddling)
            Issue.record("the copy must fail")
        } catch {
            #expect(error.status == errSecIO)
            #expect(error.detail?.contains("item 2 did not read back identically") == true, "\(error)")
        }
        #expect(meddling.added.count == 3)
        let left = try store.fetch(
            matching: ItemQuery(itemClass: .genericPassword, attributes: [:], accessGroups: ["verified"], synchronizable: .any),
            limit: nil)
        #expect(left.isEmpty, "the copy was removed again")
        #expect(try KeychainTransfer.copy(items, into: store) == 3, "the same items copy into the honest store")
    }

    @Test("a resumed transfer that fails its read-back names the failing item by its place in the whole list")
    func resumedTransferNamesTheItem() throws {
        let source = try Self.source(3)
        let items = try KeychainTransfer.items(in: source.client.backend, .init(accessGroups: ["verified"])).items
        let store = MemoryBackend()
        try KeychainTransfer.copy([items[2]], into: store)  // the trace of an interrupted run: the last item
        let meddling = Meddling(store, alterReadOf: 0)  // the first item this run adds: items[0]
        do {
            try KeychainTransfer.copy(items, into: meddling, resume: true)
            Issue.record("the copy must fail")
        } catch {
            #expect(error.detail?.hasPrefix("item 1 did not read back identically") == true, "\(error)")
            #expect(error.detail?.contains("after 2 of 3 items were copied; 2 removed again") == true, "\(error)")
        }
        #expect(store.count == 1, "only the item that was there before is left")
    }

}
