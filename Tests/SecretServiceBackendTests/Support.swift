import Foundation
import SecItem
import SecItemCore
import SecItemSecretService
import SecItemTestSupport
import Testing

/// A test precondition that failed: the message says what to do.
typealias SetupError = TestSetupError

/// The shared Secret Service the tests run against: the private session that
/// `scripts/with-secret-service` starts around `swift test`. Not started: the tests
/// are skipped, unless `SECITEM_REQUIRE_SERVICES=1` (CI), where they fail.
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

    /// Returns when the shared service is usable; skips the test when the test command
    /// did not start one (fails under `SECITEM_REQUIRE_SERVICES=1`, or when it was started but is unusable).
    static func require(sourceLocation: SourceLocation = #_sourceLocation) throws {
        try TestService.secretService.require(sourceLocation: sourceLocation)
        try availability.get()
    }

    /// A backend on the shared service with a fresh namespace: an empty store of its own.
    static func backend(namespace: String = "test-\(UUID().uuidString)") throws -> SecretServiceBackend {
        try require()
        return try SecretServiceBackend(configuration: .init(namespace: namespace, timeout: .seconds(10)))
    }

    /// Which provider scripts/with-secret-service started (`SECITEM_SECRET_SERVICE_PROVIDER`).
    static let provider = ProcessInfo.processInfo.environment["SECITEM_SECRET_SERVICE_PROVIDER"] ?? "gnome-keyring"

    /// The collection the provider's `default` alias names.
    static var defaultCollection: String {
        switch provider {
        case "kwallet": return "/org/freedesktop/secrets/collection/kdewallet"
        case "keepassxc": return "/org/freedesktop/secrets/collection/secitem"
        default: return "/org/freedesktop/secrets/collection/login"
        }
    }

    static func client(_ backend: SecretServiceBackend) -> SecItemClient {
        SecItemClient(backend: backend, accessGroups: AccessGroups(["test", "other"]))
    }
}

// MARK: Processes

/// Runs a command to completion (the shared runner), killing it after `timeout`.
func runCommand(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: Data? = nil,
    timeout: Duration = .seconds(60)
) throws -> ProcessOutput {
    try ChildProcess.run(executable, arguments, environment: environment, stdin: stdin, timeout: timeout)
}

func which(_ name: String) throws -> String { try Executables.which(name) }

/// A `SecretServiceTestHelper repl` child: one command per line, one result per line.
final class HelperProcess {
    struct Reply {
        var kind: String  // ok, dup, err
        var status: Int32
        var milliseconds: Int
        var detail: String
    }

    private let child: ChildProcess
    private var replies = 0

    init(environment: [String: String]) throws {
        child = try ChildProcess(try Executables.built("SecretServiceTestHelper"), ["repl"], environment: environment)
    }

    deinit {
        child.closeInput()  // the helper exits at end of input
        _ = try? child.finish(timeout: .seconds(5))
    }

    func send(_ command: String) {
        try? child.send(Data((command + "\n").utf8))
    }

    /// Reads the next reply, failing after `timeout` instead of hanging.
    func reply(timeout: Duration = .seconds(30)) throws -> Reply {
        let line = try child.line(replies, timeout: timeout)
        replies += 1
        return Self.parse(line)
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

