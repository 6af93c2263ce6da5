import Foundation
import SecItemCore
import SecItemSealedStore
import SecItemTestSupport
import Testing

/// The key systemd hands a service in `$CREDENTIALS_DIRECTORY` (here a 0700 directory of
/// the test's own, laid out as systemd lays it out: the credential read-only).
@Suite struct SystemdCredentialKeySourceTests {
    private let context = KeySourceContext(store: "/nowhere/keychain.db")

    private func credentialsDirectory(_ files: [String: (Data, Int)]) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("secitem-credentials-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        for (name, (contents, mode)) in files {
            let path = dir.appendingPathComponent(name).path
            #expect(FileManager.default.createFile(atPath: path, contents: contents, attributes: [.posixPermissions: mode]))
        }
        return dir
    }

    private func failure(_ body: () throws -> Void) -> SecItemError? { thrownSecItemError(body) }

    @Test("secitem.key in CREDENTIALS_DIRECTORY keys the store with nothing named; it wraps and unwraps the data key")
    func picked() throws {
        let key = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
        let dir = try credentialsDirectory(["secitem.key": (Data(key.map { String(format: "%02x", $0) }.joined().utf8), 0o400)])
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try KeySources.resolve(.environmentOnly(["CREDENTIALS_DIRECTORY": dir.path]), context)
        #expect(source.kind == "systemd-credential")
        #expect("\(source)" == "systemd credential \(dir.path)/secitem.key")
        let kek = try KeyEncryptionKey.forNewWrapping(source, context)
        #expect(kek.kek.equals(SecretBytes(copying: key)))
        let dataKey = try SecretBytes(random: 32)
        var header = KeychainHeader(
            protection: kek.protection, scrypt: kek.scrypt, salt: kek.salt, wrappedDataKey: [], epoch: 1)
        header.protect(with: kek)
        try header.wrap(dataKey, kek: kek.kek)
        #expect(try header.unwrap(kek: KeyEncryptionKey.forExisting(source, context, header: header).kek)?.equals(dataKey) == true)
        // A key file named in the environment still wins; a passphrase does not.
        #expect(try KeySources.resolve(.environmentOnly(["CREDENTIALS_DIRECTORY": dir.path, "SECITEM_KEY_FILE": "/k"]), context).kind == "key-file")
        #expect(try KeySources.resolve(.environmentOnly(["CREDENTIALS_DIRECTORY": dir.path, "SECITEM_PASSPHRASE": "pw"]), context).kind == "systemd-credential")
    }

    @Test("SECITEM_CREDENTIAL names another credential; a missing one, one others can read and no CREDENTIALS_DIRECTORY are refused")
    func refusals() throws {
        let key = Data(repeating: 7, count: 32)
        let dir = try credentialsDirectory(["app.key": (key, 0o400), "open.key": (key, 0o404)])
        defer { try? FileManager.default.removeItem(at: dir) }
        func env(_ name: String) -> SecItemConfiguration {
            .environmentOnly(["CREDENTIALS_DIRECTORY": dir.path, "SECITEM_CREDENTIAL": name, "SECITEM_KEY_SOURCE": "systemd-credential"])
        }
        #expect(try KeyEncryptionKey.forNewWrapping(KeySources.resolve(env("app.key"), context), context).kek.equals(SecretBytes(copying: key)))
        let missing = failure { _ = try KeyEncryptionKey.forNewWrapping(KeySources.resolve(env("none.key"), context), context) }
        #expect(missing?.status == errSecNotAvailable)
        #expect(missing?.detail?.contains("LoadCredentialEncrypted=") == true)
        let open = failure { _ = try KeyEncryptionKey.forNewWrapping(KeySources.resolve(env("open.key"), context), context) }
        #expect(open?.status == errSecParam)
        #expect(failure { _ = try KeySources.resolve(env("../x"), context) }?.status == errSecParam)
        let unset = failure { _ = try KeySources.resolve(.environmentOnly(["SECITEM_KEY_SOURCE": "systemd-credential"]), context) }
        #expect(unset?.status == errSecParam)
        #expect(unset?.detail?.contains("CREDENTIALS_DIRECTORY is not set") == true)
        // Without the credential there, nothing named: not chosen.
        #expect(try KeySources.resolve(.environmentOnly(["CREDENTIALS_DIRECTORY": dir.path]), context).kind == "automatic")
    }
}
