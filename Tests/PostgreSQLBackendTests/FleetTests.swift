import Foundation
import SecItemCore
import SecItemPostgreSQL
import SecItemSQLite
import SecItemTestSupport
import Testing
import SecItemSealedStore

/// Many hosts sharing one keychain: separate processes, separate connections.
@Suite("PostgreSQL fleet")
struct FleetTests {
    func client(_ schema: String, _ keyFile: String) throws -> (PostgreSQLBackend, SecItemClient) {
        let backend = try PostgreSQLBackend(configuration: .init(keySource: .keyFile(keyFile), schema: schema))
        return (backend, SecItemClient(backend: backend, accessGroups: AccessGroups(["fleet"])))
    }

    func data(_ client: SecItemClient, _ account: String) throws -> String? {
        let value: Any?
        do {
            value = try client.copyMatchingItems(["class": "genp", "svce": "fleet", "acct": account, "r_Data": true])
        } catch {
            if error.status == errSecItemNotFound { return nil }
            throw error
        }
        return (value as? Data).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test("8 processes × 200 distinct adds, then 8 × 200 adds of the same 50 keys: all present, one winner per key")
    func manyWriters() throws {
        _ = try TestServer.directory()
        let keys = try KeyDirectory()
        let schema = freshSchema("writers")
        // The schema does not exist yet: the 8 hosts race to create it (advisory lock).
        let distinct = try (0..<8).map { try helper(["distinct", schema, "\($0)", "200"], keyFile: keys.keyFile) }
        for (i, child) in distinct.enumerated() {
            let (lines, status) = try finish(child)
            #expect(status == 0, "host \(i) exited with \(status)")
            #expect(lines.last == "added 200", "host \(i): \(lines.suffix(3))")
        }
        let contested = try (0..<8).map { try helper(["contested", schema, "\($0)", "200", "50"], keyFile: keys.keyFile) }
        var won: [String: Int] = [:]
        var lost = 0
        var other: [String] = []
        for child in contested {
            for line in try finish(child).lines {
                let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
                switch parts.first {
                case "won": won[parts[1], default: 0] += 1
                case "lost": lost += 1
                default: other.append(line)
                }
            }
        }
        #expect(other.isEmpty, "unexpected outcomes: \(other.prefix(5))")
        #expect(won.count == 50 && won.values.allSatisfy { $0 == 1 }, "winners per key: \(won.filter { $0.value != 1 })")
        #expect(lost == 8 * 200 - 50, "every loser got errSecDuplicateItem: \(lost) of \(8 * 200 - 50)")

        let (backend, c) = try client(schema, keys.keyFile)
        for worker in 0..<8 {
            for i in 0..<200 {
                let value = try data(c, "w\(worker)-\(i)")
                if value != "value-\(worker)-\(i)" {
                    Issue.record("w\(worker)-\(i) holds \(value ?? "nothing")")
                    return
                }
            }
        }
        let contestedItems = try c.copyMatchingItems(["class": "genp", "svce": "fleet", "m_Limit": "m_LimitAll", "r_Attributes": true])
        let accounts = (contestedItems as? [[String: Any]] ?? []).compactMap { $0["acct"] as? String }
        #expect(accounts.count == 1600 + 50)
        #expect(Set(accounts.filter { $0.hasPrefix("k") }).count == 50)
        #expect(try backend.verify() == [])
    }

    @Test("rotation and rekey by one host while another writes: nothing lost, everything readable with the new key")
    func rotationWhileWriting() throws {
        _ = try TestServer.directory()
        let keys = try KeyDirectory()
        let schema = freshSchema("rotate")
        let (backend, c) = try client(schema, keys.keyFile)
        try c.addItem(["class": "genp", "svce": "fleet", "acct": "before", "v_Data": Data("old".utf8)])
        let writer = try helper(["writer", schema, "w", "300", "3"], keyFile: keys.keyFile)
        // Rotate the data key while it writes.
        var rotations = 0
        while rotations < 6 {
            // Each rotation after the writer acknowledged more adds (bounded).
            let acked = writer.lines.filter { $0.hasPrefix("ack") }.count
            let deadline = Date().addingTimeInterval(5)
            while writer.lines.filter({ $0.hasPrefix("ack") }).count < min(acked + 2, 300) && Date() < deadline { usleep(5_000) }
            try backend.rotateDataKey()
            rotations += 1
        }
        // The operator's procedure for a new key: the new key file on every host first, then rekey.
        let oldKey = keys.path + "/old.key"
        try FileManager.default.copyItem(atPath: keys.keyFile, toPath: oldKey)
        let staged = keys.path + "/new.key"
        try KeyDirectory.writeKey(staged)
        try FileManager.default.removeItem(atPath: keys.keyFile)
        try FileManager.default.copyItem(atPath: staged, toPath: keys.keyFile)
        try backend.rekey(to: .keyFile(keys.keyFile))
        try backend.rotateDataKey()
        let lines = try finish(writer).lines
        let failures = lines.filter { !$0.hasPrefix("ack ") }
        #expect(failures.isEmpty, "the writer failed: \(failures.prefix(5))")
        #expect(lines.filter { $0.hasPrefix("ack ") }.count == 300)
        // Everything readable, by this host and by a fresh one holding only the new key.
        let (fresh, c2) = try client(schema, keys.keyFile)
        for i in 0..<300 {
            let value = try data(c2, "w-\(i)")
            if value != "value-w-\(i)" {
                Issue.record("w-\(i) holds \(value ?? "nothing")")
                break
            }
        }
        #expect(try data(c2, "before") == "old")
        #expect(try data(c, "w-299") == "value-w-299")
        #expect(try fresh.verify() == [])
        // The old key no longer opens it.
        do {
            _ = try PostgreSQLBackend(configuration: .init(keySource: .keyFile(oldKey), schema: schema))
            Issue.record("the old key still opens the keychain after rekey")
        } catch {
            #expect(error.status == errSecAuthFailed)
        }
    }
}
