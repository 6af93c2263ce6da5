public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A private D-Bus bus of the test's own (no service activation, so nothing
/// starts by itself), optionally with a gnome-keyring-daemon serving the Secret
/// Service from a throwaway password, all under a temporary directory. For tests
/// that lock, stop or kill the provider, or watch every message on the bus,
/// without disturbing the shared one.
public final class PrivateSession: @unchecked Sendable {
    // @unchecked: the bus and keyring are started in init and stopped once, by one test.
    public let directory: URL
    public let address: String
    private let bus: PrivateDBus
    public private(set) var keyring: ChildProcess?

    public init(withKeyring: Bool) throws {
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("ss-private-\(UUID().uuidString.prefix(8))")
        let fm = FileManager.default
        for sub in ["run", "data", "home"] {
            try fm.createDirectory(at: directory.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        try fm.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.appendingPathComponent("run").path)
        bus = try PrivateDBus(directory: directory)
        address = bus.address
        if withKeyring { try startKeyring() }
    }

    /// The environment for a child process on this bus.
    public var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["DBUS_SESSION_BUS_ADDRESS"] = address
        env["XDG_RUNTIME_DIR"] = directory.appendingPathComponent("run").path
        env["XDG_DATA_HOME"] = directory.appendingPathComponent("data").path
        env["HOME"] = directory.appendingPathComponent("home").path
        env["SECITEM_SECRET_SERVICE_TIMEOUT"] = "2"
        env["SECITEM_SECRET_SERVICE_NAMESPACE"] = nil
        env["SECITEM_COLLECTION"] = nil
        env["DISPLAY"] = nil
        return env
    }

    public func startKeyring() throws {
        let daemon = try ChildProcess(
            try Executables.which("gnome-keyring-daemon"), ["--foreground", "--unlock", "--components=secrets"],
            environment: environment)
        keyring = daemon
        // A throwaway password, on stdin only.
        try daemon.send(Data(UUID().uuidString.utf8))
        daemon.closeInput()
        let wait = try ChildProcess.run(
            try Executables.which("gdbus"), ["wait", "--session", "--timeout", "15", "org.freedesktop.secrets"],
            environment: environment, timeout: .seconds(20))
        guard wait.status == 0 else {
            throw TestSetupError("gnome-keyring-daemon did not appear on the private bus: \(wait.stderr)")
        }
    }

    /// Locks the login collection through the Secret Service API.
    public func lockLogin() throws {
        let result = try ChildProcess.run(
            try Executables.which("gdbus"),
            [
                "call", "--session", "--dest", "org.freedesktop.secrets", "--object-path", "/org/freedesktop/secrets",
                "--method", "org.freedesktop.Secret.Service.Lock",
                "[objectpath '/org/freedesktop/secrets/collection/login']",
            ], environment: environment, timeout: .seconds(10))
        guard result.status == 0 else { throw TestSetupError("locking the login collection failed: \(result.stderr)") }
    }

    public func signalKeyring(_ signal: Int32) {
        keyring?.signal(signal)
    }

    public func killKeyring() {
        guard let keyring else { return }
        keyring.signal(SIGKILL)
        _ = try? keyring.finish(timeout: .seconds(10))
    }

    deinit {
        killKeyring()
        bus.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}
