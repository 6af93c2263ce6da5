public import SecItemCore
import SecItemMemory
import Foundation
import Synchronization

/// The process-wide keychain: which backend the global `SecItem…` functions use.
///
/// By default the backend is chosen once per process, on first use: an explicit
/// ``bootstrap(_:)`` → `SECITEM_BACKEND` (`memory`, `file`, `secret-service`) →
/// the automatic choice. A task can override it for its own calls with
/// `SecItemClient.withClient(_:operation:)`, which is how parallel tests each get
/// an isolated store.
public enum SecItemSystem {
    private static let state = Mutex<SecItemClient?>(nil)

    /// Makes `client` the process default, replacing any earlier choice.
    public static func bootstrap(_ client: SecItemClient) {
        state.withLock { $0 = client }
    }

    /// Makes `backend` the process default, with the given entitled access groups.
    public static func bootstrap(backend: any SecItemBackend, accessGroups: AccessGroups = .fromEnvironment()) {
        bootstrap(SecItemClient(backend: backend, accessGroups: accessGroups))
    }

    /// The client the global functions use in the current task.
    /// - Throws: ``SecItemError`` when the default backend cannot be opened (for
    ///   example `errSecNotAvailable`, `errSecAuthFailed`), with the reason.
    public static func currentClient() throws(SecItemError) -> SecItemClient {
        if let client = SecItemClient.taskClient { return client }
        return try defaultClient()
    }

    /// The process default client, chosen and opened on first use.
    public static func defaultClient() throws(SecItemError) -> SecItemClient {
        if let client = state.withLock({ $0 }) { return client }
        let environment = ProcessInfo.processInfo.environment
        let chosen = try BackendChoice.resolve(environment: environment)
        // SECITEM_ACCESS_GROUPS, else `access-groups` in the config file (Settings.swift).
        let client = SecItemClient(backend: chosen.backend, accessGroups: SecItemSettings.accessGroups(environment: environment))
        // Another thread may have won the race; keep the first so every caller shares one store.
        return state.withLock { current in
            if let current { return current }
            current = client
            return client
        }
    }
}

/// Which backend to use, and why.
public struct BackendChoice: Sendable {
    /// The opened backend.
    public let backend: any SecItemBackend
    /// Why it was chosen, in words, for `secitem diagnose`.
    public let reason: String

    /// The backend names `SECITEM_BACKEND` accepts.
    public static let names = ["memory", "file", "secret-service"]

    /// Opens the backend that `environment` asks for, or the automatic choice.
    public static func resolve(environment: [String: String]) throws(SecItemError) -> BackendChoice {
        if let name = environment["SECITEM_BACKEND"], !name.isEmpty {
            return BackendChoice(backend: try open(name, environment: environment), reason: "SECITEM_BACKEND=\(name)")
        }
        return try automatic(environment: environment)
    }

    /// Opens a backend by name.
    public static func open(_ name: String, environment: [String: String]) throws(SecItemError) -> any SecItemBackend {
        switch name {
        case "memory":
            return processMemoryBackend
        case "file", "secret-service":
            return try openPersistent(name, environment: environment)
        default:
            throw SecItemError(
                errSecParam, "SECITEM_BACKEND='\(name)' is not a backend; use one of \(names.joined(separator: ", "))")
        }
    }

    /// One memory store per process, so that every client in the process sees the same items.
    static let processMemoryBackend = MemoryBackend()
}
