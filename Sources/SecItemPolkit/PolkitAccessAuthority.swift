public import SecItemCore
internal import CSecItemDBus
import Foundation
import Synchronization

/// The access authority of a Linux desktop: logind says whether the caller's
/// session is locked, polkit asks the user to prove presence.
///
/// - Session lock: the `LockedHint` of the caller's logind session (the session
///   named by `sessionID`, else `$XDG_SESSION_ID`, else the session of this
///   process, else the user's display session), followed through logind's
///   `PropertiesChanged` signals on a private system-bus connection, so a read
///   costs an atomic load, not a round trip. No system bus, no logind or no
///   session: unlocked (there is nothing to lock), as on a headless server. A
///   session id logind does not know is passed over for the next way; when none
///   is left, or the session's `LockedHint` cannot be read, the session counts as
///   **locked**: naming a bogus session never opens `WhenUnlocked` items.
/// - Presence: `org.freedesktop.PolicyKit1.Authority.CheckAuthorization` for
///   ``action`` (by default ``defaultAction``, shipped as
///   `policy/org.secitem.policy`, `auth_self`) with user interaction allowed:
///   the session's authentication agent asks for the user's password, or a
///   fingerprint where PAM has fprintd.
///
/// ```swift
/// let client = SecItemClient(backend: backend, accessGroups: groups,
///                            accessAuthority: PolkitAccessAuthority())
/// ```
public final class PolkitAccessAuthority: AccessAuthority {
    /// The polkit action the package ships: reading a protected keychain item.
    public static let defaultAction = "org.secitem.item.read-protected"

    /// The action asked about.
    public let action: String
    /// The logind session whose lock counts; `nil` for the caller's own.
    public let sessionID: String?
    /// The bus to use; `nil` for the system bus (`DBUS_SYSTEM_BUS_ADDRESS`, else its well-known socket).
    public let busAddress: String?
    /// How long an authorization may take (the user typing a password), in milliseconds.
    public let timeoutMilliseconds: Int32

    private let state = Mutex(State())

    private struct State {
        var bus: Bus?
        var watch = Watch.notStarted
    }

    private enum Watch {
        case notStarted
        case watching(session: String)
        case unavailable(reason: String)
        /// A session was named that logind does not know, and there is no other: locked.
        case closed(reason: String)
    }

    /// What ``sessionLockState()`` reads: the followed session, or a fixed answer.
    private enum WatchedState {
        case following(Bus)
        case fixed(SessionLockState)
    }

    /// Creates an authority; it connects on first use.
    /// - Parameters:
    ///   - action: The polkit action (a distribution may ship its own with other defaults).
    ///   - sessionID: The logind session whose lock counts; `nil` for the caller's.
    ///   - busAddress: A D-Bus address instead of the system bus.
    ///   - timeoutMilliseconds: How long to wait for the user; default 5 minutes.
    public init(
        action: String = defaultAction, sessionID: String? = nil, busAddress: String? = nil,
        timeoutMilliseconds: Int32 = 300_000
    ) {
        self.action = action
        self.sessionID = sessionID
        self.busAddress = busAddress
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// The authority the process default client uses: ``defaultAction`` and the
    /// caller's own session.
    ///
    /// Debug builds only (the test suite's mock actions): `SECITEM_POLKIT_ACTION`,
    /// when set, names the action instead. Release builds ignore it, so the
    /// environment cannot choose which polkit action guards the items (a
    /// distribution with an action of its own builds a client with
    /// ``init(action:sessionID:busAddress:timeoutMilliseconds:)``).
    public static let processDefault = PolkitAccessAuthority(action: processDefaultAction)

    /// ``defaultAction``, or in debug builds `SECITEM_POLKIT_ACTION` when set.
    static var processDefaultAction: String {
        #if DEBUG
            if let action = getenv("SECITEM_POLKIT_ACTION").map({ String(cString: $0) }), !action.isEmpty { return action }
        #endif
        return defaultAction
    }

    // MARK: AccessAuthority

    public func sessionLockState() -> SessionLockState {
        let watched = state.withLock { state -> WatchedState in
            if case .notStarted = state.watch { Self.startWatch(&state, sessionID: sessionID, address: busAddress) }
            switch state.watch {
            case .watching: return state.bus.map { .following($0) } ?? .fixed(.unlocked)
            case .closed: return .fixed(.locked)
            case .unavailable, .notStarted: return .fixed(.unlocked)
            }
        }
        switch watched {
        case .following(let bus): return secitem_logind_locked(bus.pointer) == 0 ? .unlocked : .locked
        case .fixed(let state): return state
        }
    }

    public func authorizeUserPresence(prompt: String?) -> PresenceOutcome {
        let opened = state.withLock { state in Self.connect(&state, address: busAddress) }
        let bus: Bus
        switch opened {
        case .success(let b): bus = b
        case .failure(let failure): return .unavailable(reason: failure.reason)
        }
        // Blocks while the user answers: outside the lock.
        var reason: UnsafeMutablePointer<CChar>?
        let result = secitem_polkit_check(bus.pointer, action, prompt, 1, timeoutMilliseconds, &reason)
        let why = Self.take(reason)
        switch result {
        case SECITEM_POLKIT_AUTHORIZED: return .authorized
        case SECITEM_POLKIT_DISMISSED: return .dismissed
        case SECITEM_POLKIT_DENIED: return .denied
        case SECITEM_POLKIT_NO_AGENT: return .unavailable(reason: why ?? "no polkit authentication agent answered")
        default: return .unavailable(reason: why ?? "polkit could not be asked")
        }
    }

    // MARK: Asking without asking the user

    /// Whether `name` has an owner on this authority's bus (`false` when the bus cannot be
    /// reached): `org.freedesktop.PolicyKit1` is whether presence can be asked at all,
    /// `net.reactivated.Fprint` whether fprintd (fingerprints) runs. Never prompts.
    package func busNameHasOwner(_ name: String) -> Bool {
        let opened = state.withLock { state in Self.connect(&state, address: busAddress) }
        guard case .success(let bus) = opened else { return false }
        return secitem_dbus_name_has_owner(bus.pointer, name) == 1
    }

    // MARK: Diagnosis

    /// What `secitem diagnose` prints about this authority.
    public struct Report: Sendable {
        /// The system bus: reachable, or why not.
        public var systemBus: String
        /// polkit: running, or why it cannot be asked.
        public var polkit: String
        /// The authentication agent, as far as can be told without asking the user.
        public var agent: String
        /// logind and the session whose lock counts, with its state.
        public var session: String
        /// Whether items needing user presence can be read here.
        public var polkitReachable: Bool
        /// Whether a session lock is followed (else every item counts as unlocked).
        public var logindReachable: Bool
    }

    /// Looks at the system bus, polkit, the agent and logind without asking the user anything.
    public func report() -> Report {
        let opened = state.withLock { state in Self.connect(&state, address: busAddress) }
        let agent = AuthenticationAgentProbe.describe()
        guard case .success(let bus) = opened else {
            let reason: String
            if case .failure(let failure) = opened { reason = failure.reason } else { reason = "" }
            return Report(
                systemBus: "not reachable: \(reason)",
                polkit: "cannot be asked (no system bus): items needing user presence give errSecInteractionNotAllowed",
                agent: agent,
                session: "no logind (no system bus): the session counts as unlocked",
                polkitReachable: false, logindReachable: false)
        }
        let polkitOwned = secitem_dbus_name_has_owner(bus.pointer, "org.freedesktop.PolicyKit1") == 1
        _ = sessionLockState()
        let watch = state.withLock { $0.watch }
        let session: String
        let logindReachable: Bool
        switch watch {
        case .watching(let path):
            let locked = secitem_logind_locked(bus.pointer) == 1
            session = "logind session \(path): \(locked ? "locked" : "unlocked")"
            logindReachable = true
        case .unavailable(let reason):
            session = "\(reason): the session counts as unlocked"
            logindReachable = false
        case .closed(let reason):
            session = "\(reason): the session counts as locked"
            logindReachable = true
        case .notStarted:
            session = "not asked"
            logindReachable = false
        }
        return Report(
            systemBus: "reachable",
            polkit: polkitOwned
                ? "running (action \(action))"
                : "not running: items needing user presence give errSecInteractionNotAllowed",
            agent: agent, session: session, polkitReachable: polkitOwned, logindReachable: logindReachable)
    }

    // MARK: Internals

    /// A connection; closed when the last reference goes.
    private final class Bus: @unchecked Sendable {
        // @unchecked: the C side is safe to call from any thread (GDBusConnection
        // is thread-safe; the lock state is an atomic), and the pointer never changes.
        let pointer: OpaquePointer
        init(_ pointer: OpaquePointer) { self.pointer = pointer }
        deinit { secitem_dbus_close(pointer) }
    }

    private struct ConnectFailure: Error {
        var reason: String
    }

    private static func connect(_ state: inout State, address: String?) -> Result<Bus, ConnectFailure> {
        if let bus = state.bus { return .success(bus) }
        if address == nil, let missing = missingSystemBusSocket() { return .failure(ConnectFailure(reason: missing)) }
        var error: UnsafeMutablePointer<CChar>?
        guard let pointer = secitem_dbus_open(address, &error) else {
            return .failure(ConnectFailure(reason: take(error) ?? "cannot connect to the system bus"))
        }
        let bus = Bus(pointer)
        state.bus = bus
        return .success(bus)
    }

    /// Why the system bus cannot be there, when its address (`DBUS_SYSTEM_BUS_ADDRESS`,
    /// else GLib's default `unix:path=/var/run/dbus/system_bus_socket`) is one plain
    /// socket path and nothing is at that path: answered without starting GIO (its type
    /// system and worker thread), which a server without D-Bus would pay on every read
    /// of an item that depends on the session lock. `nil`: ask GIO.
    static func missingSystemBusSocket() -> String? {
        let configured = getenv("DBUS_SYSTEM_BUS_ADDRESS").map { String(cString: $0) } ?? ""
        let address = configured.isEmpty ? "unix:path=/var/run/dbus/system_bus_socket" : configured
        let prefix = "unix:path="
        guard address.hasPrefix(prefix), !address.contains(where: { ";,%".contains($0) }) else { return nil }
        var status = stat()
        guard stat(String(address.dropFirst(prefix.count)), &status) != 0 else { return nil }
        return "cannot connect to the system bus at \(address): \(String(cString: strerror(errno)))"
    }

    private static func startWatch(_ state: inout State, sessionID: String?, address: String?) {
        switch connect(&state, address: address) {
        case .failure(let failure):
            state.watch = .unavailable(reason: "no system bus (\(failure.reason))")
        case .success(let bus):
            var session: UnsafeMutablePointer<CChar>?
            var reason: UnsafeMutablePointer<CChar>?
            switch secitem_logind_watch(bus.pointer, sessionID, &session, &reason) {
            case 0: state.watch = .watching(session: take(session) ?? "?")
            case -2: state.watch = .closed(reason: take(reason) ?? "logind knows no such session")
            default: state.watch = .unavailable(reason: take(reason) ?? "no logind session")
            }
        }
    }

    private static func take(_ text: UnsafeMutablePointer<CChar>?) -> String? {
        guard let text else { return nil }
        defer { secitem_dbus_free_string(text) }
        return String(cString: text)
    }
}

/// Whether a polkit authentication agent runs for this user. polkit has no
/// call that says so without asking the user, so this looks for the known
/// agents' processes (GNOME Shell and KDE have theirs built in or alongside).
enum AuthenticationAgentProbe {
    static let knownAgents = [
        "gnome-shell", "polkit-gnome-authentication-agent-1", "polkit-kde-authentication-agent-1",
        "polkit-mate-authentication-agent-1", "lxpolkit", "lxqt-policykit-agent", "xfce-polkit", "hyprpolkitagent",
        "polkit-efl-authentication-agent-1", "cinnamon", "budgie-polkit-dialog", "soteria", "pkttyagent",
    ]

    static func describe() -> String {
        if let name = runningAgent() { return "\(name) (found by process name; polkit does not say)" }
        return "none found by process name: an item needing user presence gives errSecInteractionNotAllowed unless one is running"
    }

    static func runningAgent() -> String? {
        let uid = getuid()
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return nil }
        for entry in entries where entry.first?.isNumber == true {
            var info = stat()
            guard stat("/proc/\(entry)", &info) == 0, info.st_uid == uid,
                let cmdline = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
                let first = cmdline.split(separator: 0, omittingEmptySubsequences: false).first
            else { continue }
            let name = String(decoding: first, as: UTF8.self).split(separator: "/").last.map(String.init) ?? ""
            if knownAgents.contains(name) || (name.contains("polkit") && name.contains("agent")) { return name }
        }
        return nil
    }
}
