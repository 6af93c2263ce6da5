import Testing
import SecItemTestSupport
import SecItemConformance
import SecItemCore
import SecItemMemory
import SecItemSQLite
import SecItemSecretService
import SecItemPostgreSQL
import SecItem
import ThirdPartyArrayBackend
import Foundation
import SecItemSealedStore

/// The backends the conformance suite runs on. Adding a backend is one case here.
enum BackendUnderTest: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory
    case file
    /// A passphrase-protected file reopened with its key from the session key cache (the
    /// kernel's user keyring), as the second of a script's `secitem` calls opens it.
    case fileCachedPassphrase = "file (cached passphrase key)"
    /// The encrypted file with its key sealed to a TPM (one swtpm for the run: `TPM2FileStores`).
    case fileTPM2 = "file (tpm2)"
    /// The real gnome-keyring-daemon of scripts/with-secret-service; a fresh namespace per case.
    case secretService = "secret-service"
    /// The private PostgreSQL server of scripts/with-postgresql; a fresh schema per case.
    case postgresql
    /// The same server through pgbouncer in transaction mode (scripts/with-postgresql
    /// starts it: 4 server connections shared by every client), statements unprepared.
    case pgbouncer = "postgresql (pgbouncer)"
    /// A backend from outside the package (Tests/Fixtures/ThirdPartyBackend), registered
    /// with `SecItemBackendRegistry` and opened by its name, as an app would select it.
    case registered = "array (registered)"

    var testDescription: String { rawValue }

    /// The backends this run covers: all, or those `SECITEM_CONFORMANCE_BACKENDS` lists
    /// (comma-separated raw values; scripts/test runs `secret-service` alone against KWallet and KeePassXC).
    static var selected: [BackendUnderTest] {
        guard let list = ProcessInfo.processInfo.environment["SECITEM_CONFORMANCE_BACKENDS"], !list.isEmpty else { return allCases }
        let names = Set(list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        return allCases.filter { names.contains($0.rawValue) }
    }

    var options: ConformanceOptions {
        switch self {
        case .memory: return ConformanceOptions(threads: 8, operationsPerThread: 1000)
        // Every write is a durable (fsync'd) SQLite transaction.
        case .file, .fileCachedPassphrase, .fileTPM2: return ConformanceOptions(threads: 8, operationsPerThread: 250)
        // gnome-keyring rewrites its keyring file on every write (~35 ms).
        case .secretService: return ConformanceOptions(threads: 4, operationsPerThread: 25)
        // One connection per backend: the threads take turns on it, each write a durable commit.
        case .postgresql: return ConformanceOptions(threads: 8, operationsPerThread: 125)
        case .pgbouncer: return ConformanceOptions(threads: 8, operationsPerThread: 60)
        case .registered: return ConformanceOptions(threads: 8, operationsPerThread: 1000)
        }
    }

    func makeBackend() throws -> any SecItemBackend {
        switch self {
        case .memory: return MemoryBackend()
        case .file: return try FileBackendStores.make()
        case .fileCachedPassphrase: return try FileBackendStores.makeCachedPassphrase()
        case .fileTPM2: return try TPM2FileStores.make()
        case .secretService:
            return try SecretServiceBackend(
                configuration: .init(namespace: "conformance-\(UUID().uuidString)", timeout: .seconds(20)))
        case .postgresql: return try PostgreSQLStores.make()
        case .pgbouncer: return try PostgreSQLStores.make(throughPgbouncer: true)
        case .registered:
            let provider = ArrayBackendProvider()
            SecItemBackendRegistry.register(provider)
            let chosen = try SecItemBackendChoice.resolve(
                configuration: .environmentOnly(["SECITEM_BACKEND": provider.kind.rawValue])).backend
            guard chosen is ArrayBackend else { throw SecItemError(errSecParam, "the registry opened \(chosen.kind), not the array store") }
            return chosen
        }
    }
}

@Suite("Conformance")
struct ConformanceTests {
    /// The kit's cases, then this package's `Keychain` layer over the same store.
    @Test("conformance", arguments: BackendUnderTest.selected, ConformanceSuite.cases + KeychainCases.all)
    func conformance(backend: BackendUnderTest, test: ConformanceCase) async throws {
        // The Secret Service and PostgreSQL cases are skipped (with the reason) where
        // scripts/test did not start them; the others run everywhere.
        switch backend {
        case .secretService: try TestService.secretService.require()
        case .postgresql, .pgbouncer: try TestService.postgresql.require()
        case .fileTPM2: try TestService.softwareTPM.require()
        case .memory, .file, .fileCachedPassphrase, .registered: break
        }
        try await test.run(options: backend.options) { try backend.makeBackend() }
    }
}

/// Fresh file keychains for the conformance runs, each in its own directory under
/// one per-process temporary directory that is removed when the process exits.
enum FileBackendStores {
    static let root: String = {
        let path = NSTemporaryDirectory() + "secitem-conformance-file-\(getpid())"
        atexit { try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "secitem-conformance-file-\(getpid())") }
        return path
    }()

    static func make() throws -> SQLiteBackend {
        let dir = root + "/" + UUID().uuidString
        let key = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
        return try SQLiteBackend(configuration: .init(path: dir + "/keychain.db", keySource: .rawKey(key)))
    }

    /// A passphrase store (cheap scrypt), created, closed, and opened again: the second
    /// open takes its key from the session key cache (kept 2 s, long enough for that).
    static func makeCachedPassphrase() throws -> SQLiteBackend {
        var configuration = SQLiteBackend.Configuration(
            path: root + "/" + UUID().uuidString + "/keychain.db", keySource: .passphrase("conformance \(UUID())"),
            scryptParameters: ScryptParameters(logN: 10, r: 8, p: 1))
        configuration.keyCacheTimeout = 2
        try SQLiteBackend(configuration: configuration).close()
        return try SQLiteBackend(configuration: configuration)
    }
}

/// Fresh file keychains whose key is sealed to one swtpm, started on first use and
/// stopped when the process exits.
enum TPM2FileStores {
    static let tpm: Result<SoftwareTPM, any Error> = {
        atexit { if case .success(let tpm) = TPM2FileStores.tpm { tpm.stop() } }
        return Result { try SoftwareTPM() }
    }()

    static func make() throws -> SQLiteBackend {
        let tcti = try tpm.get().tcti
        return try SQLiteBackend(
            configuration: .init(path: FileBackendStores.root + "/" + UUID().uuidString + "/keychain.db", keySource: try .tpm2(tcti: tcti)))
    }
}

/// Fresh PostgreSQL keychains for the conformance runs: a new schema each, on the
/// server the `PG*` variables of scripts/with-postgresql point at. Without that
/// server the runs fail (never skip).
enum PostgreSQLStores {
    static func make(throughPgbouncer: Bool = false) throws -> PostgreSQLBackend {
        let environment = ProcessInfo.processInfo.environment
        guard let dir = environment["SECITEM_TEST_POSTGRESQL_DIR"], !dir.isEmpty else {
            throw SecItemError(
                errSecNotAvailable,
                "no test PostgreSQL server: run the suite through scripts/test (scripts/with-postgresql starts one)")
        }
        let key = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
        let schema = "conformance_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        guard throughPgbouncer else {
            return try PostgreSQLBackend(configuration: .init(keySource: .rawKey(key), schema: schema))
        }
        guard let port = environment["SECITEM_TEST_PGBOUNCER_PORT"], !port.isEmpty else {
            throw SecItemError(
                errSecNotAvailable, "no test pgbouncer: scripts/with-postgresql starts one (Debian's pgbouncer package)")
        }
        return try PostgreSQLBackend(
            configuration: .init(
                connection: "host=\(dir) port=\(port) dbname=secitem user=secitem", keySource: .rawKey(key), schema: schema,
                preparedStatements: false))
    }
}
