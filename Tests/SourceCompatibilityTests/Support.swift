// Kept apart from the files under test, so they import only what an Apple file would.
import Foundation
import SecItem
import SecItemMemory
import Testing

/// A fresh memory store, so each test has its own keychain.
func isolatedStore() -> any SecItemBackend {
    MemoryBackend()
}

/// The stores the Apple-style code runs on (issue 26: memory, file and Secret Service), each
/// opened through the backend registry as an app would select it, empty and its own.
enum AppleStyleStore: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory
    case file
    /// The provider of scripts/with-secret-service (gnome-keyring, KWallet or KeePassXC; a fresh namespace).
    case secretService = "secret-service"

    var testDescription: String { rawValue }

    /// Memory and file always; the Secret Service where the test command started one
    /// (scripts/test always does, on every provider).
    static var available: [AppleStyleStore] {
        ProcessInfo.processInfo.environment["SECITEM_TEST_SECRET_SERVICE"] == "1" ? allCases : [.memory, .file]
    }

    /// A fresh, empty store.
    func open() throws -> any SecItemBackend {
        switch self {
        case .memory:
            return isolatedStore()
        case .file:
            let home = URL(fileURLWithPath: Self.fileRoot).appendingPathComponent(UUID().uuidString)
            return try SecItemBackendChoice.resolve(configuration: .environmentOnly([
                "SECITEM_BACKEND": "file", "XDG_DATA_HOME": home.appendingPathComponent("data").path,
                "XDG_CONFIG_HOME": home.appendingPathComponent("config").path,
            ])).backend
        case .secretService:
            // The session bus of the test command (DBUS_SESSION_BUS_ADDRESS, XDG_RUNTIME_DIR).
            let environment = ProcessInfo.processInfo.environment.merging([
                "SECITEM_BACKEND": "secret-service", "SECITEM_SECRET_SERVICE_NAMESPACE": "apple-style-\(UUID().uuidString)",
                "SECITEM_SECRET_SERVICE_TIMEOUT": "20",
            ]) { $1 }
            return try SecItemBackendChoice.resolve(configuration: .environmentOnly(environment)).backend
        }
    }

    /// One directory per test process for the file stores, removed when the process exits.
    static let fileRoot: String = {
        atexit { try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "secitem-apple-style-\(getpid())") }
        return NSTemporaryDirectory() + "secitem-apple-style-\(getpid())"
    }()

    /// Runs `body` with a client on a fresh store of this kind, as the process's keychain.
    func with(_ body: () throws -> Void) throws {
        try SecItemClient.withClient(SecItemClient(backend: open(), accessGroups: ["app"]), operation: body)
    }
}
