public import SecItemCore
public import SecItemMemory

/// The memory backend's provider: `SECITEM_BACKEND=memory` gives one store per
/// process, so that every client in the process sees the same items. Never
/// chosen automatically.
public struct SecItemMemoryBackendProvider: SecItemBackendProvider {
    public init() {}

    public var kind: BackendKind { .memory }
    public var automaticRank: Int? { nil }
    public var displayName: String { "the memory store" }

    /// The one memory store of the process.
    public static let processStore = MemoryBackend()

    public func open(_ configuration: SecItemConfiguration) throws(SecItemError) -> any SecItemBackend {
        Self.processStore
    }

    public func probe(_ configuration: SecItemConfiguration) -> BackendAvailability {
        BackendAvailability(
            usable: true, summary: "always usable",
            notes: ["never chosen automatically; SECITEM_BACKEND=memory gives a store that lives as long as the process"])
    }
}
