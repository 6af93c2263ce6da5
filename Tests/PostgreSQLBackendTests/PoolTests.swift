import Foundation
import SecItemConformance
import SecItemCore
import SecItemPostgreSQL
import SecItemTestSupport
import Synchronization
import Testing

/// The connection pool: calls from many threads run at once, each on a connection
/// of its own, and every read still agrees with what was written.
@Suite("PostgreSQL connection pool")
struct PoolTests {
    func open(_ schema: String, _ keyFile: String, poolSize: Int = 8) throws -> (PostgreSQLBackend, SecItemClient) {
        let backend = try PostgreSQLBackend(
            configuration: .init(keySource: .keyFile(keyFile), schema: schema, poolSize: poolSize))
        return (backend, SecItemClient(backend: backend, accessGroups: AccessGroups(["pool"])))
    }

    /// One step a thread took and what it saw, for the failure message.
    struct Failure: Sendable, CustomStringConvertible {
        var thread: Int
        var step: Int
        var what: String
        var description: String { "thread \(thread) step \(step): \(what)" }
    }

    @Test("32 threads mixing adds, updates, deletes and lookups: every read agrees with a model; the pool stays bounded")
    func thirtyTwoThreadsAgainstAModel() throws {
        _ = try TestServer.directory()
        let keys = try KeyDirectory()
        let schema = freshSchema("pool")
        let (backend, client) = try open(schema, keys.keyFile, poolSize: 8)
        let root = SeededRandom()
        print("PoolTests.thirtyTwoThreadsAgainstAModel seed \(root.seed) (replay: SECITEM_TEST_SEED=\(root.seed))")
        let threads = 32, steps = 40, accounts = 6
        // Each thread owns its accounts ("t<thread>-<k>"): its model of them is exact.
        // It also reads other threads' accounts: whatever it finds must be a value
        // that account was given (its owner, account and a version), never garbage.
        let failures = Mutex<[Failure]>([])
        let models = Mutex<[[String: String]]>(Array(repeating: [:], count: threads))
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            var rng = root.derived(t)
            var model: [String: String] = [:]
            func fail(_ step: Int, _ what: String) { failures.withLock { $0.append(Failure(thread: t, step: step, what: what)) } }
            for step in 0..<steps {
                let account = "t\(t)-\(Int.random(in: 0..<accounts, using: &rng))"
                let value = "\(account)-v\(step)"
                let query: [String: Any] = ["class": "genp", "svce": "pool", "acct": account]
                do throws(SecItemError) {
                    switch Int.random(in: 0..<10, using: &rng) {
                    case 0..<3:
                        do throws(SecItemError) {
                            try client.addItem(query.merging(["v_Data": Data(value.utf8)]) { $1 })
                            if model[account] != nil { fail(step, "add of \(account) succeeded over \(model[account]!)") }
                            model[account] = value
                        } catch where error.status == errSecDuplicateItem {
                            if model[account] == nil { fail(step, "add of absent \(account): errSecDuplicateItem") }
                        }
                    case 3..<5:
                        do throws(SecItemError) {
                            try client.updateItems(query, ["v_Data": Data(value.utf8)])
                            if model[account] == nil { fail(step, "update of absent \(account) succeeded") }
                            model[account] = value
                        } catch where error.status == errSecItemNotFound {
                            if model[account] != nil { fail(step, "update of \(account): not found, model \(model[account]!)") }
                        }
                    case 5:
                        do throws(SecItemError) {
                            try client.deleteItems(query)
                            if model[account] == nil { fail(step, "delete of absent \(account) succeeded") }
                            model[account] = nil
                        } catch where error.status == errSecItemNotFound {
                            if model[account] != nil { fail(step, "delete of \(account): not found, model \(model[account]!)") }
                        }
                    case 6..<9:
                        let found = try? client.copyMatchingItems(query.merging(["r_Data": true]) { $1 }) as? Data
                        let text = found.map { String(decoding: $0, as: UTF8.self) }
                        if text != model[account] { fail(step, "read \(account): \(text ?? "nothing"), model \(model[account] ?? "nothing")") }
                    default:
                        // Someone else's account: absent, or a value its owner gave it.
                        let other = "t\(Int.random(in: 0..<threads, using: &rng))-\(Int.random(in: 0..<accounts, using: &rng))"
                        let found = try? client.copyMatchingItems(
                            ["class": "genp", "svce": "pool", "acct": other, "r_Data": true]) as? Data
                        if let found {
                            let text = String(decoding: found, as: UTF8.self)
                            if !text.hasPrefix(other + "-v") { fail(step, "read \(other): \(text)") }
                        }
                    }
                } catch {
                    fail(step, "\(account): unexpected \(error.status) \(error.detail ?? error.message)")
                }
            }
            models.withLock { $0[t] = model }
        }
        let found = failures.withLock { $0 }
        #expect(found.isEmpty, "seed \(root.seed): \(found.prefix(8).map(\.description))")
        // The whole keychain is the union of the threads' models, byte for byte.
        let expected = models.withLock { $0.reduce(into: [String: String]()) { $0.merge($1) { a, _ in a } } }
        let all = try? client.copyMatchingItems(
            ["class": "genp", "svce": "pool", "m_Limit": "m_LimitAll", "r_Attributes": true, "r_Data": true])
        var actual: [String: String] = [:]
        for entry in all as? [[String: Any]] ?? [] {
            if let account = entry["acct"] as? String, let data = entry["v_Data"] as? Data {
                actual[account] = String(decoding: data, as: UTF8.self)
            }
        }
        #expect(actual == expected, "seed \(root.seed): the keychain differs from the model")
        #expect(try backend.verify() == [])
        #expect(backend.connectionsOpened <= 8, "the pool opened \(backend.connectionsOpened) connections (bound 8)")
        #expect(backend.connectionsOpened > 1, "32 threads ran on one connection")
    }

    @Test("a pool of one serializes calls on one connection; a rotation by one session reaches the others without a reopen")
    func keysReachEverySession() throws {
        _ = try TestServer.directory()
        let keys = try KeyDirectory()
        let schema = freshSchema("poolkeys")
        let (backend, client) = try open(schema, keys.keyFile, poolSize: 4)
        for i in 0..<8 { try client.addItem(["class": "genp", "svce": "pool", "acct": "a\(i)", "v_Data": Data("v\(i)".utf8)]) }
        // Open several sessions at once, then rotate and rekey on one of them.
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            _ = try? client.copyMatchingItems(["class": "genp", "svce": "pool", "acct": "a\(i)", "r_Data": true])
        }
        try backend.rotateDataKey()
        let staged = keys.path + "/new.key"
        try KeyDirectory.writeKey(staged)
        try backend.rekey(to: .keyFile(staged))
        let wrong = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 32) { i in
            let v = try? client.copyMatchingItems(["class": "genp", "svce": "pool", "acct": "a\(i % 8)", "r_Data": true]) as? Data
            if v != Data("v\(i % 8)".utf8) { wrong.withLock { $0 += 1 } }
        }
        #expect(wrong.withLock { $0 } == 0)
        #expect(try backend.verify() == [])

        let (single, singleClient) = try open(schema, staged, poolSize: 1)
        DispatchQueue.concurrentPerform(iterations: 16) { i in
            _ = try? singleClient.copyMatchingItems(["class": "genp", "svce": "pool", "acct": "a\(i % 8)", "r_Data": true])
        }
        #expect(single.connectionsOpened == 1)
    }

    @Test("SECITEM_POSTGRESQL_POOL_SIZE: read, bounded, a bad value refused with errSecParam")
    func poolSizeSetting() throws {
        let keys = try KeyDirectory()
        let base = ["SECITEM_KEY_FILE": keys.keyFile]
        #expect(try PostgreSQLBackend.Configuration.fromEnvironment(base).poolSize == 8)
        #expect(try PostgreSQLBackend.Configuration.fromEnvironment(base.merging(["SECITEM_POSTGRESQL_POOL_SIZE": "3"]) { $1 }).poolSize == 3)
        for bad in ["0", "257", "many", "-1"] {
            do {
                _ = try PostgreSQLBackend.Configuration.fromEnvironment(base.merging(["SECITEM_POSTGRESQL_POOL_SIZE": bad]) { $1 })
                Issue.record("pool size \(bad) accepted")
            } catch {
                #expect(error.status == errSecParam)
                #expect(error.message.contains("SECITEM_POSTGRESQL_POOL_SIZE") || (error.detail ?? "").contains("SECITEM_POSTGRESQL_POOL_SIZE"))
            }
        }
    }
}
