// Runs the Apple-style code of AppleStyleKeychain.swift: it compiles (the target's first
// test) and it does what it does on Apple platforms.
import Foundation
import SecItem
import Testing

@Suite("Keychain code written for Apple platforms")
struct AppleStyleTests {

    @Test("set, read, update and delete through every query shape", arguments: AppleStyleStore.available)
    func queryShapes(store: AppleStyleStore) throws {
        try store.with {
            let keychain = AppleStyleKeychain(service: "com.example.apple-style")
            try keychain.set("first", forKey: "alice")
            #expect(try keychain.string(forKey: "alice") == "first")
            try keychain.set("second", forKey: "alice")  // duplicate → update
            #expect(try keychain.string(forKey: "alice") == "second")
            #expect(keychain.legacyData(forKey: "alice") == Data("second".utf8))
            #expect(keychain.wrapperStyleSet(Data("w".utf8), account: "bob") == errSecSuccess)
            #expect(keychain.wrapperStyleSet(Data("w".utf8), account: "bob") == errSecDuplicateItem)
            #expect(keychain.wrapperStyleGet(account: "bob") == Data("w".utf8))
            #expect(keychain.count() == 2)
            let attributes = try #require(keychain.attributes(forKey: "alice"))
            #expect(attributes[kSecAttrAccount as String] as? String == "alice")
            #expect(attributes[kSecAttrAccessible as String] as? String == kSecAttrAccessibleAfterFirstUnlock as String)
            #expect(keychain.clear())
            #expect(keychain.count() == 0)
            #expect(try keychain.string(forKey: "alice") == nil)
            #expect(keychain.deleteAll(kSecClassGenericPassword) == errSecItemNotFound)
        }
    }

    @Test("an access-control object is stored as its protection and flags and comes back", arguments: AppleStyleStore.available)
    func accessControl(store: AppleStyleStore) throws {
        try store.with {
            let keychain = AppleStyleKeychain(service: "com.example.acl", accessControlFlags: [.biometryAny, .or, .devicePasscode])
            try keychain.set("guarded", forKey: "alice")
            let attributes = try #require(keychain.attributes(forKey: "alice"))
            let access = try #require(attributes[kSecAttrAccessControl as String] as? SecAccessControl)
            #expect(access.flags == [.biometryAny, .or, .devicePasscode])
            #expect(access.protection as String == kSecAttrAccessibleWhenUnlockedThisDeviceOnly as String)
            #expect(attributes[kSecAttrAccessible as String] as? String == "aku")
        }
    }

    @Test("a combination Apple rejects is a CFError, readable through the CF functions")
    func rejectedAccessControl() throws {
        let (access, error) = makeAccessControl(kCFAllocatorDefault, [.or, .and, .devicePasscode])
        #expect(access == nil)
        let cfError = try #require(error).takeRetainedValue()
        let described = describe(cfError)
        #expect(described.code == CFIndex(errSecParam))
        #expect(cfError.osStatus == errSecParam)
        #expect(described.domain == NSOSStatusErrorDomain)
        #expect(described.description == "only one logical operation can be set")
        let keychain = AppleStyleKeychain(service: "s", accessControlFlags: [.userPresence, .devicePasscode])
        #expect(throws: AppleStyleKeychain.KeychainError.self) { try keychain.set("x", forKey: "k") }
        #expect(storedFlags(.applicationPassword) == 1 << 31)
    }

    @Test("messages, random bytes, noErr")
    func helpers() throws {
        #expect(AppleStyleKeychain.message(for: errSecItemNotFound) == "The specified item could not be found in the keychain.")
        #expect(AppleStyleKeychain.message(for: errSecInternalComponent) == "An internal component failed.")
        let a = try AppleStyleKeychain.randomNonce()
        let b = try AppleStyleKeychain.randomNonce()
        #expect(a.count == 32 && a != b)
        #expect(errSecSuccess == noErr)
    }
}

/// Runs `openssl` in `dir`; its standard output.
@discardableResult
private func runOpenSSL(_ arguments: [String], in dir: URL) throws -> Data {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = arguments
    process.currentDirectoryURL = dir
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0, "openssl \(arguments.first ?? "")")
    return data
}

@Suite("Key, certificate and identity code written for Apple platforms")
struct AppleStyleKeyTests {

    @Test("device key: made once, found by tag, signs, verifies, deleted", arguments: AppleStyleStore.available)
    func deviceKey(store: AppleStyleStore) throws {
        try store.with {
            let store = DeviceKeyStore(tag: "com.example.device-key")
            #expect(store.loadKey() == nil)
            let signature = try store.sign(Data("request".utf8))
            #expect(store.verify(Data("request".utf8), signature: signature))
            #expect(!store.verify(Data("other".utf8), signature: signature))
            #expect(try store.publicKeyData().count == 65)
            _ = try store.sign(Data("again".utf8))
            #expect(store.deleteKey() == errSecSuccess)
            #expect(store.loadKey() == nil)
        }
    }

    @Test("certificate pinning and PKCS #12 identity import", arguments: AppleStyleStore.available)
    func certificatesAndIdentities(store: AppleStyleStore) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("apple-style-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try runOpenSSL(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "k.pem",
                        "-out", "c.pem", "-subj", "/CN=api.example.com", "-days", "1"], in: dir)
        let der = try runOpenSSL(["x509", "-in", "c.pem", "-outform", "DER"], in: dir)
        try runOpenSSL(["pkcs12", "-export", "-inkey", "k.pem", "-in", "c.pem", "-passout", "pass:secret", "-out", "c.p12"], in: dir)
        try store.with {
            #expect(PinnedCertificateStore.store(der, label: "api") == errSecSuccess)
            #expect(PinnedCertificateStore.store(der, label: "api") == errSecDuplicateItem)
            #expect(PinnedCertificateStore.store(Data("junk".utf8), label: "junk") == errSecParam)
            let pinned = try #require(PinnedCertificateStore.load(label: "api"))
            #expect(PinnedCertificateStore.matches(pinned, pinned: der))
            let p12 = try Data(contentsOf: dir.appendingPathComponent("c.p12"))
            #expect(throws: AppleStyleKeyError.self) { try ClientIdentityLoader.load(p12, password: "wrong") }
            let identity = try ClientIdentityLoader.load(p12, password: "secret")
            #expect(ClientIdentityLoader.commonName(of: identity) == "api.example.com")
            // The certificate is already pinned: the identity's add is a duplicate, and nothing half-stored.
            #expect(ClientIdentityLoader.store(identity) == errSecDuplicateItem)
            #expect(SecItemCopyMatching([kSecClass: kSecClassKey] as CFDictionary, nil) == errSecItemNotFound)
        }
    }
}
