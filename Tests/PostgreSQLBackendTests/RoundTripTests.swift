import Foundation
import SecItemCore
import SecItemPostgreSQL
import SecItemSealedStore
import SecItemTestSupport
import Testing

/// Round trips per call (issue 24): what each operation costs on the wire, counted by
/// the backend's connections, so that a change adding one shows here.
@Suite("PostgreSQL round trips per call")
struct RoundTripTests {
    func open(_ schema: String, _ keyFile: String, rollbackCheck: RollbackCheckMode? = nil) throws
        -> (PostgreSQLBackend, SecItemClient)
    {
        let backend = try PostgreSQLBackend(
            configuration: .init(keySource: .keyFile(keyFile), schema: schema, rollbackCheck: rollbackCheck, poolSize: 1))
        return (backend, SecItemClient(backend: backend, accessGroups: AccessGroups(["rt"])))
    }

    func item(_ account: String, _ value: String) -> [String: Any] {
        ["class": "genp", "svce": "rt", "acct": account, "v_Data": Data(value.utf8)]
    }

    func lookup(_ account: String) -> [String: Any] { ["class": "genp", "svce": "rt", "acct": account, "r_Data": true] }

    /// The round trips `body` made on `backend`.
    func count(_ backend: PostgreSQLBackend, _ body: () throws -> Void) rethrows -> Int {
        let before = backend.roundTrips
        try body()
        return backend.roundTrips - before
    }

    @Test("a lookup is one round trip; an add is one once the session knows the state, and falls back when another host wrote")
    func perCall() throws {
        _ = try TestServer.directory()
        let keys = try KeyDirectory()
        let schema = freshSchema("rt")
        let (backend, client) = try open(schema, keys.keyFile)
        defer { backend.close() }
        // Another host (its high-water mark elsewhere: here, none), which writes now and then.
        let (other, otherClient) = try open(schema, keys.keyFile, rollbackCheck: .off)
        defer { other.close() }
        // Every statement prepared once (a statement's first use costs a round trip more):
        // the write transactions' (after the other host's writes) and the single statements'.
        let warm: [String: Any] = ["class": "genp", "svce": "rt", "acct": "warm-0"]
        try client.addItem(item("warm-0", "w"))
        try otherClient.addItem(item("o-0", "o"))
        _ = try client.updateItems(warm, ["v_Data": Data("x".utf8)])
        try otherClient.addItem(item("o-1", "o"))
        _ = try client.deleteItems(warm)
        try client.addItem(item("warm-0", "w"))
        _ = try client.copyMatchingItems(lookup("warm-0"))
        _ = try? client.copyMatchingItems(lookup("absent"))
        _ = try client.updateItems(warm, ["v_Data": Data("y".utf8)])
        _ = try client.deleteItems(warm)
        try client.addItem(item("warm-1", "w"))

        #expect(try count(backend) { try client.addItem(item("a", "1")) } == 1)
        #expect(try count(backend) { _ = try client.copyMatchingItems(lookup("a")) } == 1)
        #expect(count(backend) { _ = try? client.copyMatchingItems(lookup("absent")) } == 1)
        #expect(try count(backend) { try client.addItem(item("b", "2")) } == 1)
        // An update or delete: the read that finds the rows, then one statement.
        #expect(try count(backend) { try client.addItem(item("x", "0")) } == 1)
        let query: [String: Any] = ["class": "genp", "svce": "rt", "acct": "x"]
        var changed = -1
        #expect(try count(backend) { changed = try client.updateItems(query, ["v_Data": Data("9".utf8)]) } == 2)
        #expect(changed == 1)
        #expect(try client.copyMatchingItems(lookup("x")) as? Data == Data("9".utf8))
        #expect(try count(backend) { changed = try client.deleteItems(query) } == 2)
        #expect(changed == 1)
        // Nothing matches (errSecItemNotFound): the read alone.
        #expect(count(backend) { changed = (try? client.deleteItems(query)) ?? 0 } == 1)
        #expect(changed == 0)
        #expect(count(backend) { changed = (try? client.updateItems(query, ["v_Data": Data("8".utf8)])) ?? 0 } == 1)
        #expect(changed == 0)

        // Another host (its high-water mark elsewhere: here, none) writes: this one's next
        // add finds the state moved (one round trip, nothing changed), then adds in a
        // write transaction.
        try otherClient.addItem(item("c", "3"))
        let afterOther = try count(backend) { try client.addItem(item("d", "4")) }
        #expect(afterOther == 6, "a stale state: one statement that changed nothing, then BEGIN, lock, INSERT, state, COMMIT")
        #expect(try count(backend) { try client.addItem(item("e", "5")) } == 1)
        // A lookup that sees another host's newer state sends the next add straight to a transaction.
        try otherClient.addItem(item("f", "6"))
        _ = try client.copyMatchingItems(lookup("f"))
        #expect(try count(backend) { try client.addItem(item("g", "7")) } == 5)
        // An update after another host's write: the read sees the state moved, then a write transaction.
        try otherClient.addItem(item("y", "0"))
        let stale = try count(backend) {
            changed = try client.updateItems(["class": "genp", "svce": "rt", "acct": "y"], ["v_Data": Data("1".utf8)])
        }
        #expect(changed == 1)
        #expect(
            stale == 8,
            "the read and the rollback check's authenticated state row (a new state seen), then BEGIN, lock, SELECT, UPDATE, state, COMMIT")
        #expect(try otherClient.copyMatchingItems(lookup("y")) as? Data == Data("1".utf8))

        // Another process of this host writes: this host's mark is past this session's
        // state, so the add goes straight to a write transaction (which checks the store).
        let (sibling, siblingClient) = try open(schema, keys.keyFile)
        defer { sibling.close() }
        try siblingClient.addItem(item("s", "s"))
        #expect(try count(backend) { try client.addItem(item("t", "t")) } == 5)
        #expect(try count(backend) { try client.addItem(item("u", "u")) } == 1)

        // A duplicate fails in its one statement and changes nothing; the next add is still one.
        #expect(throws: SecItemError.self) { try client.addItem(item("a", "again")) }
        #expect(try count(backend) { try client.addItem(item("h", "8")) } == 1)

        for (account, value) in [("a", "1"), ("b", "2"), ("c", "3"), ("d", "4"), ("e", "5"), ("f", "6"), ("g", "7"), ("h", "8"), ("s", "s"), ("t", "t"), ("u", "u"), ("y", "1")] {
            #expect(try client.copyMatchingItems(lookup(account)) as? Data == Data(value.utf8), "\(account)")
            #expect(try otherClient.copyMatchingItems(lookup(account)) as? Data == Data(value.utf8), "\(account)")
        }
        #expect(try backend.verify() == [])
        #expect(try other.verify() == [])
        #expect(try sibling.verify() == [])
    }
}
