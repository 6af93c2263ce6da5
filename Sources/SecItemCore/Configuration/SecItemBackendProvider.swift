/// What makes a backend selectable by name (`SECITEM_BACKEND=NAME`, `backend = NAME`)
/// and by the automatic choice: one provider per backend, registered with
/// `SecItemBackendRegistry.register(_:)` (module `SecItem`).
///
/// A provider owns everything the rest of the package needs to know about its
/// backend's availability: how to open it from a ``SecItemConfiguration``, how to
/// probe it quickly, and what `secitem diagnose` says about it. Nothing outside
/// the provider switches on a backend's name.
///
/// Rules a provider keeps:
/// - ``probe(_:)`` and ``diagnose(_:)`` never create a store, never prompt, never
///   throw, print no secret, and are bounded in time.
/// - ``open(_:)`` throws a ``SecItemError`` saying what is missing; it calls
///   ``SecItemConfiguration/checkUsable()`` first when it reads settings or files.
public protocol SecItemBackendProvider: Sendable {
    /// The name users give (`file`, `secret-service`, `postgresql`, …).
    var kind: BackendKind { get }
    /// Where the automatic choice tries it: providers with a rank are tried lowest
    /// first, each probed, the first usable one chosen; the last ranked provider is
    /// the fallback, opened without a probe. `nil`: used only when named.
    var automaticRank: Int? { get }
    /// How the automatic choice names it in its reason ("the encrypted file").
    var displayName: String { get }
    /// Opens the backend the configuration describes.
    func open(_ configuration: SecItemConfiguration) throws(SecItemError) -> any SecItemBackend
    /// Whether the backend can be used now, cheaply and bounded in time. A probe that
    /// had to open the backend hands it over in ``BackendAvailability/opened`` so
    /// that the automatic choice does not open a second one.
    func probe(_ configuration: SecItemConfiguration) -> BackendAvailability
    /// What `secitem diagnose` reports: ``probe(_:)`` with every fact worth a line.
    func diagnose(_ configuration: SecItemConfiguration) -> BackendAvailability
    /// The settings this backend reads (its own, declared next to its code, and those of
    /// the key sources it uses), each read with ``SecItemConfiguration/value(_:)``.
    /// Registering the provider declares them (``SecItemSettingCatalog``): the config
    /// file accepts their keys, `secitem diagnose` shows their values and origins, and
    /// `--help`, `secitem-config(5)` and docs/settings.md list them. Default: none.
    var settings: [SecItemSettingDeclaration] { get }
    /// Other environment variables this backend reads, not settings of its own (`PGHOST`,
    /// `DBUS_SESSION_BUS_ADDRESS`, …), in the order `secitem diagnose` lists them when set.
    /// Default: none.
    var environmentVariables: [String] { get }
    /// Those of ``environmentVariables`` whose value is or may hold a secret:
    /// `secitem diagnose` shows them as `(set)`, never their value (declared settings say
    /// so in their declaration). Default: none.
    var secretEnvironmentVariables: Set<String> { get }
}

extension SecItemBackendProvider {
    public var displayName: String { "the \(kind) backend" }
    public var settings: [SecItemSettingDeclaration] { [] }
    public var environmentVariables: [String] { [] }
    public var secretEnvironmentVariables: Set<String> { [] }
    public func diagnose(_ configuration: SecItemConfiguration) -> BackendAvailability { probe(configuration) }
}

/// What a provider's probe or diagnosis found.
public struct BackendAvailability: Sendable {
    /// Whether the backend can be used now.
    public var usable: Bool
    /// Why it is or is not usable, in one sentence, without secrets.
    public var summary: String
    /// Facts, one per line (paths, modes, causes); no secrets.
    public var notes: [String]
    /// A backend the probe opened on the way, for the caller to use (or drop).
    public var opened: (any SecItemBackend)?

    public init(usable: Bool, summary: String, notes: [String] = [], opened: (any SecItemBackend)? = nil) {
        self.usable = usable
        self.summary = summary
        self.notes = notes
        self.opened = opened
    }
}
