public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TPM 2.0 of the test's own: Debian's `swtpm` on two free local TCP ports (its
/// command port and its control port), with its state in a fresh directory. Stopped,
/// and its state deleted, by ``stop()`` or when released.
///
/// Tests that use one are marked `.requires(.softwareTPM)`: skipped with the reason
/// when swtpm or tpm2-tools is missing, failing under `SECITEM_REQUIRE_SERVICES=1`.
public final class SoftwareTPM: Sendable {
    private let daemon: ChildProcess
    /// The TPM's command port (`port + 1` is its control port).
    public let port: Int
    /// Where swtpm keeps the TPM's state (its seeds: a fresh directory is another TPM).
    public let stateDirectory: URL

    /// The TSS2 TCTI string for this TPM (`SECITEM_TPM2_TCTI`, `TPM2TOOLS_TCTI`).
    public var tcti: String { "swtpm:host=127.0.0.1,port=\(port)" }

    /// Starts a TPM with a fresh state.
    /// - Throws: `TestSetupError` when swtpm is missing or does not start listening.
    public init() throws {
        let swtpm = try Executables.which("swtpm")
        stateDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("secitem-swtpm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: stateDirectory, withIntermediateDirectories: true)
        var lastError = "no free pair of ports"
        for _ in 0..<5 {
            guard let port = Self.freePortPair() else { continue }
            let child = try ChildProcess(
                swtpm,
                [
                    "socket", "--tpm2", "--server", "type=tcp,bindaddr=127.0.0.1,port=\(port)",
                    "--ctrl", "type=tcp,bindaddr=127.0.0.1,port=\(port + 1)", "--tpmstate", "dir=\(stateDirectory.path)",
                    "--flags", "not-need-init,startup-clear",
                ])
            let deadline = ContinuousClock.now + .seconds(10)
            while child.isRunning, !Self.accepts(port), ContinuousClock.now < deadline { usleep(5_000) }
            if child.isRunning, Self.accepts(port) {
                (daemon, self.port) = (child, port)
                return
            }
            child.signal()
            lastError = (try? child.finish().stderr) ?? "swtpm did not listen on port \(port)"
        }
        try? FileManager.default.removeItem(at: stateDirectory)
        throw TestSetupError("swtpm did not start: \(lastError)")
    }

    deinit { stop() }

    /// Stops swtpm and deletes its state (SIGKILL: its state is thrown away, and a child
    /// spawned from a test thread may inherit a mask that blocks SIGTERM).
    public func stop() {
        if daemon.isRunning {
            daemon.signal()
            _ = try? daemon.finish(timeout: .seconds(5))
        }
        try? FileManager.default.removeItem(at: stateDirectory)
    }

    /// Extends PCR `index` of the SHA-256 bank (tpm2-tools' `tpm2_pcrextend`), as a
    /// changed boot component would.
    public func extendPCR(_ index: Int) throws {
        let digest = String(repeating: "ab", count: 32)
        var environment = ProcessInfo.processInfo.environment
        environment["TPM2TOOLS_TCTI"] = tcti
        let out = try ChildProcess.run(
            try Executables.which("tpm2_pcrextend"), ["\(index):sha256=\(digest)"], environment: environment, timeout: .seconds(20))
        guard out.status == 0 else { throw TestSetupError("tpm2_pcrextend failed: \(out.stderr)") }
    }

    /// A port `p` such that `p` and `p + 1` are both free on 127.0.0.1 now.
    public static func freePortPair() -> Int? {
        for _ in 0..<20 {
            guard let port = bindable(0), port < 65535, bindable(port + 1) != nil else { continue }
            return port
        }
        return nil
    }

    /// Binds a TCP socket on 127.0.0.1 to `port` (0: any), closes it, and returns the port.
    private static func bindable(_ port: Int) -> Int? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p in
                bind(fd, p, length) == 0 && getsockname(fd, p, &length) == 0
            }
        }
        return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    private static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
