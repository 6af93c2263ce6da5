// Built with the SecretService package trait (Package.swift).
#if SecretService
public import SecItemCore
import SecItemSecretService
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Where the D-Bus session bus is, without starting one.
///
/// GLib would otherwise try X11 autolaunch (`dbus-launch`) when
/// `DBUS_SESSION_BUS_ADDRESS` is unset; a headless server must not grow a bus
/// just because a program looked for a keyring.
struct SessionBus: Sendable {
    /// The address to connect to, or `nil` when there is no bus to try.
    let address: String?
    /// Where the address came from, or why there is none.
    let source: String

    static func locate(_ env: [String: String]) -> SessionBus {
        if let address = env["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty {
            return SessionBus(address: address, source: "DBUS_SESSION_BUS_ADDRESS")
        }
        if let runtime = env["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            let path = runtime + "/bus"
            var info = stat()
            if stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK {
                return SessionBus(address: "unix:path=\(path)", source: "$XDG_RUNTIME_DIR/bus")
            }
            return SessionBus(address: nil, source: "DBUS_SESSION_BUS_ADDRESS is not set and \(path) is not a socket")
        }
        return SessionBus(address: nil, source: "DBUS_SESSION_BUS_ADDRESS and XDG_RUNTIME_DIR are not set")
    }
}

/// Whether the Secret Service is usable, as the automatic choice and `secitem diagnose` see it.
public struct SecItemSecretServiceStatus: Sendable {
    /// The bus address tried, if any.
    public var busAddress: String?
    /// Where the address came from, or why there is none.
    public var busSource: String
    /// What the backend's probe found; `nil` when there was no bus to try.
    var probe: SecretServiceBackend.ProbeResult?

    /// A session bus accepted a connection.
    public var busReachable: Bool { probe?.busReachable ?? false }
    /// A Secret Service provider answered.
    public var providerAnswers: Bool { probe?.providerAnswers ?? false }
    /// The collection's object path, when one was found.
    public var collectionPath: String? { probe?.collectionPath }
    /// Whether the collection is locked, when known.
    public var locked: Bool? { probe?.locked }
    /// Why the backend is not usable, when it is not.
    public var problem: SecItemError? { probe?.problem }
    /// How long the probe took (zero when there was no bus to try).
    public var elapsed: Duration { probe?.elapsed ?? .zero }

    /// A provider answered and the collection was found (it may be locked: the
    /// Secret Service is still the user's keyring, and a locked read says so).
    public var isUsable: Bool { probe?.isUsable ?? false }

    /// Why the Secret Service is or is not used, in one sentence, without secrets.
    public var summary: String {
        guard let probe else { return "no D-Bus session bus: \(busSource)" }
        if !probe.busReachable {
            return "the session bus at \(busAddress ?? "?") is not reachable (\(probe.problem.map(String.init(describing:)) ?? "no answer"))"
        }
        if !probe.providerAnswers {
            return "no Secret Service provider answers on the session bus (\(probe.problem.map(String.init(describing:)) ?? "no answer"))"
        }
        if let problem = probe.problem { return "the Secret Service answered but is not usable: \(problem)" }
        var text = "a Secret Service provider answers on the session bus"
        if let path = probe.collectionPath { text += "; collection \(path)" }
        if let source = probe.collectionSource, !source.isEmpty { text += " (\(source))" }
        if probe.locked == true { text += "; the collection is locked (reads fail with errSecInteractionNotAllowed until it is unlocked)" }
        return text
    }

    private static let cache = Mutex<[String: SecItemSecretServiceStatus]>([:])

    /// `probe-timeout`; a value that is not one is passed over for the default.
    static func probeTimeout(_ configuration: SecItemConfiguration) -> Duration {
        ((try? configuration.value(SecretServiceBackend.Settings.probeTimeout)) ?? nil) ?? .milliseconds(800)
    }

    /// Probes once per process for a given bus and collection; later calls return the cached answer.
    public static func probe(_ configuration: SecItemConfiguration) -> SecItemSecretServiceStatus {
        probeAndOpen(configuration, open: false).status
    }

    /// ``probe(_:)``; with `open`, a first probe that finds the Secret Service usable
    /// also hands over a backend on the connection it opened (a cached answer does
    /// not), without reading the collection's lock state (no round trip beyond
    /// opening the session the backend uses).
    static func probeAndOpen(_ configuration: SecItemConfiguration, open: Bool)
        -> (status: SecItemSecretServiceStatus, backend: SecretServiceBackend?)
    {
        let bus = SessionBus.locate(configuration.environment)
        let collection = (try? configuration.value(SecretServiceBackend.Settings.collection)) ?? nil
        let key = "\(bus.address ?? "")\u{0}\(collection ?? "")"
        if let cached = cache.withLock({ $0[key] }) { return (cached, nil) }
        var status = SecItemSecretServiceStatus(busAddress: bus.address, busSource: bus.source, probe: nil)
        var backend: SecretServiceBackend?
        if bus.address != nil {
            // The backend connects to the process's session bus (libsecret's rule);
            // the check above only keeps GLib from autolaunching one.
            let backendConfiguration = SecretServiceBackend.Configuration(configuration)
            var probing = backendConfiguration
            probing.timeout = Self.probeTimeout(configuration)
            let found = SecretServiceBackend.probeAndOpen(probing: probing, then: open ? backendConfiguration : nil)
            status.probe = found.result
            backend = found.backend
        }
        // A probe that opened a backend did not read the lock state: not the
        // whole answer a later probe (`secitem diagnose`) should be given.
        if backend == nil { cache.withLock { $0[key] = status } }
        return (status, backend)
    }
}

/// The Secret Service backend's provider: the automatic choice's first pick when
/// a session bus is reachable and a provider answers within the probe's bound.
public struct SecItemSecretServiceBackendProvider: SecItemBackendProvider {
    public init() {}

    public var kind: BackendKind { .secretService }
    public var automaticRank: Int? { 10 }
    public var displayName: String { "the Secret Service" }
    public var settings: [SecItemSettingDeclaration] { SecretServiceBackend.Settings.all }
    public var environmentVariables: [String] { ["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"] }

    public func open(_ configuration: SecItemConfiguration) throws(SecItemError) -> any SecItemBackend {
        try configuration.checkUsable()
        let bus = SessionBus.locate(configuration.environment)
        guard bus.address != nil else {
            throw SecItemError(errSecNotAvailable, "the Secret Service needs a D-Bus session bus: \(bus.source)")
        }
        return try SecretServiceBackend(configuration: SecretServiceBackend.Configuration(configuration))
    }

    public func probe(_ configuration: SecItemConfiguration) -> BackendAvailability {
        if let portal = DesktopKeySources.sandboxPortal(configuration.environment, timeout: configuration.probeTimeout) {
            return BackendAvailability(usable: false, summary: portal)
        }
        let (status, backend) = SecItemSecretServiceStatus.probeAndOpen(configuration, open: true)
        return BackendAvailability(usable: status.isUsable, summary: status.summary, opened: backend)
    }

    public func diagnose(_ configuration: SecItemConfiguration) -> BackendAvailability {
        let status = SecItemSecretServiceStatus.probe(configuration)
        var notes = [status.busAddress.map { "bus: \($0) (from \(status.busSource))" } ?? "bus: none (\(status.busSource))"]
        notes.append(status.summary)
        if status.busAddress != nil {
            notes.append(
                "probe took \(status.elapsed.wholeMilliseconds) ms (bound \(SecItemSecretServiceStatus.probeTimeout(configuration).wholeMilliseconds) ms per step)")
        }
        if let portal = DesktopKeySources.sandboxPortal(configuration.environment, timeout: configuration.probeTimeout) {
            notes.append("not chosen automatically: \(portal)")
            return BackendAvailability(usable: false, summary: portal, notes: notes)
        }
        return BackendAvailability(usable: status.isUsable, summary: status.summary, notes: notes)
    }
}
#endif
