// Built with the PostgreSQL package trait (Package.swift).
#if PostgreSQL
public import SecItemCore
import SecItemPostgreSQL
import SecItemSealedStore

/// The PostgreSQL backend's provider: `SECITEM_BACKEND=postgresql` (or
/// `backend = postgresql`) opens the keychain shared through the server that
/// `postgresql-url` / `SECITEM_POSTGRESQL_URL` and the `PG*` variables name.
/// Never chosen automatically: a shared store is an operator's decision.
public struct SecItemPostgreSQLBackendProvider: SecItemBackendProvider {
    public init() {}

    public var kind: BackendKind { .postgresql }
    public var automaticRank: Int? { nil }
    public var displayName: String { "the shared PostgreSQL keychain" }
    public var settings: [SecItemSettingDeclaration] { PostgreSQLBackend.Settings.all }
    public var environmentVariables: [String] {
        ["PGHOST", "PGHOSTADDR",
         "PGPORT", "PGDATABASE", "PGUSER", "PGPASSWORD", "PGPASSFILE", "PGSERVICE", "PGSSLMODE", "PGSSLROOTCERT",
         "PGCONNECT_TIMEOUT", "PGTARGETSESSIONATTRS", "XDG_STATE_HOME"]
    }
    /// libpq's password variable (the URL, which may hold one, is a declared secret).
    public var secretEnvironmentVariables: Set<String> { ["PGPASSWORD"] }

    public func open(_ configuration: SecItemConfiguration) throws(SecItemError) -> any SecItemBackend {
        try configuration.checkUsable()
        return try PostgreSQLBackend(configuration: PostgreSQLBackend.Configuration(configuration))
    }

    /// Whether it is configured; connects to nothing (it is never chosen automatically).
    public func probe(_ configuration: SecItemConfiguration) -> BackendAvailability {
        do throws(SecItemError) {
            try configuration.checkUsable()
            _ = try PostgreSQLBackend.Configuration(configuration)
            return BackendAvailability(
                usable: true, summary: "configured (never chosen automatically; SECITEM_BACKEND=postgresql selects it)")
        } catch {
            return BackendAvailability(usable: false, summary: "not configured: \(error)")
        }
    }

    /// Connects (bounded) and says whether the keychain exists and unlocks; creates nothing.
    public func diagnose(_ configuration: SecItemConfiguration) -> BackendAvailability {
        let settings: PostgreSQLBackend.Configuration
        do throws(SecItemError) {
            try configuration.checkUsable()
            settings = try PostgreSQLBackend.Configuration(configuration)
        } catch {
            return BackendAvailability(
                usable: false, summary: "not configured: \(error)",
                notes: ["never chosen automatically; set SECITEM_BACKEND=postgresql, SECITEM_POSTGRESQL_URL and a shared key"])
        }
        let (usable, notes) = PostgreSQLBackend.inspect(settings)
        return BackendAvailability(
            usable: usable, summary: usable ? "usable (never chosen automatically)" : "not usable",
            notes: ["never chosen automatically"] + notes
                + settings.keySource.diagnosisLines(keyCacheTimeout: settings.keyCacheTimeout))
    }
}
#endif
