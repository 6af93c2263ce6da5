import Foundation
import SecItem
import SecItemCore
import SecItemSQLite
import SecItemSealedStore
import SecItemSecretService
import SecItemTestSupport
import Testing

/// A file keychain in a fresh directory, its settings, and the `secitem` command run on it.
struct KeyedStore {
    static let executable = (try? Executables.built("secitem")) ?? "secitem"
    static let group = "org.secitem.tests.keysource"

    let root: URL
    var environment: [String: String]
    var path: String { root.appendingPathComponent("data/keychain.db").path }
    var generatedKeyFile: String { root.appendingPathComponent("config/secitem/keychain.key").path }
    var flatpakInfo: String { root.appendingPathComponent("flatpak-info").path }

    /// - Parameters:
    ///   - keySource: `SECITEM_KEY_SOURCE`, or nil for the automatic choice.
    ///   - base: the environment to start from (a private session's, or this process's).
    ///   - sandboxed: write a `.flatpak-info` and point `SECITEM_FLATPAK_INFO` at it.
    ///   - reusing: another store's directory (its file and generated key file).
    init(
        keySource: String?, base: [String: String] = ProcessInfo.processInfo.environment, sandboxed: Bool = false,
        reusing other: KeyedStore? = nil
    ) throws {
        root = other?.root ?? URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("secitem-keysource-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        var env = base.filter { !$0.key.hasPrefix("SECITEM_") || $0.key == "SECITEM_SECRET_SERVICE_TIMEOUT" }
        env["FLATPAK_ID"] = nil
        env["SECITEM_BACKEND"] = "file"
        env["SECITEM_FILE"] = root.appendingPathComponent("data/keychain.db").path
        env["XDG_CONFIG_HOME"] = root.appendingPathComponent("config").path
        env["SECITEM_ACCESS_GROUPS"] = Self.group
        env["SECITEM_KEY_SOURCE"] = keySource
        // No info file unless sandboxed: the real /.flatpak-info of a test run inside Flatpak does not count.
        env["SECITEM_FLATPAK_INFO"] = root.appendingPathComponent(sandboxed ? "flatpak-info" : "no-flatpak-info").path
        environment = env
        if sandboxed {
            try Data("[Application]\nname=org.secitem.tests.Sandboxed\nruntime=runtime/org.freedesktop.Platform/x86_64/23.08\n".utf8)
                .write(to: root.appendingPathComponent("flatpak-info"))
        }
    }

    /// Runs `secitem` with this store's environment.
    func cli(_ arguments: [String], stdin: String? = nil) throws -> ProcessOutput {
        try ChildProcess.run(Self.executable, arguments, environment: environment, stdin: stdin.map { Data($0.utf8) }, timeout: .seconds(60))
    }

    func add(_ account: String, _ secret: String) throws -> ProcessOutput {
        try cli(["add-generic-password", "-a", account, "-s", "keysource", "-w", "-"], stdin: secret)
    }

    func find(_ account: String) throws -> ProcessOutput {
        try cli(["find-generic-password", "-a", account, "-s", "keysource", "-w"])
    }

    /// The configuration the environment describes (the process configuration's way, no config file).
    var configuration: SecItemConfiguration { .environmentOnly(environment) }

    /// Opens the store in this process as the file provider does.
    func open() throws(SecItemError) -> SQLiteBackend {
        DesktopKeySources.register()
        return try SQLiteBackend(configuration: SQLiteBackend.Configuration(configuration))
    }

    /// The file's bytes and its WAL's (an empty WAL counts as none: SQLite removes it
    /// when the last connection closes), to show a failed open changed nothing.
    func fileBytes() -> [Data] {
        [path, path + "-wal"].map { FileManager.default.contents(atPath: $0) ?? Data() }
    }

    /// A `meta` value of the header, as text (`kek`, `kek_store`), read with Python's sqlite3.
    func meta(_ key: String) throws -> String {
        let script = "import sqlite3,sys; c=sqlite3.connect('file:'+sys.argv[1]+'?mode=ro', uri=True); "
            + "r=c.execute('select value from meta where key=?', (sys.argv[2],)).fetchone(); "
            + "print('' if r is None else (r[0].hex() if isinstance(r[0], bytes) else r[0]))"
        let out = try ChildProcess.run("/usr/bin/python3", ["-c", script, path, key])
        guard out.status == 0 else { throw TestSetupError("reading meta \(key): \(out.stderr)") }
        return out.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// How many key items with `store` = `storeID` the login keyring holds (`secret-tool
    /// search` prints each item's secret: its output is counted, never shown).
    static func keyItems(_ storeID: String, environment: [String: String]) throws -> Int {
        let out = try secretTool(["search", "--all", "xdg:schema", "org.secitem.KeychainKey", "store", storeID], environment: environment)
        guard out.status == 0 || out.stdout.isEmpty else { throw TestSetupError("secret-tool search failed: \(out.stderr)") }
        return out.stdout.split(separator: "\n").filter { $0.hasPrefix("label = secitem keychain key") }.count
    }

    /// How many key items name `path` as their keychain (its `path` attribute), whatever their store id.
    static func keyItems(path: String, environment: [String: String]) throws -> Int {
        let out = try secretTool(["search", "--all", "xdg:schema", "org.secitem.KeychainKey", "path", path], environment: environment)
        guard out.status == 0 || out.stdout.isEmpty else { throw TestSetupError("secret-tool search failed: \(out.stderr)") }
        return out.stdout.split(separator: "\n").filter { $0.hasPrefix("label = ") }.count
    }

    /// Runs `secret-tool` on the bus of `environment`.
    static func secretTool(_ arguments: [String], environment: [String: String]) throws -> ProcessOutput {
        try ChildProcess.run(try Executables.which("secret-tool"), arguments, environment: environment, timeout: .seconds(30))
    }

    func remove() { try? FileManager.default.removeItem(at: root) }
}

/// A private bus with its own gnome-keyring and, when asked, xdg-desktop-portal serving
/// gnome-keyring's Secret portal (headless: `XDG_CURRENT_DESKTOP=GNOME` selects
/// gnome-keyring.portal), for tests that lock the keyring or take the portal away.
final class PortalSession: @unchecked Sendable {
    // @unchecked: started in init and stopped once, by one test.
    let session: PrivateSession
    private(set) var portal: ChildProcess?

    init(withKeyring: Bool = true, withPortal: Bool) throws {
        session = try PrivateSession(withKeyring: withKeyring)
        if withPortal {
            var env = session.environment
            env["XDG_CURRENT_DESKTOP"] = "GNOME"
            let portal = try ChildProcess("/usr/libexec/xdg-desktop-portal", [], environment: env)
            self.portal = portal
            let wait = try ChildProcess.run(
                try Executables.which("gdbus"), ["wait", "--session", "--timeout", "15", "org.freedesktop.portal.Desktop"],
                environment: session.environment, timeout: .seconds(20))
            guard wait.status == 0 else { throw TestSetupError("xdg-desktop-portal did not appear on the private bus: \(wait.stderr)") }
        }
    }

    var environment: [String: String] { session.environment }

    deinit {
        portal?.signal(SIGKILL)
        _ = try? portal?.finish(timeout: .seconds(10))
    }
}

/// The statuses the command's messages end with: "(… -25308)".
func mentions(_ output: ProcessOutput, status: OSStatus) -> Bool {
    output.stderr.contains("\(status))")
}
