import SecItemSecurity
import SecItemModel
/// The task-local client override, so that parallel tests each use their own store.
extension SecItemClient {
    /// The client the global SecItem functions use in this task, when one is bound
    /// with ``withClient(_:operation:)-swift.type.method``; otherwise `nil` and the
    /// process default applies.
    @TaskLocal public static var taskClient: SecItemClient?

    /// Runs `operation` with the global SecItem functions bound to `client`.
    ///
    /// ```swift
    /// try await SecItemClient.withClient(SecItemClient(backend: MemoryBackend())) {
    ///     try await runCodeThatCallsSecItemAdd()
    /// }
    /// ```
    public static func withClient<R>(_ client: SecItemClient, operation: () throws -> R) rethrows -> R {
        try $taskClient.withValue(client, operation: operation)
    }

    /// Runs the async `operation` with the global SecItem functions bound to `client`.
    public static func withClient<R>(
        _ client: SecItemClient, isolation: isolated (any Actor)? = #isolation, operation: () async throws -> R
    ) async rethrows -> R {
        try await $taskClient.withValue(client, operation: operation, isolation: isolation)
    }
}
