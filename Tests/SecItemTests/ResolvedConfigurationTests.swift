import Foundation
import SecItem
import SecItemCore
import SecItemMemory
import Testing

@Suite("SecItemConfiguration: one resolution, one precedence")
struct ResolvedConfigurationTests {
    /// A private directory with a config file holding `text`.
    func configDirectory(_ text: String) throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("secitem-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("secitem"), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: root.appendingPathComponent("secitem/config"))
        return root
    }

    @Test("code wins over the environment, which wins over the config file, which wins over the defaults")
    func precedence() throws {
        let root = try configDirectory("backend = file\ncollection = from-file\naccess-groups = f1,f2\nfile = /from/file\n")
        defer { try? FileManager.default.removeItem(at: root) }
        let env = ["XDG_CONFIG_HOME": root.path, "SECITEM_COLLECTION": "from-env", "HOME": "/h"]
        // The config file's keys are the registered providers' (the registry declares them on first use).
        let collection = try #require(SecItemBackendRegistry.settings.first { $0.key == "collection" })
        let resolved = SecItemConfiguration.resolve(
            code: SecItemConfiguration.Settings(collection: "from-code"), environment: env)
        #expect(resolved.problem == nil)
        #expect(resolved.collection == "from-code")
        #expect(resolved.shown(collection)?.origin == .code)
        let noCode = SecItemConfiguration.resolve(environment: env)
        #expect(noCode.collection == "from-env")
        #expect(noCode.shown(collection)?.origin == .environment("SECITEM_COLLECTION"))
        #expect(noCode.backend == .file)
        #expect(noCode.backendOrigin == .configFile(root.path + "/secitem/config"))
        // The config file's groups are shared groups after the program's own, never its default.
        #expect(noCode.accessGroups.groups == [noCode.applicationIdentifier.value, "f1", "f2"])
        #expect(try noCode.accessGroups(toolIdentifier: "org.example.tool").groups == ["org.example.tool", "f1", "f2"])
        // Listed in the environment, they are the process's exactly (the first is the default).
        let listed = SecItemConfiguration.resolve(environment: env.merging(["SECITEM_ACCESS_GROUPS": "e1,e2"]) { $1 })
        #expect(listed.accessGroups.groups == ["e1", "e2"])
        #expect(noCode.file == "/from/file")
        let defaults = SecItemConfiguration.resolve(environment: ["HOME": "/h", "SECITEM_CONFIG": "none"])
        #expect(defaults.backend == nil && defaults.backendOrigin == .defaults)
        // Nothing configured: exactly one group, the application identifier (here derived from the executable).
        #expect(defaults.accessGroups.groups == [defaults.applicationIdentifier.value])
        #expect(defaults.applicationIdentifier.source == .executable)
        #expect(defaults.probeTimeout == .milliseconds(800))
    }

    @Test("the passphrase is a Passphrase: not in the environment dictionary, never printed, read from a private file")
    func passphraseStaysHidden() throws {
        let root = try configDirectory("")
        defer { try? FileManager.default.removeItem(at: root) }
        let env = ["XDG_CONFIG_HOME": root.path, "SECITEM_PASSPHRASE": "hunter2-passphrase"]
        let resolved = SecItemConfiguration.resolve(environment: env)
        #expect(resolved.environment["SECITEM_PASSPHRASE"] == nil)
        #expect(resolved.passphrase?.exposedString() == "hunter2-passphrase")
        for text in ["\(resolved)", String(reflecting: resolved), "\(resolved.passphrase!)",
                     String(reflecting: resolved.passphrase!)]
        {
            #expect(!text.contains("hunter2"), "\(text)")
        }
        var dumped = ""
        dump(resolved, to: &dumped)
        #expect(!dumped.contains("hunter2"))

        let file = root.appendingPathComponent("passphrase")
        try Data("from-a-file\n".utf8).write(to: file)
        chmod(file.path, 0o600)
        let fromFile = SecItemConfiguration.resolve(environment: ["XDG_CONFIG_HOME": root.path, "SECITEM_PASSPHRASE_FILE": file.path])
        #expect(fromFile.passphrase?.exposedString() == "from-a-file")
        chmod(file.path, 0o644)
        let loose = SecItemConfiguration.resolve(environment: ["XDG_CONFIG_HOME": root.path, "SECITEM_PASSPHRASE_FILE": file.path])
        #expect(loose.passphrase == nil)
        // The passphrase key source reads the file when a store that uses it opens.
        #expect(throws: SecItemError.authFailed) {
            try SecItemBackendChoice.resolve(environment: [
                "XDG_CONFIG_HOME": root.path, "SECITEM_PASSPHRASE_FILE": file.path, "SECITEM_BACKEND": "file",
            ])
        }
        // A broken passphrase file does not stop the memory backend.
        #expect(throws: Never.self) {
            try SecItemBackendChoice.resolve(environment: ["SECITEM_BACKEND": "memory", "SECITEM_PASSPHRASE_FILE": file.path])
        }
    }

    @Test("a bad config file is kept as the configuration's problem, naming the line")
    func badConfigFile() throws {
        let root = try configDirectory("colour = blue\n")
        defer { try? FileManager.default.removeItem(at: root) }
        let resolved = SecItemConfiguration.resolve(environment: ["XDG_CONFIG_HOME": root.path])
        #expect(resolved.problem?.status == errSecParam)
        #expect("\(resolved.problem!)".contains("line 1: unknown key 'colour'"))
        #expect(throws: SecItemError.param) { try SecItemBackendChoice.resolve(environment: ["XDG_CONFIG_HOME": root.path]) }
    }

    /// A backend that is not built in, registered by name.
    @Test("selecting(_:) sets the backend in the code layer and keeps every other setting, reading nothing again")
    func selecting() {
        let base = SecItemConfiguration.resolve(environment: [
            "SECITEM_CONFIG": "none", "HOME": "/h", "SECITEM_BACKEND": "file", "SECITEM_FILE": "/tmp/x.db",
            "SECITEM_PASSPHRASE": "pw", "SECITEM_ACCESS_GROUPS": "a,b",
        ])
        let chosen = base.selecting(.memory)
        #expect(chosen.backend == .memory && chosen.backendOrigin == .code)
        #expect(chosen.file == "/tmp/x.db" && chosen.passphrase != nil && chosen.accessGroups.groups == ["a", "b"])
        #expect(base.backend == .file && base.backendOrigin == .environment("SECITEM_BACKEND"), "the original is unchanged")
    }

    @Test("bootstrap refuses an unusable application identifier (errSecParam)")
    func bootstrapRefusesBadIdentifier() {
        #expect(throws: SecItemError.param) { try SecItemSystem.bootstrap(applicationIdentifier: "a,b") }
    }

    struct ThirdPartyProvider: SecItemBackendProvider {
        static let store = MemoryBackend()
        var kind: BackendKind { "third-party-test" }
        var automaticRank: Int? { nil }
        func open(_ configuration: SecItemConfiguration) throws(SecItemError) -> any SecItemBackend { Self.store }
        func probe(_ configuration: SecItemConfiguration) -> BackendAvailability {
            BackendAvailability(usable: true, summary: "always", notes: ["a test provider"])
        }
    }

    @Test("a registered provider is selectable by SECITEM_BACKEND and by `backend =` without editing a switch")
    func registeredProvider() throws {
        #expect(throws: SecItemError.param) { try SecItemBackendChoice.resolve(environment: ["SECITEM_BACKEND": "third-party-test"]) }
        SecItemBackendRegistry.register(ThirdPartyProvider())
        #expect(SecItemBackendChoice.names.contains("third-party-test"))
        let byEnv = try SecItemBackendChoice.resolve(environment: ["SECITEM_BACKEND": "third-party-test"])
        #expect((byEnv.backend as? MemoryBackend) === ThirdPartyProvider.store)
        #expect(byEnv.reason == "SECITEM_BACKEND=third-party-test")
        let root = try configDirectory("backend = third-party-test\n")
        defer { try? FileManager.default.removeItem(at: root) }
        let byFile = try SecItemBackendChoice.resolve(environment: ["XDG_CONFIG_HOME": root.path])
        #expect((byFile.backend as? MemoryBackend) === ThirdPartyProvider.store)
        #expect(byFile.reason.hasPrefix("backend = third-party-test in the config file"))
        let byCode = try SecItemBackendChoice.resolve(
            configuration: .resolve(code: .init(backend: "third-party-test"), environment: ["SECITEM_BACKEND": "memory"]))
        #expect((byCode.backend as? MemoryBackend) === ThirdPartyProvider.store)
    }
}
