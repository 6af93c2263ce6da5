import Foundation
import SecItemCore
import Testing

/// Settings declared by the code that reads them: one reader (code, environment, config
/// file, default) that says where each value came from, and a config file checked against
/// the declarations.
@Suite("Declared settings: one reader, provenance, validation")
struct SettingDeclarationTests {
    static let timeout = SecItemSetting<Duration>.seconds(
        "settingtest-timeout", scope: "settingtest", help: "A test bound.", range: 0...60, default: .seconds(3))
    static let name = SecItemSetting<String>.text("settingtest-name", scope: "settingtest", help: "A test name.")
    static let token = SecItemSetting<String>.text(
        "settingtest-token", scope: "settingtest", help: "A test secret.", isSecret: true)
    static let passphrase = SecItemSetting<Passphrase>.secret(
        "settingtest-passphrase", scope: "settingtest", help: "A test passphrase.")

    init() {
        SecItemSettingCatalog.declare([
            Self.timeout.declaration, Self.name.declaration, Self.token.declaration, Self.passphrase.declaration,
        ])
    }

    func configFile(_ text: String) throws -> (root: URL, path: String) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("secitem-settings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("secitem"), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: root.appendingPathComponent("secitem/config"))
        return (root, root.path + "/secitem/config")
    }

    @Test("the variable is derived from the key")
    func derivedVariable() {
        #expect(Self.timeout.variable == "SECITEM_SETTINGTEST_TIMEOUT")
        #expect(SecItemSettingDeclaration.variable(forKey: "postgresql-url") == "SECITEM_POSTGRESQL_URL")
    }

    @Test("code, then the environment, then the config file, then the default; each with its origin")
    func precedence() throws {
        let (root, path) = try configFile("settingtest-timeout = 2\nsettingtest-name = from-file\n")
        defer { try? FileManager.default.removeItem(at: root) }
        let env = ["XDG_CONFIG_HOME": root.path, "SECITEM_SETTINGTEST_NAME": "from-env"]
        var code = SecItemConfiguration.Settings()
        code[Self.name] = "from-code"
        let withCode = SecItemConfiguration.resolve(code: code, environment: env)
        #expect(withCode.problem == nil)
        #expect(try withCode.lookup(Self.name)?.value == "from-code")
        #expect(try withCode.lookup(Self.name)?.origin == .code)
        let resolved = SecItemConfiguration.resolve(environment: env)
        #expect(try resolved.lookup(Self.name)?.origin == .environment("SECITEM_SETTINGTEST_NAME"))
        #expect(try resolved.value(Self.timeout) == .seconds(2))
        #expect(try resolved.lookup(Self.timeout)?.origin == .configFile(path))
        let bare = SecItemConfiguration.resolve(environment: ["SECITEM_CONFIG": "none"])
        #expect(try bare.lookup(Self.timeout)?.value == .seconds(3))
        #expect(try bare.lookup(Self.timeout)?.origin == .defaults)
        #expect(try bare.lookup(Self.name) == nil, "no layer, no default")
        #expect(try SecItemConfiguration.resolve(environment: ["SECITEM_CONFIG": "none", "SECITEM_SETTINGTEST_NAME": ""])
            .value(Self.name) == nil, "an empty variable says nothing")
    }

    @Test("a value that is not one is errSecParam naming the variable, or the config file and line")
    func invalidValues() throws {
        let env = SecItemConfiguration.resolve(environment: ["SECITEM_CONFIG": "none", "SECITEM_SETTINGTEST_TIMEOUT": "soon"])
        let fromEnv = try #require(throws: SecItemError.self) { try env.value(Self.timeout) }
        #expect(fromEnv.status == errSecParam)
        #expect("\(fromEnv)".contains("SECITEM_SETTINGTEST_TIMEOUT is \"soon\" not valid; expected seconds"), "\(fromEnv)")

        let (root, path) = try configFile("# a comment\n\nsettingtest-timeout = 99\n")
        defer { try? FileManager.default.removeItem(at: root) }
        let file = SecItemConfiguration.resolve(environment: ["XDG_CONFIG_HOME": root.path])
        let fromFile = try #require(throws: SecItemError.self) { try file.value(Self.timeout) }
        #expect("\(fromFile)".contains("\(path) line 3: settingtest-timeout is \"99\" not valid"), "\(fromFile)")
    }

    @Test("a secret's text is never in an error, and an empty passphrase counts as given")
    func secrets() throws {
        let resolved = SecItemConfiguration.resolve(environment: [
            "SECITEM_CONFIG": "none", "SECITEM_SETTINGTEST_TOKEN": "tok-never-shown", "SECITEM_SETTINGTEST_PASSPHRASE": "",
        ])
        #expect(resolved.environment["SECITEM_SETTINGTEST_TOKEN"] == nil, "a declared secret leaves the public environment")
        #expect(try resolved.value(Self.token) == "tok-never-shown")
        #expect(resolved.shown(Self.token.declaration)?.value == "(set)")
        #expect(try resolved.value(Self.passphrase)?.isEmpty == true)
        #expect(!"\(resolved)".contains("tok-never-shown"))
    }

    @Test("the config file accepts the declared keys alone, naming the file and line of another")
    func unknownKeys() throws {
        let (root, path) = try configFile("settingtest-name = x\n\ncolour = blue\n")
        defer { try? FileManager.default.removeItem(at: root) }
        let resolved = SecItemConfiguration.resolve(environment: ["XDG_CONFIG_HOME": root.path])
        let problem = try #require(resolved.problem)
        #expect(problem.status == errSecParam)
        #expect("\(problem)".contains("\(path) line 3: unknown key 'colour'"), "\(problem)")
        #expect("\(problem)".contains("settingtest-name"), "the known keys are listed")
        // A secret is never a config-file key, and the error says where it goes instead.
        let (secretRoot, _) = try configFile("settingtest-passphrase = hunter2\n")
        defer { try? FileManager.default.removeItem(at: secretRoot) }
        let secret = SecItemConfiguration.resolve(environment: ["XDG_CONFIG_HOME": secretRoot.path])
        #expect("\(secret.problem!)".contains("SECITEM_SETTINGTEST_PASSPHRASE is given in the environment only"))
        #expect(!"\(secret.problem!)".contains("hunter2"))
        #expect(try secret.value(Self.passphrase) == nil, "not read from the config file")
    }

    @Test("the docs table has a row per declaration")
    func markdown() {
        let table = SecItemSettingCatalog.markdownTable([Self.timeout.declaration, Self.passphrase.declaration])
        #expect(table.contains("| `settingtest-timeout` | `SECITEM_SETTINGTEST_TIMEOUT` | A test bound. |"))
        #expect(table.contains("| (environment only) | `SECITEM_SETTINGTEST_PASSPHRASE` |"))
        #expect(table.contains("`3 s`"))
    }
}
