import SecItemSecurity
/// The name of a backend, as `SECITEM_BACKEND=NAME` and `backend = NAME` in the
/// config file give it: one of the built-in kinds or any name a provider registers
/// (see ``SecItemBackendProvider``).
public struct BackendKind: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ name: String) { self.rawValue = name }
    public init(stringLiteral value: String) { self.rawValue = value }

    /// The process-local store (tests); never chosen automatically.
    public static let memory: BackendKind = "memory"
    /// The encrypted SQLite file (servers, CI; the automatic fallback).
    public static let file: BackendKind = "file"
    /// The desktop keyring through the Secret Service D-Bus API.
    public static let secretService: BackendKind = "secret-service"
    /// The encrypted store shared through PostgreSQL; never chosen automatically.
    public static let postgresql: BackendKind = "postgresql"

    public var description: String { rawValue }
}
