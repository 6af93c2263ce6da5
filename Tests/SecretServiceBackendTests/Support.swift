import Foundation
import SecItem
import SecItemCore
import SecItemSecretService
import Testing

/// A test precondition that failed: the message says what to do.
struct SetupError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The shared Secret Service the tests run against: the private session that
/// `scripts/with-secret-service` starts around `swift test`. Missing → every test
/// fails with this message (never a skip: CI must run these).
enum SharedService {
    static let availability: Result<Void, SetupError> = {
        let environment = ProcessInfo.processInfo.environment
        guard let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty else {
            return .failure(SetupError(
                "DBUS_SESSION_BUS_ADDRESS is not set: run the Secret Service tests under scripts/with-secret-service "
                    + "(scripts/with-secret-service swift test --filter SecretServiceBackendTests)"))
        }
        let probe = SecretServiceBackend.probe(timeout: .seconds(10))
        guard probe.isUnlocked else {
            return .failure(SetupError(
                "no usable Secret Service on the session bus (\(probe)); run under scripts/with-secret-service"))
        }
        return .success(())
    }()

    /// A backend on the shared service with a fresh namespace: an empty store of its own.
    static func backend(namespace: String = "test-\(UUID().uuidString)") throws -> SecretServiceBackend {
        try availability.get()
        return try SecretServiceBackend(configuration: .init(namespace: namespace, timeout: .seconds(10)))
    }

    static func client(_ backend: SecretServiceBackend) -> SecItemClient {
        SecItemClient(backend: backend, accessGroups: AccessGroups(["test", "other"]))
    }
}

// MARK: Processes

/// The output of a finished command.
struct CommandResult {
    var status: Int32
    var stdout: Data
    var stderr: String
}

/// Runs a command to completion, killing it after `timeout`. Output goes through
/// files, so a chatty command cannot block on a full pipe.
func runCommand(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: Data? = nil,
    timeout: Duration = .seconds(60)
) throws -> CommandResult {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ss-cmd-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let out = dir.appendingPathComponent("out")
    let err = dir.appendingPathComponent("err")
    _ = FileManager.default.createFile(atPath: out.path, contents: nil)
    _ = FileManager.default.createFile(atPath: err.path, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    process.standardOutput = try FileHandle(forWritingTo: out)
    process.standardError = try FileHandle(forWritingTo: err)
    let input = Pipe()
    process.standardInput = input
    try process.run()
    if let stdin { input.fileHandleForWriting.write(stdin) }
    try input.fileHandleForWriting.close()
    let deadline = ContinuousClock.now + timeout
    while process.isRunning {
        if ContinuousClock.now > deadline {
            kill(process.processIdentifier, SIGKILL)  // children inherit a mask that blocks SIGTERM
            process.waitUntilExit()
            throw SetupError("\(executable) \(arguments.first ?? "") did not finish within \(timeout)")
        }
        usleep(5_000)
    }
    return CommandResult(
        status: process.terminationStatus, stdout: (try? Data(contentsOf: out)) ?? Data(),
        stderr: String(decoding: (try? Data(contentsOf: err)) ?? Data(), as: UTF8.self))
}

/// Finds a program on PATH.
func which(_ name: String) throws -> String {
    for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let path = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    throw SetupError("\(name) is not installed (scripts/with-secret-service installs it)")
}

/// The helper executable built next to the test bundle.
func helperPath() throws -> String {
    var candidates: [URL] = []
    if let exe = Bundle.main.executableURL { candidates.append(exe.deletingLastPathComponent()) }
    candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
    for var dir in candidates {
        for _ in 0..<4 {
            let path = dir.appendingPathComponent("SecretServiceTestHelper").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
            dir = dir.deletingLastPathComponent()
        }
    }
    throw SetupError("SecretServiceTestHelper was not built next to the tests")
}

/// A `SecretServiceTestHelper repl` child: one command per line, one result per line.
final class HelperProcess {
    struct Reply {
        var kind: String  // ok, dup, err
        var status: Int32
        var milliseconds: Int
        var detail: String
    }

    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffer = Data()

    init(environment: [String: String]) throws {
        process.executableURL = URL(fileURLWithPath: try helperPath())
        process.arguments = ["repl"]
        process.environment = environment
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    deinit {
        try? input.fileHandleForWriting.close()  // the helper exits at end of input
        let deadline = ContinuousClock.now + .seconds(5)
        while process.isRunning && ContinuousClock.now < deadline { usleep(5_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    func send(_ command: String) {
        input.fileHandleForWriting.write(Data((command + "\n").utf8))
    }

    /// Reads the next reply, failing after `timeout` instead of hanging.
    func reply(timeout: Duration = .seconds(30)) throws -> Reply {
        let fd = output.fileHandleForReading.fileDescriptor
        let deadline = ContinuousClock.now + timeout
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return Self.parse(line)
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw SetupError("the helper did not answer within \(timeout)") }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ms = Int32(clamping: left.components.seconds * 1000 + 1)
            guard poll(&pfd, 1, ms) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = read(fd, &chunk, chunk.count)
            guard n > 0 else { throw SetupError("the helper exited without answering") }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }

    func run(_ command: String, timeout: Duration = .seconds(30)) throws -> Reply {
        send(command)
        return try reply(timeout: timeout)
    }

    private static func parse(_ line: String) -> Reply {
        let words = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
        switch words.first {
        case "ok", "dup":
            return Reply(kind: words[0], status: words[0] == "ok" ? 0 : -25299,
                         milliseconds: Int(words.count > 1 ? words[1] : "") ?? -1, detail: "")
        case "err" where words.count >= 3:
            return Reply(kind: "err", status: Int32(words[1]) ?? 1, milliseconds: Int(words[2]) ?? -1,
                         detail: words.count > 3 ? words[3] : "")
        default:
            return Reply(kind: "garbled", status: 1, milliseconds: -1, detail: line)
        }
    }
}

// MARK: Private sessions

/// A private D-Bus bus of the test's own (no service activation, so nothing
/// starts by itself), optionally with a gnome-keyring-daemon serving the Secret
/// Service from a throwaway password, all under a temporary directory. For tests
/// that lock, stop or kill the provider without disturbing the shared one.
final class PrivateSession {
    let directory: URL
    let address: String
    private let bus = Process()
    private(set) var keyring: Process?

    init(withKeyring: Bool) throws {
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("ss-private-\(UUID().uuidString.prefix(8))")
        let fm = FileManager.default
        for sub in ["run", "data", "home"] {
            try fm.createDirectory(at: directory.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        try fm.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.appendingPathComponent("run").path)
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:dir=\(directory.path)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        let configPath = directory.appendingPathComponent("bus.conf").path
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        let pipe = Pipe()
        bus.executableURL = URL(fileURLWithPath: try which("dbus-daemon"))
        bus.arguments = ["--config-file=\(configPath)", "--nofork", "--print-address=1"]
        bus.standardOutput = pipe
        bus.standardError = FileHandle.nullDevice
        try bus.run()
        var line = Data()
        let fd = pipe.fileHandleForReading.fileDescriptor
        while !line.contains(0x0A) {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 10_000) > 0 else { throw SetupError("the private dbus-daemon printed no address") }
            var byte: UInt8 = 0
            guard read(fd, &byte, 1) == 1 else { throw SetupError("the private dbus-daemon exited") }
            line.append(byte)
        }
        address = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if withKeyring { try startKeyring() }
    }

    /// The environment for a child process on this bus.
    var environment: [String: String] {
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

    func startKeyring() throws {
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: try which("gnome-keyring-daemon"))
        daemon.arguments = ["--foreground", "--unlock", "--components=secrets"]
        daemon.environment = environment
        let input = Pipe()
        daemon.standardInput = input
        daemon.standardOutput = FileHandle.nullDevice
        daemon.standardError = FileHandle.nullDevice
        try daemon.run()
        keyring = daemon
        // A throwaway password, on stdin only.
        input.fileHandleForWriting.write(Data(UUID().uuidString.utf8))
        try input.fileHandleForWriting.close()
        let wait = try runCommand(
            try which("gdbus"), ["wait", "--session", "--timeout", "15", "org.freedesktop.secrets"],
            environment: environment, timeout: .seconds(20))
        guard wait.status == 0 else {
            throw SetupError("gnome-keyring-daemon did not appear on the private bus: \(wait.stderr)")
        }
    }

    /// Locks the login collection through the Secret Service API.
    func lockLogin() throws {
        let result = try runCommand(
            try which("gdbus"),
            [
                "call", "--session", "--dest", "org.freedesktop.secrets", "--object-path", "/org/freedesktop/secrets",
                "--method", "org.freedesktop.Secret.Service.Lock",
                "[objectpath '/org/freedesktop/secrets/collection/login']",
            ], environment: environment, timeout: .seconds(10))
        guard result.status == 0 else { throw SetupError("locking the login collection failed: \(result.stderr)") }
    }

    func signalKeyring(_ signal: Int32) {
        if let keyring, keyring.isRunning { kill(keyring.processIdentifier, signal) }
    }

    func killKeyring() {
        guard let keyring else { return }
        if keyring.isRunning { kill(keyring.processIdentifier, SIGKILL) }
        keyring.waitUntilExit()
    }

    deinit {
        if let keyring, keyring.isRunning {
            kill(keyring.processIdentifier, SIGKILL)
            keyring.waitUntilExit()
        }
        if bus.isRunning {
            kill(bus.processIdentifier, SIGKILL)  // dbus-daemon does not always stop on SIGTERM
            bus.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }
}
