import Foundation
import SecItem
import SecItemCore
import SecItemSQLite
import SecItemTestSupport
import Synchronization
import Testing
import SecItemSealedStore

/// How long secrets live in memory (issue 14, "Leaking"): a passphrase is held in a
/// zeroing `Passphrase` from where it is read to the KDF and dropped once the key
/// is derived; the backend keeps only derived keys.
@Suite("File backend: the passphrase is dropped once the key is derived")
struct SecretLifetimeTests {
    /// Under `scripts/test --sanitizer address` a process's writable mappings include
    /// AddressSanitizer's shadow memory (terabytes): the helper's scan of every one of
    /// them cannot finish, so the two memory scans do not run there.
    static let addressSanitizer = ProcessInfo.processInfo.environment["SECITEM_TEST_SANITIZER"] == "address"

    /// What a passphrase's release hook saw: whether it fired, and whether every
    /// byte of the buffer was zero by then.
    final class Release: Sendable {
        private let state = Mutex<(fired: Bool, zeroed: Bool)>((false, false))
        var fired: Bool { state.withLock { $0.fired } }
        var zeroed: Bool { state.withLock { $0.zeroed } }

        /// A new passphrase `text` watched by this release.
        func watch(_ text: String) -> Passphrase {
            let passphrase = Passphrase(bytes: Array(text.utf8))
            passphrase.onRelease { [self] buffer in
                let zero = buffer.allSatisfy { $0 == 0 }
                state.withLock { $0 = (true, zero) }
            }
            return passphrase
        }
    }

    @Test("a Passphrase's buffer is zeroed when its last copy goes, not before")
    func passphraseZeroesOnDrop() {
        let release = Release()
        do {
            let passphrase = release.watch("zero-me-\(UUID().uuidString)")
            let copy = passphrase
            #expect(!release.fired)
            #expect(copy.byteCount == passphrase.byteCount)
        }
        #expect(release.fired, "the passphrase's buffer was never released")
        #expect(release.zeroed, "the passphrase's buffer was freed without being zeroed")
    }

    @Test("opening with a passphrase: the backend keeps no copy (released while the backend is open)")
    func backendDropsPassphraseAfterOpen() throws {
        let dir = TempDir()
        let db = dir.file("k.db")
        let release = Release()
        let backend: SQLiteBackend
        do {
            let configuration = SQLiteBackend.Configuration(
                path: db, keySource: .passphrase(release.watch("open-\(UUID().uuidString)")),
                generatedKeyFilePath: dir.file("gen.key"))
            backend = try SQLiteBackend(configuration: configuration)
        }
        #expect(release.fired, "the backend still holds the passphrase after opening")
        #expect(release.zeroed)
        // The backend works on the derived keys alone.
        let client = SecItemClient(backend: backend, accessGroups: groups)
        try client.addItem(genp("a", data: "after"))
        #expect(try readData(client, "a") == "after")
        #expect("\(backend.configuration)".contains("passphrase"))
        // What it kept in its configuration is no passphrase: it cannot open the file again.
        let reopen = thrownSecItemError { _ = try SQLiteBackend(configuration: backend.configuration) }
        #expect(reopen?.status == errSecParam)
        backend.close()
    }

    @Test("the same through the process configuration (SecItemConfiguration → SQLiteBackend.Configuration)")
    func configurationPathDropsPassphrase() throws {
        let dir = TempDir()
        let release = Release()
        let backend: SQLiteBackend
        do {
            let settings = SecItemConfiguration.resolve(
                code: .init(file: dir.file("k.db"), passphrase: release.watch("config-\(UUID().uuidString)")),
                environment: ["HOME": dir.path, "SECITEM_CONFIG": "none"])
            backend = try SQLiteBackend(configuration: SQLiteBackend.Configuration(settings))
        }
        #expect(release.fired, "a copy of the passphrase outlived the configuration that carried it")
        try SecItemClient(backend: backend, accessGroups: groups).addItem(genp("a", data: "x"))
        backend.close()
    }

    @Test("rekey to a new passphrase: the new passphrase is dropped when rekey returns; both old and new keys behave")
    func rekeyDropsNewPassphrase() throws {
        let dir = TempDir()
        let db = dir.file("k.db")
        let backend = try openBackend(db, .passphrase("old passphrase here"))
        try SecItemClient(backend: backend, accessGroups: groups).addItem(genp("a", data: "kept"))
        let release = Release()
        let newText = "new-\(UUID().uuidString)"
        do {
            try backend.rekey(to: .passphrase(release.watch(newText)))
        }
        #expect(release.fired, "the backend kept the new passphrase after rekey")
        #expect(release.zeroed)
        #expect(try readData(SecItemClient(backend: backend, accessGroups: groups), "a") == "kept")
        backend.close()
        #expect(try readData(SecItemClient(backend: try openBackend(db, .passphrase(newText)), accessGroups: groups), "a") == "kept")
    }

    @Test("an empty passphrase is refused before any key derivation")
    func emptyPassphraseRefused() {
        let dir = TempDir()
        let error = thrownSecItemError { _ = try openBackend(dir.file("k.db"), .passphrase(Passphrase(bytes: [UInt8]()))) }
        #expect(error?.status == errSecParam)
        #expect(!FileManager.default.fileExists(atPath: dir.file("k.db")))
    }

    @Test(
        "a process that took SECITEM_PASSPHRASE and opened the file: no copy of the passphrase left in its memory",
        .disabled(if: addressSanitizer, "scans all writable memory, which ASan's shadow makes terabytes"))
    func memoryScanAfterOpen() throws {
        let dir = TempDir()
        let passphrase = "scan-\(UUID().uuidString)-\(UInt64.random(in: 0...UInt64.max))"
        let masked = passphrase.utf8.map { String(format: "%02x", $0 ^ 0xA5) }.joined()
        var env = ProcessInfo.processInfo.environment
        env["SECITEM_KEY_FILE"] = nil
        env["SECITEM_PASSPHRASE"] = passphrase
        env["SECITEM_SCAN_MASKED"] = masked
        env["SECITEM_CONFIG"] = "none"
        env["SECITEM_FILE"] = dir.file("scan.db")
        env["SECITEM_KEY_SOURCE"] = "passphrase"
        let output = try ChildProcess.run(
            try helperPath(), ["passphrase-scan", dir.file("scan.db")], environment: env, timeout: .seconds(120))
        try #require(output.status == 0, "helper failed: \(output.stderr)")
        let lines = output.stdout.split(separator: "\n").map(String.init)
        let held = lines.first { $0.hasPrefix("held ") }.flatMap { Int($0.dropFirst(5)) }
        let released = lines.first { $0.hasPrefix("released ") }.flatMap { Int($0.dropFirst(9)) }
        // The control: the scan finds the passphrase while the process is known to hold it.
        #expect((held ?? 0) >= 1, "the scan did not find the passphrase even while it was held: \(lines)")
        #expect(released == 0, "the passphrase is still in the process's memory after release: \(lines)")
        #expect(lines.contains("still-open"))
        #expect(lines.contains("child-env clean"), "a child process inherited SECITEM_PASSPHRASE: \(lines)")
    }

    @Test(
        "rotating the data key and verifying decrypt every item: none of their data is left in the process's memory",
        .disabled(if: addressSanitizer, "scans all writable memory, which ASan's shadow makes terabytes"))
    func memoryScanAfterRotation() throws {
        let dir = TempDir()
        let db = dir.file("rotate.db")
        let key = try makeKeyFile(dir.file("key"))
        // Written by this process; the helper only ever sees the items by decrypting them.
        var markers: [Data] = []
        do {
            let backend = try openBackend(db, .keyFile(key))
            let client = SecItemClient(backend: backend, accessGroups: groups)
            for i in 0..<40 {
                // Short (inline in Data) and long (on the heap) secrets.
                let marker = Data((0..<(i % 2 == 0 ? 13 : 48)).map { _ in UInt8.random(in: 0...255) })
                markers.append(marker)
                try client.addItem(Query.genericPassword("scan", "scan-\(i)", [kSecValueData as String: marker]))
            }
            backend.close()
        }
        let masked = markers.map { $0.map { String(format: "%02x", $0 ^ 0xA5) }.joined() }.joined(separator: ",")
        var env = ProcessInfo.processInfo.environment
        env["SECITEM_KEY_FILE"] = key
        env["SECITEM_SCAN_MASKED_LIST"] = masked
        env["SECITEM_SCAN_DEBUG"] = "1"
        let output = try ChildProcess.run(try helperPath(), ["rotate-scan", db], environment: env, timeout: .seconds(120))
        try #require(output.status == 0, "helper failed: \(output.stderr)")
        let lines = output.stdout.split(separator: "\n").map(String.init)
        func count(_ prefix: String) -> Int? {
            lines.first { $0.hasPrefix(prefix + " ") }.flatMap { Int($0.dropFirst(prefix.count + 1)) }
        }
        #expect(count("before") == 0, "\(lines)")
        // The control: the item it holds is found, so the scan would see the others.
        #expect((count("held") ?? 0) >= 1, "the scan does not see data the process holds: \(lines)")
        #expect(count("rotated") == 0, "decrypted data left in memory by the rotation: \(lines)")
        #expect(count("verified") == 0, "decrypted data left in memory by verify: \(lines)")
    }
}
