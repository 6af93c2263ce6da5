import Foundation
import SecItem
import SecItemCore
@testable import SecItemSecretService
import SecItemTestSupport
import Testing

/// The backend against the shared gnome-keyring-daemon; each test has a
/// namespace of its own, so they run in parallel on one collection.
@Suite("Secret Service backend")
struct SecretServiceBackendTests {
    let backend: SecretServiceBackend
    let client: SecItemClient

    init() throws {
        backend = try SharedService.backend()
        client = SharedService.client(backend)
    }

    private func genp(_ service: String, _ account: String, _ extra: [String: Any] = [:]) -> [String: Any] {
        Query.genericPassword(service, account, extra)
    }

    @Test("secrets round-trip byte-exact: NUL bytes, invalid UTF-8, 256 KiB")
    func binaryData() throws {
        let samples: [Data] = [
            Data([0x00]), Data([0x61, 0x00, 0x62, 0x00]), Data([0xFF, 0xFE, 0xC3, 0x28, 0x80]), Data(),
            Data((0..<(256 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }),
        ]
        for (i, data) in samples.enumerated() {
            try client.addItem(genp("bin", "a\(i)", [kSecValueData as String: data]))
            let back = try client.copyMatchingItems(genp("bin", "a\(i)", [kSecReturnData as String: true])) as? Data
            #expect(back == data, "sample \(i)")
        }
    }

    @Test("an item without data round-trips as one without data")
    func noData() throws {
        try client.addItem(genp("nodata", "a"))
        let data = try client.copyMatchingItems(genp("nodata", "a", [kSecReturnData as String: true]))
        #expect(data == nil)
        let both = try client.copyMatchingItems(
            genp("nodata", "a", [kSecReturnData as String: true, kSecReturnAttributes as String: true]))
        let dict = try #require(both as? [String: Any])
        #expect(dict[kSecValueData as String] == nil)
        #expect(dict[kSecAttrService as String] as? String == "nodata")
        // Empty data is data.
        try client.addItem(genp("nodata", "b", [kSecValueData as String: Data()]))
        let empty = try client.copyMatchingItems(genp("nodata", "b", [kSecReturnData as String: true])) as? Data
        #expect(empty == Data())
    }

    @Test("every attribute kind round-trips exactly, Data stays Data")
    func typedAttributes() throws {
        let date = Date(timeIntervalSinceReferenceDate: 765_432_109.123_456_7)
        let items = [
            StoredItem(
                itemClass: .genericPassword, id: UUID(),
                attributes: [
                    "acct": .data(Data([0x61, 0x00, 0xFF, 0x2C, 0x3D])), "svce": .string("svc\u{0}with NUL, = and ünïcode"),
                    "gena": .data(Data([0xDE, 0xAD, 0xBE, 0xEF])), "labl": .string("a label"), "crtr": .number(1_234),
                    "invi": .number(1), "desc": .string(""), "icmt": .number(-5),
                    "agrp": .string("test"), "sync": .number(0), "pdmn": .string("ak"),
                    "cdat": .date(date), "mdat": .date(date.addingTimeInterval(0.001)),
                ], data: Data("x".utf8)),
            StoredItem(
                itemClass: .internetPassword, id: UUID(),
                attributes: [
                    "acct": .string("user"), "srvr": .string("example.com"), "ptcl": .string("htps"),
                    "port": .number(443), "path": .string("/a b"), "atyp": .string("dflt"), "sdmn": .string(""),
                    "agrp": .string("test"), "sync": .number(1), "pdmn": .string("cku"),
                    "cdat": .date(date), "mdat": .date(date),
                ], data: nil),
            StoredItem(
                itemClass: .key, id: UUID(),
                attributes: [
                    "kcls": .number(2), "klbl": .data(Data(repeating: 0, count: 20)), "atag": .data(Data("tag".utf8)),
                    "bsiz": .number(256), "esiz": .number(256), "sdat": .date(.distantPast),
                    "edat": .date(Date(timeIntervalSinceReferenceDate: -0.5)), "type": .number(73),
                    "crtr": .number(0), "agrp": .string("test"), "sync": .number(0), "pdmn": .string("ak"),
                    "cdat": .date(date), "mdat": .date(date),
                ], data: Data([0, 1, 2])),
        ]
        for item in items {
            try backend.add(item)
            let query = ItemQuery(
                itemClass: item.itemClass, persistentReferenceID: item.id, accessGroups: ["test"], synchronizable: .any)
            let back = try backend.fetch(matching: query, limit: nil)
            #expect(back == [item], "class \(item.itemClass)")
        }
        // The same values as query constraints (String vs Data of the same bytes match for blobs).
        let byData = ItemQuery(
            itemClass: .genericPassword, attributes: ["acct": .data(Data([0x61, 0x00, 0xFF, 0x2C, 0x3D]))],
            accessGroups: ["test"])
        #expect(try backend.fetch(matching: byData, limit: nil).map(\.id) == [items[0].id])
        let byPort = ItemQuery(
            itemClass: .internetPassword, attributes: ["port": .number(443), "ptcl": .string("htps")],
            accessGroups: ["test"], synchronizable: .yes)
        #expect(try backend.fetch(matching: byPort, limit: nil).map(\.id) == [items[1].id])
    }

    @Test("duplicates, updates (collisions change nothing), deletes")
    func semantics() throws {
        try client.addItem(genp("s", "a", [kSecValueData as String: Data("1".utf8)]))
        #expect(throws: SecItemError.duplicateItem) {
            try client.addItem(genp("s", "a", [kSecValueData as String: Data("2".utf8), kSecAttrLabel as String: "x"]))
        }
        try client.addItem(genp("s", "a", [kSecAttrAccessGroup as String: "other"]))
        try client.addItem(genp("s", "a", [kSecAttrSynchronizable as String: true]))
        try client.addItem(genp("s", "b", [kSecValueData as String: Data("b".utf8)]))

        let before = try client.copyMatchingItems(
            genp("s", "a", [kSecReturnPersistentRef as String: true, kSecAttrAccessGroup as String: "test"])) as? Data
        // Renaming b to a collides: nothing changes.
        #expect(throws: SecItemError.duplicateItem) {
            try client.updateItems(genp("s", "b"), [kSecAttrAccount as String: "a"])
        }
        let b = try client.copyMatchingItems(genp("s", "b", [kSecReturnData as String: true])) as? Data
        #expect(b == Data("b".utf8))
        // Two items (both groups) cannot both become account "c".
        #expect(throws: SecItemError.duplicateItem) {
            try client.updateItems(
                [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "s"],
                [kSecAttrAccount as String: "c"])
        }
        // An update of data and label keeps the persistent ref and moves mdat forward.
        try client.updateItems(
            genp("s", "a", [kSecAttrAccessGroup as String: "test"]),
            [kSecValueData as String: Data("new".utf8), kSecAttrLabel as String: "renamed"])
        let after = try #require(
            try client.copyMatchingItems(
                genp("s", "a", [
                    kSecReturnAttributes as String: true, kSecReturnData as String: true,
                    kSecReturnPersistentRef as String: true, kSecAttrAccessGroup as String: "test",
                ])) as? [String: Any])
        #expect(after[kSecValueData as String] as? Data == Data("new".utf8))
        #expect(after[kSecAttrLabel as String] as? String == "renamed")
        #expect(after[kSecValuePersistentRef as String] as? Data == before)
        #expect(try client.deleteItems(genp("s", "a")) == 2)  // both groups, not the synchronizable one
        #expect(throws: SecItemError.itemNotFound) { try client.deleteItems(genp("s", "a")) }
        #expect(try client.deleteItems(genp("s", "a", [kSecAttrSynchronizable as String: kSecAttrSynchronizableAny])) == 1)
    }

    @Test("results come oldest first; limits and case-insensitive matching")
    func orderAndLimits() throws {
        for account in ["c", "a", "b"] {
            try client.addItem(genp("order", account))
        }
        let all = try #require(
            try client.copyMatchingItems([
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "order",
                kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true,
            ]) as? [[String: Any]])
        #expect(all.map { $0[kSecAttrAccount as String] as? String } == ["c", "a", "b"])
        let two = try #require(
            try client.copyMatchingItems([
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "order",
                kSecMatchLimit as String: 2, kSecReturnAttributes as String: true,
            ]) as? [[String: Any]])
        #expect(two.map { $0[kSecAttrAccount as String] as? String } == ["c", "a"])
        let folded = try client.copyMatchingItems([
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "ORDER",
            kSecMatchCaseInsensitive as String: true, kSecMatchLimit as String: kSecMatchLimitAll,
        ])
        #expect((folded as? [Any])?.isEmpty == true)  // no return keys: success, empty array
        #expect(throws: SecItemError.itemNotFound) {
            try client.copyMatchingItems(genp("ORDER", "a"))
        }
    }

    @Test("namespaces are disjoint views of one collection")
    func namespaces() throws {
        try client.addItem(genp("ns", "a", [kSecValueData as String: Data("mine".utf8)]))
        let other = SharedService.client(try SharedService.backend())
        #expect(throws: SecItemError.itemNotFound) { try other.copyMatchingItems(genp("ns", "a")) }
        try other.addItem(genp("ns", "a", [kSecValueData as String: Data("theirs".utf8)]))
        let mine = try client.copyMatchingItems(genp("ns", "a", [kSecReturnData as String: true])) as? Data
        #expect(mine == Data("mine".utf8))
    }

    @Test("many threads at once: adds serialise, one success per primary key")
    func threads() throws {
        let successes = Mutex(0)
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 16) { i in
            do {
                try client.addItem(genp("threads", "distinct-\(i)"))
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
            do {
                try client.addItem(genp("threads", "same"))
                successes.withLock { $0 += 1 }
            } catch SecItemError.duplicateItem {
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(successes.withLock { $0 } == 1)
        let all = try client.copyMatchingItems([
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "threads",
            kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnPersistentRef as String: true,
        ]) as? [Data]
        #expect(all?.count == 17)
    }

    @Test("a data-only lookup by a whole primary key sends no GetAll")
    func dataOnlyLookups() throws {
        // One entitled group: a query naming service and account pins the whole key.
        let single = SecItemClient(backend: backend, accessGroups: AccessGroups(["test"]))
        try single.addItem(genp("lean", "a", [kSecValueData as String: Data("pw".utf8)]))
        try single.addItem(genp("lean", "none"))
        let before = backend.propertyReads
        // Where the add left each holder: its attributes and secret at once.
        let data = try single.copyMatchingItems(genp("lean", "a", [kSecReturnData as String: true])) as? Data
        #expect(data == Data("pw".utf8))
        #expect(try single.copyMatchingItems(genp("lean", "none", [kSecReturnData as String: true])) == nil)
        #expect(throws: SecItemError.itemNotFound) {
            try single.copyMatchingItems(genp("lean", "missing", [kSecReturnData as String: true]))
        }
        #expect(backend.propertyReads == before, "hits and a miss read no item's properties")
        // Another session of the same store knows no holders: a search by hash, then the secret.
        let fresh = try SharedService.backend(namespace: try #require(backend.configuration.namespace))
        let other = SecItemClient(backend: fresh, accessGroups: AccessGroups(["test"]))
        #expect(try other.copyMatchingItems(genp("lean", "a", [kSecReturnData as String: true])) as? Data == data)
        #expect(fresh.propertyReads == 0)
        // The holder's attributes come with its secret (the access check needs pdmn and accc), so
        // they also say an item has no data: no general path.
        #expect(try other.copyMatchingItems(genp("lean", "none", [kSecReturnData as String: true])) == nil)
        #expect(fresh.propertyReads == 0)
        // Attributes asked: the general path.
        _ = try single.copyMatchingItems(genp("lean", "a", [kSecReturnAttributes as String: true]))
        #expect(backend.propertyReads == before + 1)
        // Two entitled groups: the key is not pinned, the general path answers the same.
        #expect(try client.copyMatchingItems(genp("lean", "a", [kSecReturnData as String: true])) as? Data == data)
        #expect(backend.propertyReads == before + 2)
    }

    @Test("a miss reads the collection's lock state only when a provider signal came in since")
    func missesAndLockState() throws {
        let single = SecItemClient(backend: backend, accessGroups: AccessGroups(["test"]))
        let miss = { (account: String) in
            _ = #expect(throws: SecItemError.itemNotFound) {
                try single.copyMatchingItems(self.genp("misses", account, [kSecReturnData as String: true]))
            }
        }
        miss("first")
        let reads = backend.lockReads
        #expect(reads >= 1, "the first miss asks")
        // Tests running in parallel write to the same collection (each write is a
        // signal), so some misses may ask again: at most once per signal counted.
        let signals = try #require(backend.lockSignals, "the first miss starts the watch")
        for i in 0..<20 { miss("m\(i)") }
        let newSignals = Int(try #require(backend.lockSignals) - signals)
        #expect(
            backend.lockReads - reads <= min(20, newSignals + 1),
            "\(backend.lockReads - reads) of 20 misses read the lock state, with \(newSignals) signals in between")
        // A write makes the provider signal ItemCreated: the next miss asks again.
        try SharedService.client(try SharedService.backend()).addItem(genp("misses", "elsewhere"))
        let beforeWrite = backend.lockReads
        miss("after")
        #expect(backend.lockReads == beforeWrite + 1)
    }

    @Test("where a holder was last seen is only a hint: changes by another session are seen")
    func staleHolders() throws {
        let single = SecItemClient(backend: backend, accessGroups: AccessGroups(["test"]))
        let other = SecItemClient(
            backend: try SharedService.backend(namespace: try #require(backend.configuration.namespace)),
            accessGroups: AccessGroups(["test"]))
        let lookup = { (account: String) throws -> Data? in
            try single.copyMatchingItems(self.genp("stale", account, [kSecReturnData as String: true])) as? Data
        }
        try single.addItem(genp("stale", "a", [kSecValueData as String: Data("1".utf8)]))
        #expect(try lookup("a") == Data("1".utf8))
        // Deleted and added again elsewhere: a new item at a new path.
        try other.deleteItems(genp("stale", "a"))
        try other.addItem(genp("stale", "a", [kSecValueData as String: Data("2".utf8)]))
        #expect(try lookup("a") == Data("2".utf8))
        // Its data changed elsewhere.
        try other.updateItems(genp("stale", "a"), [kSecValueData as String: Data("3".utf8)])
        #expect(try lookup("a") == Data("3".utf8))
        // Moved to another primary key elsewhere: the old key has no holder, the new one has.
        try other.updateItems(genp("stale", "a"), [kSecAttrAccount as String: "b"])
        #expect(throws: SecItemError.itemNotFound) { try lookup("a") }
        #expect(try lookup("b") == Data("3".utf8))
        // Its data removed elsewhere (an item without data answers nil).
        try other.deleteItems(genp("stale", "b"))
        try other.addItem(genp("stale", "b"))
        #expect(try lookup("b") == nil)
    }

    @Test("the primary-key hash separates namespaces, so a lookup by it stays in its store")
    func primaryKeyHashPerNamespace() throws {
        let service = "hash-\(UUID().uuidString)"
        let plain = SharedService.client(try SecretServiceBackend(configuration: .init(timeout: .seconds(10))))
        defer { _ = try? plain.deleteItems([kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service]) }
        let group: [String: Any] = [kSecAttrAccessGroup as String: "test"]
        try client.addItem(genp(service, "a", group.merging([kSecValueData as String: Data("namespaced".utf8)]) { $1 }))
        let lookup = genp(service, "a", group.merging([kSecReturnData as String: true]) { $1 })
        #expect(throws: SecItemError.itemNotFound) { try plain.copyMatchingItems(lookup) }
        try plain.addItem(genp(service, "a", group.merging([kSecValueData as String: Data("plain".utf8)]) { $1 }))
        #expect(try plain.copyMatchingItems(lookup) as? Data == Data("plain".utf8))
        #expect(try client.copyMatchingItems(lookup) as? Data == Data("namespaced".utf8))
        let key = PrimaryKey(itemClass: .genericPassword, attributes: [
            "svce": .string(service), "acct": .string("a"), "agrp": .string("test"), "sync": .number(0),
        ])
        // The hash computed from the key alone finds exactly the item each store wrote.
        let namespaced = ItemCodec.primaryKeyHash(key, namespace: backend.configuration.namespace)
        let unnamespaced = ItemCodec.primaryKeyHash(key, namespace: nil)
        #expect(namespaced != unnamespaced)
        #expect(ItemCodec.primaryKeyHash(key, namespace: "x") != ItemCodec.primaryKeyHash(key, namespace: "y"))
        let inNamespace = try backend.searchPaths([ItemCodec.Reserved.primaryKey: namespaced])
        let outside = try backend.searchPaths([ItemCodec.Reserved.primaryKey: unnamespaced])
        #expect(inNamespace.count == 1 && outside.count == 1 && inNamespace != outside, "\(inNamespace) \(outside)")
        let all = try backend.searchPaths(["service": service])
        #expect(Set(all) == Set(inNamespace + outside))
    }

    @Test("the collection is the default alias, never session")
    func collection() throws {
        let description = try #require(backend.collectionDescription)
        #expect(description.contains(SharedService.defaultCollection))
        let probe = SecretServiceBackend.probe(timeout: .seconds(5))
        #expect(probe.isUnlocked)
        #expect(probe.collectionPath == SharedService.defaultCollection)
    }

    @Test("the probe's session is the session the backend then uses: no second connection")
    func probeSessionIsReused() throws {
        var probing = SecretServiceBackend.Configuration(namespace: "probe-\(UUID().uuidString)", timeout: .milliseconds(800))
        var using = probing
        using.timeout = .seconds(5)
        let (result, opened) = SecretServiceBackend.probeAndOpen(probing: probing, then: using)
        let backend = try #require(opened, "\(result)")
        let serial = try #require(result.sessionSerial)
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["test"]))
        try client.addItem(genp("probe-reuse", "a", [kSecValueData as String: Data("x".utf8)]))
        #expect(try client.copyMatchingItems(genp("probe-reuse", "a", [kSecReturnData as String: true])) as? Data == Data("x".utf8))
        // Unless the provider lost the session meanwhile (KWallet: about 1 in 100-250), which the backend counts.
        #expect(backend.sessionSerial == serial || backend.sessionsLost > 0, "the backend opened a session of its own")
        #expect(backend.configuration.timeout == .seconds(5))
        // Probing alone hands over nothing.
        probing.namespace = nil
        #expect(SecretServiceBackend.probeAndOpen(probing: probing, then: nil).backend == nil)
    }
}

import Synchronization
