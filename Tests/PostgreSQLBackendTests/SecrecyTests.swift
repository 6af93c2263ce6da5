import Foundation
import SecItemCore
@testable import SecItemPostgreSQL
import SecItemSQLite
import SecItemTestSupport
import Synchronization
import Testing
import SecItemSealedStore

/// What the server (and anyone with a dump of it) learns: ciphertext and keyed HMACs.
@Suite("PostgreSQL secrecy")
struct SecrecyTests {
    @Test("pg_dump of the keychain holds no name, secret or attribute value, in text or hex")
    func dumpHoldsNoSecrets() throws {
        let dir = try TestServer.directory()
        let keys = try KeyDirectory()
        let schema = freshSchema("dump")
        let backend = try PostgreSQLBackend(configuration: .init(keySource: .keyFile(keys.keyFile), schema: schema))
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["fleet.group.secret"]))
        let tag = UUID().uuidString.prefix(8)
        var needles: [String] = ["fleet.group.secret"]
        for i in 0..<5 {
            var item: [String: Any] = [
                "acct": "account-\(tag)-\(i)", "labl": "label-\(tag)-\(i)", "icmt": "comment-\(tag)-\(i)",
                "v_Data": Data("secret-\(tag)-\(i)".utf8),
            ]
            if i % 2 == 0 {
                item["class"] = "genp"
                item["svce"] = "svc-\(tag)-\(i)"
            } else {
                item["class"] = "inet"
                item["srvr"] = "svc-\(tag)-\(i).example"
            }
            try client.addItem(item)
            needles += ["svc-\(tag)-\(i)", "account-\(tag)-\(i)", "label-\(tag)-\(i)", "comment-\(tag)-\(i)", "secret-\(tag)-\(i)"]
        }
        _ = try client.updateItems(["class": "genp", "svce": "svc-\(tag)-0"], ["v_Data": Data("secret-\(tag)-new".utf8)])
        needles.append("secret-\(tag)-new")
        let dump = try ChildProcess.run(try TestServer.bin("pg_dump"), ["--schema=\(schema)", "--no-owner", "secitem"])
        #expect(dump.status == 0, "pg_dump failed: \(dump.stderr)")
        let text = dump.stdout
        // The dump is the keychain: its tables and rows are in it.
        #expect(text.contains("\(schema).items") && text.contains("COPY"), "the dump does not hold the keychain")
        #expect(text.contains("secitem-file-keychain"))
        for needle in needles {
            let hex = Data(needle.utf8).map { String(format: "%02x", $0) }.joined()
            #expect(!text.contains(needle), "the dump holds \(needle)")
            #expect(!text.lowercased().contains(hex), "the dump holds \(needle) in hex")
        }
        // Nor does the server's log.
        let log = String(decoding: FileManager.default.contents(atPath: dir + "/server.log") ?? Data(), as: UTF8.self)
        for needle in needles { #expect(!log.contains(needle), "the server log holds \(needle)") }
    }

    @Test("descriptions and errors never show the passphrase or the connection's password")
    func descriptions() throws {
        let password = "pw-\(UUID().uuidString)"
        let passphrase = "phrase-\(UUID().uuidString)"
        let configuration = PostgreSQLBackend.Configuration(
            connection: "postgresql://secitem:\(password)@db.invalid/secitem", keySource: .passphrase(passphrase))
        for text in [configuration.description, String(describing: configuration), String(reflecting: configuration)] {
            #expect(!text.contains(password) && !text.contains(passphrase), "\(text)")
        }
    }

    @Test("opening with a passphrase: the backend keeps no copy once the key is derived; it still works")
    func passphraseDroppedAfterOpen() throws {
        _ = try TestServer.directory()
        let schema = freshSchema("drop")
        let text = "drop-\(UUID().uuidString)"
        let released = Mutex<(fired: Bool, zeroed: Bool)>((false, false))
        let backend: PostgreSQLBackend
        do {
            let passphrase = Passphrase(bytes: Array(text.utf8))
            passphrase.onRelease { buffer in
                let zero = buffer.allSatisfy { $0 == 0 }
                released.withLock { $0 = (true, zero) }
            }
            backend = try PostgreSQLBackend(
                configuration: .init(keySource: .passphrase(passphrase), schema: schema, scryptParameters: .init(logN: 10, r: 8, p: 1)))
        }
        #expect(released.withLock { $0.fired }, "the PostgreSQL backend still holds the passphrase after opening")
        #expect(released.withLock { $0.zeroed })
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["test"]))
        try client.addItem(Query.genericPassword("svc", "a", [kSecValueData as String: Data("x".utf8)]))
        // A second host with the same passphrase opens the same keychain.
        let other = try PostgreSQLBackend(configuration: .init(keySource: .passphrase(text), schema: schema))
        let found = try SecItemClient(backend: other, accessGroups: AccessGroups(["test"])).copyMatchingItems(
            Query.genericPassword("svc", "a", [kSecReturnData as String: true]))
        #expect(found as? Data == Data("x".utf8))
    }

    @Test("a newer schema version is refused, a wrong key is errSecAuthFailed, a generated key is refused")
    func refusals() throws {
        _ = try TestServer.directory()
        let keys = try KeyDirectory()
        let schema = freshSchema("refuse")
        _ = try PostgreSQLBackend(configuration: .init(keySource: .keyFile(keys.keyFile), schema: schema))
        let other = try KeyDirectory()
        do {
            _ = try PostgreSQLBackend(configuration: .init(keySource: .keyFile(other.keyFile), schema: schema))
            Issue.record("another key opened the keychain")
        } catch {
            #expect(error.status == errSecAuthFailed)
        }
        do {
            _ = try PostgreSQLBackend(configuration: .init(keySource: .automatic, schema: freshSchema("auto")))
            Issue.record("a generated key was accepted for a shared keychain")
        } catch {
            #expect(error.status == errSecParam)
        }
        let admin = try adminConnection()
        _ = try admin.run("UPDATE \(schema).meta SET number = 99 WHERE key = 'schema'", timeout: .seconds(5))
        do {
            _ = try PostgreSQLBackend(configuration: .init(keySource: .keyFile(keys.keyFile), schema: schema))
            Issue.record("a newer schema version was opened")
        } catch {
            #expect(error.status == errSecInvalidKeychain)
            #expect(error.description.contains("99"))
        }
    }
}

/// What someone with write access to the database but no key can do, and what is seen.
@Suite("PostgreSQL tampering")
struct TamperTests {
    @Test("a row deleted or rolled back by the database's owner: verify names it; a moved box does not open")
    func rowSet() throws {
        _ = try TestServer.directory()
        let keys = try KeyDirectory()
        let schema = freshSchema("tamper")
        let backend = try PostgreSQLBackend(configuration: .init(keySource: .keyFile(keys.keyFile), schema: schema))
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["fleet"]))
        for name in ["a", "b", "c"] {
            try client.addItem(["class": "genp", "svce": "fleet", "acct": name, "v_Data": Data("v1-\(name)".utf8)])
        }
        #expect(try backend.verify() == [])
        let admin = try adminConnection()
        // Keep b's old row, change b, then put the old row back (a rollback of one row).
        _ = try admin.run("CREATE TABLE \(schema).saved AS SELECT * FROM \(schema).items", timeout: .seconds(5))
        _ = try client.updateItems(["class": "genp", "svce": "fleet", "acct": "b"], ["v_Data": Data("v2-b".utf8)])
        #expect(try backend.verify() == [])
        _ = try admin.run(
            """
            UPDATE \(schema).items i SET ct = s.ct, version = s.version FROM \(schema).saved s WHERE i.uuid = s.uuid AND i.pk = s.pk
              AND i.ct <> s.ct;
            """, timeout: .seconds(5))
        let rolledBack = try backend.verify()
        #expect(!rolledBack.isEmpty, "a rolled-back row went unnoticed")
        // Delete a row outright.
        _ = try admin.run(
            "DELETE FROM \(schema).items WHERE seq = (SELECT min(seq) FROM \(schema).items)", timeout: .seconds(5))
        let deleted = try backend.verify()
        #expect(deleted.contains { $0.contains("missing") }, "\(deleted)")
        // A box moved onto another row does not open: the lookup reports damage, not another item's secret.
        _ = try admin.run(
            "UPDATE \(schema).items SET ct = (SELECT ct FROM \(schema).saved ORDER BY seq DESC LIMIT 1) "
                + "WHERE seq = (SELECT min(seq) FROM \(schema).items)", timeout: .seconds(5))
        do {
            let value = try client.copyMatchingItems(["class": "genp", "svce": "fleet", "acct": "b", "r_Data": true])
            Issue.record("a tampered row was returned: \(String(describing: value))")
        } catch {
            #expect(error.status == errSecDecode, "\(error)")
        }
    }
}
