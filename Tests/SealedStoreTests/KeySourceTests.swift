import Foundation
import SecItemCore
import SecItemSealedStore
import Testing

/// The sealed store alone: key sources, the key hierarchy, the row codec and the
/// row-set commitment, with neither SQLite nor PostgreSQL linked.
@Suite struct KeySourceTests {
    private func settings(_ env: [String: String]) -> SecItemConfiguration {
        SecItemConfiguration.environmentOnly(env)
    }

    private let context = KeySourceContext(store: "/nowhere/keychain.db", scryptParameters: ScryptParameters(logN: 10, r: 8, p: 1))

    @Test("precedence: a key file before a passphrase before the generated key file; key-source picks one")
    func precedence() throws {
        #expect(try KeySources.resolve(settings([:]), context).kind == "automatic")
        #expect(try KeySources.resolve(settings(["SECITEM_PASSPHRASE": "pw"]), context).kind == "passphrase")
        let both = try KeySources.resolve(settings(["SECITEM_PASSPHRASE": "pw", "SECITEM_KEY_FILE": "/k"]), context)
        #expect(both.keyFilePath == "/k")
        let picked = try KeySources.resolve(
            settings(["SECITEM_PASSPHRASE": "pw", "SECITEM_KEY_FILE": "/k", "SECITEM_KEY_SOURCE": "passphrase"]), context)
        #expect(picked.kind == "passphrase")
    }

    @Test("an unknown or unsatisfied key-source is errSecParam naming what is missing")
    func refusals() {
        #expect(throws: SecItemError.self) { try KeySources.resolve(settings(["SECITEM_KEY_SOURCE": "tpm"]), context) }
        do {
            _ = try KeySources.resolve(settings(["SECITEM_KEY_SOURCE": "key-file"]), context)
            Issue.record("expected an error")
        } catch {
            #expect(error.status == errSecParam)
            #expect(error.detail?.contains("SECITEM_KEY_FILE is not set") == true)
        }
        do {
            _ = try KeySources.resolve(settings(["SECITEM_KEY_SOURCE": "nosuch"]), context)
            Issue.record("expected an error")
        } catch {
            // Sources other modules registered (secret-service, portal, …) come between.
            #expect(error.detail?.contains("expected key-file, systemd-credential, passphrase, tpm2") == true)
            #expect(error.detail?.hasSuffix(" or automatic") == true)
        }
    }

    @Test("a passphrase wraps and unwraps the data key; another passphrase and a key are refused")
    func passphraseHierarchy() throws {
        let dataKey = SecretBytes(copying: (0..<32).map { UInt8($0) })
        let kek = try KeyEncryptionKey.forNewWrapping(.passphrase("correct horse"), context)
        var header = KeychainHeader(protection: kek.protection, scrypt: kek.scrypt, salt: kek.salt, wrappedDataKey: [], epoch: 1)
        try header.wrap(dataKey, kek: kek.kek)
        // The header round-trips through its meta values, as every store keeps them.
        let stored = try KeychainHeader.parse(Dictionary(uniqueKeysWithValues: header.metaValues.map { ($0.key, $0.value) }), source: "test")
        let again = try KeyEncryptionKey.forExisting(.passphrase("correct horse"), context, header: stored)
        #expect(try stored.unwrap(kek: again.kek)?.equals(dataKey) == true)
        let wrong = try KeyEncryptionKey.forExisting(.passphrase("wrong"), context, header: stored)
        #expect(try stored.unwrap(kek: wrong.kek) == nil)
        do {
            _ = try KeyEncryptionKey.forExisting(.rawKey(Data(repeating: 7, count: 32)), context, header: stored)
            Issue.record("a raw key opened a passphrase store")
        } catch {
            #expect(error.status == errSecAuthFailed)
            #expect(error.detail?.contains("protected by a passphrase") == true)
        }
    }

    @Test("sources never print their secret")
    func redaction() {
        let secret = "hunter2-do-not-print"
        for source in [SealedStoreKeySource.passphrase(secret), .rawKey(Data(secret.utf8.prefix(32)))] {
            var dumped = ""
            dump(source, to: &dumped)
            #expect(!"\(source)".contains(secret))
            #expect(!dumped.contains(secret))
            #expect(!String(reflecting: source).contains(secret))
        }
    }

    @Test("an empty passphrase is refused before scrypt runs")
    func emptyPassphrase() {
        #expect(throws: SecItemError.self) { try KeyEncryptionKey.forNewWrapping(.passphrase(""), context) }
        #expect(throws: SecItemError.self) { try KeySources.resolve(settings(["SECITEM_PASSPHRASE": ""]), context) }
    }
}
