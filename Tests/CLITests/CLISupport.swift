import Foundation
import SecItemTestSupport
import Testing

/// The built `secitem` executable, run as a user would, with a private home.
struct CLI {
    /// The built `secitem`, next to the test bundle.
    static let executable = URL(fileURLWithPath: (try? Executables.built("secitem")) ?? "secitem")

    typealias Result = ProcessOutput

    /// A fresh temporary directory holding this CLI's data and config.
    let root: URL
    /// The environment every run gets (no inherited SECITEM_ variables).
    var environment: [String: String]

    /// - Parameters:
    ///   - backend: `SECITEM_BACKEND`, or nil for the automatic choice.
    ///   - bus: keep the inherited session bus (`DBUS_SESSION_BUS_ADDRESS`, `XDG_RUNTIME_DIR`).
    init(backend: String? = "file", bus: Bool = true) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("secitem-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SECITEM_") }
        env["XDG_DATA_HOME"] = root.appendingPathComponent("data").path
        env["XDG_CONFIG_HOME"] = root.appendingPathComponent("config").path
        env["XDG_STATE_HOME"] = root.appendingPathComponent("state").path
        // A namespace per CLI instance: parallel tests see disjoint stores in the shared collection.
        env["SECITEM_SECRET_SERVICE_NAMESPACE"] = UUID().uuidString
        if let backend { env["SECITEM_BACKEND"] = backend }
        if !bus {
            env["DBUS_SESSION_BUS_ADDRESS"] = nil
            env["XDG_RUNTIME_DIR"] = nil
        }
        environment = env
    }

    /// Skips the test when the test command did not start the Secret Service (fails under `SECITEM_REQUIRE_SERVICES=1`).
    static func requireSecretService() throws {
        try TestService.secretService.require()
    }

    enum CLIError: Error { case noSecretService }

    /// Runs `secitem arguments…` with `stdin` as standard input.
    @discardableResult
    func run(_ arguments: [String], stdin: String? = nil, environment extra: [String: String?] = [:]) throws -> Result {
        try run(arguments, stdinData: stdin.map { Data($0.utf8) }, environment: extra)
    }

    func run(_ arguments: [String], stdinData: Data?, environment extra: [String: String?] = [:]) throws -> Result {
        let process = try start(arguments, environment: extra)
        if let stdinData { try process.send(stdinData) }
        return try process.finish()
    }

    /// A started `secitem` whose stdin is still open (the shared runner).
    func start(_ arguments: [String], environment extra: [String: String?] = [:]) throws -> ChildProcess {
        var env = environment
        for (key, value) in extra { env[key] = value }
        return try ChildProcess(Self.executable.path, arguments, environment: env)
    }

    /// Writes the config file.
    func writeConfig(_ text: String) throws {
        let dir = root.appendingPathComponent("config/secitem")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: dir.appendingPathComponent("config"))
    }

    func remove() { try? FileManager.default.removeItem(at: root) }
}

/// The backends the verbs are tested on.
enum Store: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case file
    case secretService = "secret-service"

    var testDescription: String { rawValue }

    func cli() throws -> CLI {
        if self == .secretService { try CLI.requireSecretService() }
        return try CLI(backend: rawValue)
    }
}
