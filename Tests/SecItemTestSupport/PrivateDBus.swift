public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A private D-Bus session bus of the test's own, listening on a socket in
/// `directory`: no service activation (nothing starts by itself), nothing shared
/// with the suite's bus. The one dbus-daemon configuration of the tests.
public final class PrivateDBus: Sendable {
    private let daemon: ChildProcess
    /// The bus address (`unix:path=…`).
    public let address: String

    public init(directory: URL) throws {
        let socket = directory.appendingPathComponent("bus").path
        let config = directory.appendingPathComponent("bus.conf")
        try Data(Self.configuration(socket: socket).utf8).write(to: config)
        daemon = try ChildProcess(
            try Executables.which("dbus-daemon"), ["--config-file=\(config.path)", "--nofork", "--nosyslog"])
        let deadline = ContinuousClock.now + .seconds(10)
        while !FileManager.default.fileExists(atPath: socket) {
            guard daemon.isRunning, ContinuousClock.now < deadline else {
                daemon.signal()
                throw TestSetupError("the private dbus-daemon did not create \(socket)")
            }
            usleep(5_000)
        }
        address = "unix:path=\(socket)"
    }

    deinit { stop() }

    /// A session bus on `socket` that lets every client own and call anything.
    static func configuration(socket: String) -> String {
        """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """
    }

    /// Stops the daemon (SIGKILL: dbus-daemon does not always stop on SIGTERM, and a
    /// child spawned from a test thread may inherit a mask that blocks it).
    public func stop() {
        guard daemon.isRunning else { return }
        daemon.signal()
        _ = try? daemon.finish()
    }
}
