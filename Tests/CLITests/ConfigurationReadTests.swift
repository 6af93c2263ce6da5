import Foundation
import SecItemTestSupport
import Testing

/// Issue 11: a process reads the config file once, whatever it does — also a command
/// that opens two backends, and a program using the Apple API. Counted with strace
/// (every `open`/`openat` of the file's path, in every thread).
@Suite("The config file is read once per process")
struct ConfigurationReadTests {
    /// How many times `program arguments…` opened `path`, and what it left.
    static func opens(
        of path: String, running program: String, _ arguments: [String], environment: [String: String], stdin: Data? = nil
    ) throws -> (count: Int, result: ProcessOutput) {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("secitem-strace-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        let result = try ChildProcess.run(
            try Executables.which("strace"), ["-f", "-qq", "-e", "trace=open,openat,openat2", "-o", log, program] + arguments,
            environment: environment, stdin: stdin)
        let trace = try String(contentsOfFile: log, encoding: .utf8)
        return (trace.split(separator: "\n").filter { $0.contains("\"\(path)\"") }.count, result)
    }

    @Test("secitem (one backend, two backends, diagnose), git-credential-secitem and an app: one read each")
    func onceEach() throws {
        let cli = try CLI(backend: nil, bus: false)
        defer { cli.remove() }
        try cli.writeConfig("backend = file\n")
        let config = cli.root.appendingPathComponent("config/secitem/config").path
        let secitem = CLI.executable.path
        let runs: [(String, [String], Data?)] = [
            (secitem, ["add-generic-password", "-a", "a", "-s", "s", "-w", "pw"], nil),
            (secitem, ["find-generic-password", "-a", "a", "-s", "s", "-w"], nil),
            (secitem, ["migrate", "--from", "file", "--to", "memory"], nil),
            (secitem, ["diagnose"], nil),
            (try Executables.built("git-credential-secitem"), ["get"], Data("protocol=https\nhost=example.com\n\n".utf8)),
            (try Executables.built("KeychainHelperExample"), [], nil),
            // The documented start-up: bootstrap(applicationIdentifier:), then the first call.
            (try Executables.built("SecItemAppHelper"), ["bootstrap", "com.example.once"], nil),
        ]
        for (program, arguments, stdin) in runs {
            let (count, result) = try Self.opens(of: config, running: program, arguments, environment: cli.environment, stdin: stdin)
            let what = ([URL(fileURLWithPath: program).lastPathComponent] + arguments).joined(separator: " ")
            try #require(result.status == 0, "\(what): \(result.stderr)")
            #expect(count == 1, "\(what) read the config file \(count) times")
        }
    }
}

/// The config file's keys are the declared settings': the built-in backends' and key
/// sources' are declared whenever a configuration is resolved, also in a program whose
/// first act is to read it (before any keychain call or registry use).
@Suite("Built-in settings are declared before the configuration is read")
struct SettingDeclarationOrderTests {
    @Test("a program that reads configuration.problem first accepts every built-in backend's key, and still names an unknown one")
    func declaredFirst() throws {
        let cli = try CLI(backend: nil, bus: false)
        defer { cli.remove() }
        let helper = try Executables.built("SecItemAppHelper")
        try cli.writeConfig(
            "collection = mine\nfile = /tmp/secitem-never-opened.db\nkey-source = key-file\npostgresql-schema = s\n"
                + "key-cache-timeout = 0\nrollback-check = report\n")
        let known = try ChildProcess.run(helper, ["problem"], environment: cli.environment)
        #expect(known.status == 0, "\(known.stderr)")
        #expect(known.stdout == "none\n", "a built-in key was unknown: \(known.stdout)")
        try cli.writeConfig("collection = mine\nno-such-key = 1\n")
        let unknown = try ChildProcess.run(helper, ["problem"], environment: cli.environment)
        #expect(unknown.stdout.contains("line 2: unknown key 'no-such-key'"), "\(unknown.stdout)")
        #expect(!unknown.stdout.contains("'collection'"), "\(unknown.stdout)")
    }
}
