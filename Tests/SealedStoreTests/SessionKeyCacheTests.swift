import Foundation
import SecItemCore
import SecItemSealedStore
import Testing

/// The session key cache's names, setting and self-repair, in the kernel's real user
/// keyring. Every test uses a store name of its own and drops only its own keys (the
/// tests that need a key to stay put, and `secitem lock`, are CLITests' KeyCacheTests,
/// one at a time).
@Suite struct SessionKeyCacheTests {
    private static let cheap = ScryptParameters(logN: 10, r: 8, p: 1)

    private func context(_ store: String, timeout: Int = 60) -> KeySourceContext {
        KeySourceContext(store: store, scryptParameters: Self.cheap, keyCacheTimeout: timeout)
    }

    /// A passphrase-protected header for `passphrase`, and its data key.
    private func header(_ passphrase: String, _ context: KeySourceContext) throws -> (KeychainHeader, SecretBytes) {
        let dataKey = try SecretBytes(random: 32)
        let kek = try KeyEncryptionKey.forNewWrapping(.passphrase(passphrase), context)
        var header = KeychainHeader(protection: kek.protection, scrypt: kek.scrypt, salt: kek.salt, wrappedDataKey: [], epoch: 1)
        try header.wrap(dataKey, kek: kek.kek)
        return (header, dataKey)
    }

    @Test("a key's name is bound to the store and to the header's salt and scrypt cost, and reveals neither")
    func names() throws {
        let store = "/tmp/secitem-cache-\(UUID().uuidString)/keychain.db"
        let (a, _) = try header("pw", context(store))
        let (b, _) = try header("pw", context(store))  // a rekey: a new salt
        let name = SessionKeyCache.name(store: store, header: a)
        #expect(name.hasPrefix(SessionKeyCache.prefix))
        #expect(name.count == SessionKeyCache.prefix.count + 32)
        #expect(name == SessionKeyCache.name(store: store, header: a))
        #expect(name != SessionKeyCache.name(store: store, header: b))
        #expect(name != SessionKeyCache.name(store: store + "2", header: a))
        var cheaper = a
        cheaper.scrypt = ScryptParameters(logN: 11, r: 8, p: 1)
        #expect(name != SessionKeyCache.name(store: store, header: cheaper))
        #expect(!name.contains("keychain") && !name.contains("tmp"))
    }

    @Test("the first open caches the key, a second finds it, a wrong passphrase never gets it")
    func cachesAndProves() throws {
        let store = "/tmp/secitem-cache-\(UUID().uuidString)"
        let ctx = context(store)
        let (header, dataKey) = try header("right", ctx)
        defer { SessionKeyCache.drop(store: store, header: header) }
        #expect(SessionKeyCache.serial(store: store, header: header) == nil)
        let first = try KeyEncryptionKey.forExisting(.passphrase("right"), ctx, header: header)
        #expect(try header.unwrap(kek: first.kek)?.equals(dataKey) == true)
        let serial = try #require(SessionKeyCache.serial(store: store, header: header))
        let second = try KeyEncryptionKey.forExisting(.passphrase("right"), ctx, header: header)
        #expect(second.kek.equals(first.kek))
        #expect(SessionKeyCache.serial(store: store, header: header) == serial)  // a hit stores nothing
        // A wrong passphrase is not proved by the cached key: scrypt runs, and its key opens nothing.
        let wrong = try KeyEncryptionKey.forExisting(.passphrase("wrong"), ctx, header: header)
        #expect(try header.unwrap(kek: wrong.kek) == nil)
        #expect(SessionKeyCache.serial(store: store, header: header) == serial)  // and the right one stays
        // Timeout 0: nothing read, nothing written.
        SessionKeyCache.drop(store: store, header: header)
        _ = try KeyEncryptionKey.forExisting(.passphrase("right"), context(store, timeout: 0), header: header)
        #expect(SessionKeyCache.serial(store: store, header: header) == nil)
    }

    @Test("a cached key that does not unwrap the store is dropped and the key derived again")
    func staleKeyIsReplaced() throws {
        let store = "/tmp/secitem-cache-\(UUID().uuidString)"
        let ctx = context(store)
        let (header, dataKey) = try header("right", ctx)
        defer { SessionKeyCache.drop(store: store, header: header) }
        let name = SessionKeyCache.name(store: store, header: header)
        // A key proved by the right passphrase but not the store's (a damaged or planted entry).
        let planted = try SecretBytes(random: 32)
        Passphrase("right").withUTF8 { SessionKeyCache.store(name, kek: planted, proof: $0, timeout: 60) }
        let plantedSerial = try #require(SessionKeyCache.serial(store: store, header: header))
        let kek = try KeyEncryptionKey.forExisting(.passphrase("right"), ctx, header: header)
        #expect(try header.unwrap(kek: kek.kek)?.equals(dataKey) == true)
        let replaced = try #require(SessionKeyCache.serial(store: store, header: header))
        #expect(replaced != plantedSerial)
        let cached = Passphrase("right").withUTF8 { SessionKeyCache.lookup(name, proof: $0) }
        #expect(cached?.equals(kek.kek) == true)
    }

    @Test("SECITEM_KEY_CACHE_TIMEOUT: default 300, 0 turns it off, anything but whole seconds up to a week is errSecParam")
    func timeoutSetting() throws {
        func timeout(_ env: [String: String]) throws(SecItemError) -> Int {
            try SessionKeyCache.timeout(SecItemConfiguration.environmentOnly(env))
        }
        #expect(try timeout([:]) == 300)
        #expect(try timeout(["SECITEM_KEY_CACHE_TIMEOUT": "0"]) == 0)
        #expect(try timeout(["SECITEM_KEY_CACHE_TIMEOUT": "604800"]) == 604_800)
        for bad in ["-1", "1.5", "abc", "604801", " 5"] {
            do {
                _ = try timeout(["SECITEM_KEY_CACHE_TIMEOUT": bad])
                Issue.record("\(bad) was accepted")
            } catch {
                #expect(error.status == errSecParam)
                #expect(error.detail?.contains("SECITEM_KEY_CACHE_TIMEOUT") == true)
            }
        }
    }

    @Test("a key file, a raw key and the generated key file are never cached")
    func onlySlowSourcesAreCached() throws {
        let store = "/tmp/secitem-cache-\(UUID().uuidString)"
        let ctx = context(store)
        let raw = Data(repeating: 9, count: 32)
        let kek = try KeyEncryptionKey.forNewWrapping(.rawKey(raw), ctx)
        var header = KeychainHeader(protection: kek.protection, wrappedDataKey: [], epoch: 1)
        try header.wrap(try SecretBytes(random: 32), kek: kek.kek)
        _ = try KeyEncryptionKey.forExisting(.rawKey(raw), ctx, header: header)
        #expect(SessionKeyCache.serial(store: store, header: header) == nil)
        #expect(SealedStoreKeySource.rawKey(raw).diagnosisLines(keyCacheTimeout: 60).count == 1)
        #expect(SealedStoreKeySource.passphrase("x").diagnosisLines(keyCacheTimeout: 60).last?.contains("key cache") == true)
    }
}
