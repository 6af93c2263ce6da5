import Testing
import SecItemCore
import Foundation

@Suite("Application identifier and default access group")
struct ApplicationIdentifierTests {
    static func resolve(
        code: String? = nil, _ environment: [String: String] = [:], configFile: String? = nil, bundle: String? = nil,
        executable: String? = "/usr/local/bin/mytool"
    ) throws(SecItemError) -> SecItemApplicationIdentifier {
        try SecItemApplicationIdentifier.resolve(
            code: code, environment: environment, configFile: configFile, bundleIdentifier: bundle,
            executablePath: executable)
    }

    @Test("order: code, SECITEM_APPLICATION_ID, config file, bundle, FLATPAK_ID, executable")
    func order() throws {
        let env = ["SECITEM_APPLICATION_ID": "com.example.env", "FLATPAK_ID": "org.example.Flat"]
        #expect(try Self.resolve(code: "com.example.code", env, configFile: "com.example.file", bundle: "com.example.b")
            == SecItemApplicationIdentifier("com.example.code", source: .code))
        #expect(try Self.resolve(env, configFile: "com.example.file", bundle: "com.example.b")
            == SecItemApplicationIdentifier("com.example.env", source: .environment))
        #expect(try Self.resolve(["FLATPAK_ID": "org.example.Flat"], configFile: "com.example.file", bundle: "com.example.b")
            == SecItemApplicationIdentifier("com.example.file", source: .configFile))
        #expect(try Self.resolve(["FLATPAK_ID": "org.example.Flat"], bundle: "com.example.b")
            == SecItemApplicationIdentifier("com.example.b", source: .bundle))
        #expect(try Self.resolve(["FLATPAK_ID": "org.example.Flat"]) == SecItemApplicationIdentifier("org.example.Flat", source: .flatpak))
        #expect(try Self.resolve() == SecItemApplicationIdentifier("executable.mytool", source: .executable))
        // Empty values say nothing.
        #expect(try Self.resolve(code: "", ["SECITEM_APPLICATION_ID": "", "FLATPAK_ID": ""], configFile: "", bundle: "").source == .executable)
    }

    @Test("the derived name: the executable's file name only, unusual bytes replaced, never empty")
    func derived() {
        #expect(SecItemApplicationIdentifier.derived(fromExecutable: "/home/u/.build/debug/tool") == "executable.tool")
        #expect(SecItemApplicationIdentifier.derived(fromExecutable: "/usr/bin/tool") == "executable.tool", "stable across install paths")
        #expect(SecItemApplicationIdentifier.derived(fromExecutable: "/x/my tool,v2\n") == "executable.my_tool_v2_")
        #expect(SecItemApplicationIdentifier.derived(fromExecutable: "/x/naïve") == "executable.na_ve")
        #expect(SecItemApplicationIdentifier.derived(fromExecutable: nil) == "executable.unknown")
        #expect(SecItemApplicationIdentifier.derived(fromExecutable: "/") == "executable.unknown")
        let long = SecItemApplicationIdentifier.derived(fromExecutable: "/" + String(repeating: "a", count: 1000))
        #expect(SecItemApplicationIdentifier.problem(with: long) == nil, "a derived name is always usable")
    }

    @Test("an unusable explicit identifier is errSecParam naming its source; a bad bundle id or FLATPAK_ID is skipped")
    func unusable() throws {
        for bad in ["a,b", "tab\there", " padded", "x\u{7F}", String(repeating: "x", count: 256)] {
            #expect(SecItemApplicationIdentifier.problem(with: bad) != nil, "\(bad)")
            do {
                _ = try Self.resolve(["SECITEM_APPLICATION_ID": bad])
                Issue.record("accepted \(bad)")
            } catch {
                #expect(error.status == errSecParam)
                #expect("\(error)".contains("SECITEM_APPLICATION_ID"), "\(error)")
            }
            #expect(throws: SecItemError.param) { try Self.resolve(code: bad) }
            #expect(throws: SecItemError.param) { try Self.resolve(configFile: bad) }
            #expect(try Self.resolve(["FLATPAK_ID": bad], bundle: bad).source == .executable)
        }
    }

    @Test("the configuration: listed groups win; otherwise exactly one group, the application identifier")
    func configuration() throws {
        let none = ["SECITEM_CONFIG": "none", "HOME": "/h"]
        let byEnv = SecItemConfiguration.resolve(environment: none.merging(["SECITEM_APPLICATION_ID": "com.example.app"]) { $1 })
        #expect(byEnv.accessGroups.groups == ["com.example.app"])
        #expect(byEnv.accessGroups.defaultGroup == "com.example.app")
        #expect(!byEnv.accessGroups.permits(AccessGroups.legacyDefaultGroup), "no longer entitled to 'default'")
        let listed = SecItemConfiguration.resolve(
            environment: none.merging(["SECITEM_APPLICATION_ID": "com.example.app", "SECITEM_ACCESS_GROUPS": "shared,default"]) { $1 })
        #expect(listed.accessGroups.groups == ["shared", "default"], "listed groups are exactly the entitlements, as before")
        let byCode = SecItemConfiguration.resolve(
            code: .init(applicationIdentifier: "com.example.code"), environment: none.merging(["SECITEM_APPLICATION_ID": "com.example.env"]) { $1 })
        #expect(byCode.accessGroups.groups == ["com.example.code"])
        let bad = SecItemConfiguration.resolve(environment: none.merging(["SECITEM_APPLICATION_ID": "a,b"]) { $1 })
        #expect(throws: SecItemError.param) { try bad.checkApplicationIdentifier() }
        #expect(bad.accessGroups.groups.count == 1 && bad.accessGroups.groups[0] != "a,b")
        // The operator's view: every group; adds go to the listed or explicit default, else the tool's own.
        let op = try SecItemConfiguration.resolve(environment: none).operatorAccessGroups(toolIdentifier: "org.example.tool")
        #expect(op.coversEveryGroup && op.defaultGroup == "org.example.tool" && op.permits("anything"))
        #expect(try byEnv.operatorAccessGroups(toolIdentifier: "t").defaultGroup == "com.example.app")
        #expect(try listed.operatorAccessGroups(toolIdentifier: "t").defaultGroup == "shared")
        #expect(throws: SecItemError.param) { try bad.operatorAccessGroups(toolIdentifier: "t") }
    }

    @Test("the config file's application-id, below SECITEM_APPLICATION_ID")
    func configFile() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("secitem-appid-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("secitem"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try Data("application-id = com.example.fromfile\n".utf8).write(to: root.appendingPathComponent("secitem/config"))
        let env = ["XDG_CONFIG_HOME": root.path]
        let fromFile = SecItemConfiguration.resolve(environment: env)
        #expect(fromFile.problem == nil)
        #expect(try fromFile.resolvedApplicationIdentifier() == SecItemApplicationIdentifier("com.example.fromfile", source: .configFile))
        #expect(fromFile.accessGroups.groups == ["com.example.fromfile"])
        let overridden = SecItemConfiguration.resolve(environment: env.merging(["SECITEM_APPLICATION_ID": "com.example.env"]) { $1 })
        #expect(overridden.accessGroups.groups == ["com.example.env"])
    }
}
