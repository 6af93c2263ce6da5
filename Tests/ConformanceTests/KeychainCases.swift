import SecItemConformance
import SecItemCore
import SecItemKeychain
import SecItemMemory
import Foundation

/// The Swift-native `Keychain` layer over the backend under test: this package's
/// own cases, run beside the kit's on every backend (`ConformanceTests`). They live
/// here, not in the kit, so that the kit depends on the core alone.
enum KeychainCases {
    struct Token: Codable, Equatable, Sendable {
        var access: String
        var expires: Date
    }

    static func keychain(_ c: ConformanceContext, service: String = "native", group: String? = nil) throws -> Keychain {
        try Keychain(service: service, client: c.client, accessGroup: group)
    }

    static let all: [ConformanceCase] = [
        ConformanceCase("Keychain: Data, String and Codable round trips; absent is nil") { c in
            let k = try keychain(c)
            try c.expect(try k.data(forKey: "missing") == nil, "absent data is nil")
            try c.expect(try k.string(forKey: "missing") == nil, "absent string is nil")
            try k.set(Data([0, 1, 2, 255]), forKey: "bytes")
            try c.expect(try k.data(forKey: "bytes") == Data([0, 1, 2, 255]), "Data round trip")
            try k.set("pässwörd 🙂", forKey: "text")
            try c.expect(try k.string(forKey: "text") == "pässwörd 🙂", "String round trip")
            let token = Token(access: "abc", expires: Date(timeIntervalSince1970: 1_900_000_000))
            try k.setEncoded(token, forKey: "token")
            try c.expect(try k.decoded(Token.self, forKey: "token") == token, "Codable round trip")
            try k.set(Data([0xFF, 0xFE]), forKey: "binary")
            do {
                _ = try k.string(forKey: "binary")
                throw c.fail("invalid UTF-8 must be an error, not nil")
            } catch SecItemError.decode {}
            do {
                _ = try k.decoded(Token.self, forKey: "text")
                throw c.fail("undecodable data must be an error")
            } catch SecItemError.decode {}
            k["sub"] = "script"
            try c.expect(k["sub"] == "script", "subscript set/get")
            k["sub"] = nil
            try c.expect(try !k.contains("sub"), "subscript nil removes")
        },
        ConformanceCase("Keychain: set is an upsert; update needs an item; remove and contains") { c in
            let k = try keychain(c)
            try k.set("one", forKey: "a")
            try k.set("two", forKey: "a")
            try c.expect(try k.string(forKey: "a") == "two", "the second set wins")
            try c.expect(try c.count(c.genp("native", "a")) == 1, "one item")
            try k.update(Data("three".utf8), forKey: "a")
            try c.expect(try k.string(forKey: "a") == "three", "update")
            do {
                try k.update(Data("x".utf8), forKey: "missing")
                throw c.fail("update of a missing key must throw")
            } catch SecItemError.itemNotFound {}
            try c.expect(try k.contains("a"), "contains")
            try c.expect(try k.remove("a"), "remove reports it removed")
            try c.expect(try !k.remove("a"), "remove of a missing key is false, not an error")
            try c.expect(try !k.contains("a"), "gone")
        },
        ConformanceCase("Keychain: allKeys, allItems, and removeAll scoped to its service and group") { c in
            let groupB = ConformanceSuite.entitledGroups[1]
            let k = try keychain(c)
            let otherService = try keychain(c, service: "other")
            let otherGroup = try keychain(c, group: groupB)
            for key in ["x", "y", "z"] { try k.set("v-\(key)", forKey: key) }
            try otherService.set("keep", forKey: "x")
            try otherGroup.set("keep", forKey: "x")
            try c.expect(try k.allKeys() == ["x", "y", "z"], "allKeys")
            let items = try k.allItems()
            try c.expect(items.count == 3 && items.allSatisfy { $0.data == nil }, "allItems has no data unless asked")
            try c.expect(try k.allItems(includingData: true).compactMap(\.data).count == 3, "allItems with data")
            try c.expect(try otherGroup.allKeys() == ["x"], "a keychain sees only its group")
            try c.expect(try k.removeAll() == 3, "removeAll removes its three")
            try c.expect(try otherService.string(forKey: "x") == "keep", "another service untouched")
            try c.expect(try otherGroup.string(forKey: "x") == "keep", "another group untouched")
            try c.expect(try k.removeAll() == 0, "removeAll on an empty keychain is 0")
            do {
                _ = try keychain(c, group: ConformanceSuite.foreignGroup)
                throw c.fail("a keychain in a group not entitled must not be created")
            } catch SecItemError.missingEntitlement {}
        },
        ConformanceCase("Keychain: internet passwords and synchronizable scopes") { c in
            let scope = Keychain.InternetScope(server: "example.com", protocol: kSecAttrProtocolHTTPS, port: 443)
            let web = try Keychain(internet: scope, client: c.client)
            try web.set("pw", forKey: "alice")
            try c.expect(try web.string(forKey: "alice") == "pw", "internet round trip")
            let attrs = try c.attributes([kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "example.com"])
            try c.expect(attrs[kSecAttrPort as String] as? Int == 443, "port stored")
            let synced = try Keychain(service: "native", client: c.client, synchronizable: true)
            let local = try keychain(c)
            try synced.set("s", forKey: "k")
            try local.set("l", forKey: "k")
            try c.expect(try synced.string(forKey: "k") == "s" && local.string(forKey: "k") == "l", "sync states are separate scopes")
        },
        ConformanceCase("Keychain: many tasks upserting and reading the same keys through the async API") { c in
            let k = try keychain(c)
            let keys = (0..<4).map { "shared-\($0)" }
            let tasks = max(4, c.options.threads * 2)
            let rounds = max(5, c.options.operationsPerThread / 50)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for t in 0..<tasks {
                    group.addTask {
                        for r in 0..<rounds {
                            let key = keys[(t + r) % keys.count]
                            try await k.set("t\(t)-r\(r)", forKey: key)
                            if let value = try await k.string(forKey: key) {
                                guard value.hasPrefix("t") else { throw c.fail("read a value no writer wrote") }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            for key in keys {
                try c.expect(try c.count(c.genp("native", key)) == 1, "exactly one item for \(key)")
                let final = try await k.string(forKey: key)
                try c.expect(final?.hasPrefix("t") == true, "a written value for \(key)")
            }
        },
        ConformanceCase("Keychain migration: to another store verified, then removed; a failure mid-way changes neither") { c in
            let source = try keychain(c, service: "legacy")
            for i in 0..<5 { try source.set("secret-\(i)", forKey: "k\(i)") }
            let store = MemoryBackend()
            let target = try Keychain(service: "modern", client: SecItemClient(backend: store, accessGroups: c.client.accessGroups))
            try target.set("pre", forKey: "k2")  // a collision: nothing may be written
            do {
                try target.migrate(from: source, removeFromSource: true)
                throw c.fail("migrating onto an existing key must fail")
            } catch SecItemError.duplicateItem {}
            try c.expect(try target.allKeys() == ["k2"], "the target is unchanged after the refused migration")
            try c.expect(try source.allKeys().count == 5, "the source is intact")
            try target.remove("k2")
            // Now a failure part-way: the third add into the target fails.
            store.injectFault(errSecIO, on: [.add], after: 2)
            do {
                try target.migrate(from: source, removeFromSource: true)
                throw c.fail("a failing target must fail the migration")
            } catch SecItemError.io {}
            try c.expect(store.count == 0, "the two items written before the failure were removed again")
            try c.expect(try source.allKeys().count == 5, "the source is intact after the failure")
            let report = try target.migrate(from: source, removeFromSource: true)
            try c.expect(report.migratedKeys.count == 5 && report.removedFromSource, "migrated all five")
            try c.expect(try target.string(forKey: "k3") == "secret-3", "data arrived")
            try c.expect(try source.allKeys().isEmpty, "source emptied after verification")
        },
        ConformanceCase("Keychain migration into this store: each copy reads back whole; a legacy file is one copy, refused whole on a collision") { c in
            // The copy is compared attribute by attribute after it is written (VerifiedCopy):
            // a store that changed any attribute on the way would fail the migration here.
            let store = MemoryBackend()
            let source = try Keychain(service: "legacy", client: SecItemClient(backend: store, accessGroups: c.client.accessGroups))
            for i in 0..<5 { try source.set(Data([0, UInt8(i), 0xFF]), forKey: "k\(i)") }
            let target = try keychain(c, service: "modern")
            let report = try target.migrate(from: source, removeFromSource: true)
            try c.expect(report.migratedKeys.sorted() == ["k0", "k1", "k2", "k3", "k4"] && report.removedFromSource, "migrated all five")
            try c.expect(try target.data(forKey: "k3") == Data([0, 3, 0xFF]), "bytes arrive exactly")
            try c.expect(store.count == 0, "the source was emptied after verification")

            let url = FileManager.default.temporaryDirectory.appendingPathComponent("legacy-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: url) }
            try Data(#"{"mail": {"alice": "pw-a", "bob": "pw-b"}, "api": {"token": "t0k"}}"#.utf8).write(to: url)
            let reports = try Keychain.migrateLegacyFile(at: url, into: c.client)
            try c.expect(reports["mail"]?.migratedKeys == ["alice", "bob"] && reports["api"]?.migratedKeys == ["token"], "both services")
            try c.expect(try keychain(c, service: "api").string(forKey: "token") == "t0k", "data arrived")
            try keychain(c, service: "mail").remove("alice")
            try keychain(c, service: "api").remove("token")  // so only "bob" collides, in the second service
            do {
                try Keychain.migrateLegacyFile(at: url, into: c.client)
                throw c.fail("migrating onto existing keys must fail")
            } catch SecItemError.duplicateItem {}
            try c.expect(try keychain(c, service: "mail").allKeys() == ["bob"], "nothing written by the refused migration")
            try c.expect(try keychain(c, service: "api").allKeys().isEmpty, "not even the first service's item")
        },
    ]
}
