import Foundation
import SecItem
import SecItemCore
import SecItemMemory
import SecItemTestSupport
import SecItemTools
import Testing

/// Copies of SecItemAppHelper (Tests/AppHelperProcess): programs with default
/// settings, each copy its own application because its name differs.
struct AppProgram {
    static let built = URL(fileURLWithPath: (try? Executables.built("SecItemAppHelper")) ?? "SecItemAppHelper")

    let path: URL

    /// Copies the helper to `directory/name` (a copy, not a link: /proc/self/exe names the copy).
    /// The copy is open for writing only with O_CLOEXEC, so a child another test
    /// thread starts meanwhile keeps it open at most until that child execs
    /// (`ChildProcess` waits that out: see ``ExecutableCopyTests``).
    init(named name: String, in directory: URL) throws {
        path = directory.appendingPathComponent(name)
        if !FileManager.default.fileExists(atPath: path.path) {
            let bytes = try Data(contentsOf: Self.built)
            let fd = open(path.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
            guard fd >= 0 else { throw TestSetupError("cannot create \(path.path): errno \(errno)") }
            let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
            try handle.write(contentsOf: bytes)
            try handle.close()
        }
    }

    /// Runs the program with `cli`'s environment (its private home, store and namespace) plus `extra`.
    func run(_ arguments: [String], _ cli: CLI, environment extra: [String: String?] = [:]) throws -> CLI.Result {
        var env = cli.environment
        for (key, value) in extra { env[key] = value }
        return try ChildProcess.run(path.path, arguments, environment: env)
    }

    /// Runs and requires exit status 0.
    @discardableResult
    func ok(_ arguments: [String], _ cli: CLI, environment extra: [String: String?] = [:]) throws -> String {
        let result = try run(arguments, cli, environment: extra)
        #expect(result.status == 0, "\(path.lastPathComponent) \(arguments): \(result.status) \(result.stderr)")
        if result.status != 0 { throw AppError.failed(path.lastPathComponent, arguments, result.stderr) }
        return result.stdout
    }

    enum AppError: Error { case failed(String, [String], String) }
}

@Suite("Per-application access groups across processes and the CLI")
struct AccessGroupTests {
    /// The two stores a program with default settings ends up on: the encrypted file
    /// (no session bus) and the real Secret Service (the automatic choice with gnome-keyring running).
    enum DefaultStore: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case file
        case secretService = "secret-service"
        var testDescription: String { rawValue }

        func cli() throws -> CLI {
            switch self {
            case .file: return try CLI(backend: nil, bus: false)
            case .secretService:
                try CLI.requireSecretService()
                return try CLI(backend: nil, bus: true)
            }
        }
    }

    @Test("three programs with default settings: A's wipe leaves B's and C's items intact, byte for byte", arguments: DefaultStore.allCases)
    func threePrograms(store: DefaultStore) throws {
        let cli = try store.cli()
        defer { cli.remove() }
        let bin = cli.root.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let (a, b, c) = (
            try AppProgram(named: "appA", in: bin), try AppProgram(named: "appB", in: bin), try AppProgram(named: "appC", in: bin)
        )
        #expect(try a.ok(["whoami"], cli).hasPrefix("executable.appA\nexecutable\nexecutable.appA\n"))
        for (program, tag) in [(a, "A"), (b, "B"), (c, "C")] { try program.ok(["store", tag], cli) }
        let aBefore = try a.ok(["dump"], cli), bBefore = try b.ok(["dump"], cli), cBefore = try c.ok(["dump"], cli)
        for (dump, tag) in [(aBefore, "A"), (bBefore, "B"), (cBefore, "C")] {
            let lines = dump.split(separator: "\n")
            #expect(lines.count == 4, "each program sees exactly its own 4 items: \(dump)")
            let own = Data("\(tag)/".utf8).map { String(format: "%02x", $0) }.joined()
            #expect(lines.allSatisfy { $0.contains(own) }, "\(tag) sees only its own data")
        }
        // The operator sees all twelve, in three groups.
        let all = try cli.run(["dump-keychain"])
        #expect(all.status == 0, "\(all.stderr)")
        for name in ["appA", "appB", "appC"] {
            #expect(all.stdout.components(separatedBy: "\"agrp\"<blob>=\"executable.\(name)\"").count - 1 == 4, "\(name)'s 4 items")
        }
        let wipe = try a.ok(["wipe"], cli)
        #expect(wipe.split(separator: "\n").allSatisfy { $0.hasSuffix(" 0") }, "A deleted something of every class: \(wipe)")
        #expect(try a.ok(["dump"], cli).isEmpty, "A's items are gone")
        #expect(try b.ok(["dump"], cli) == bBefore, "B's items are unchanged, byte for byte")
        #expect(try c.ok(["dump"], cli) == cBefore, "C's items are unchanged, byte for byte")
        // A second wipe finds nothing: every class errSecItemNotFound.
        #expect(try a.ok(["wipe"], cli).split(separator: "\n").allSatisfy { $0.hasSuffix(" \(errSecItemNotFound)") })
    }

    @Test("the application identifier: SECITEM_APPLICATION_ID, the config file, an Info.plist, FLATPAK_ID, the executable")
    func identifierSources() throws {
        let cli = try CLI(backend: "memory", bus: false)
        defer { cli.remove() }
        let bin = cli.root.appendingPathComponent("bin")
        let bundled = cli.root.appendingPathComponent("bundled")
        for dir in [bin, bundled] { try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true) }
        let plain = try AppProgram(named: "plain-tool", in: bin)
        let app = try AppProgram(named: "bundled-tool", in: bundled)
        try Data("""
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>CFBundleIdentifier</key><string>com.example.bundled</string></dict></plist>
            """.utf8).write(to: bundled.appendingPathComponent("Info.plist"))

        func whoami(_ program: AppProgram, _ env: [String: String?] = [:]) throws -> [String] {
            try program.ok(["whoami"], cli, environment: env).split(separator: "\n").map(String.init)
        }
        #expect(try whoami(plain) == ["executable.plain-tool", "executable", "executable.plain-tool"])
        #expect(try whoami(plain, ["FLATPAK_ID": "org.example.Flat"]) == ["org.example.Flat", "flatpak", "org.example.Flat"])
        #expect(try whoami(app, ["FLATPAK_ID": "org.example.Flat"]) == ["com.example.bundled", "bundle", "com.example.bundled"])
        try cli.writeConfig("application-id = com.example.configured\n")
        #expect(try whoami(app) == ["com.example.configured", "config file", "com.example.configured"])
        #expect(try whoami(app, ["SECITEM_APPLICATION_ID": "com.example.env"]) == ["com.example.env", "environment", "com.example.env"])
        #expect(try whoami(app, ["SECITEM_ACCESS_GROUPS": "team.x,shared"]) == ["com.example.configured", "config file", "team.x,shared"])
        let bad = try app.run(["whoami"], cli, environment: ["SECITEM_APPLICATION_ID": "a,b"])
        #expect(bad.status == 2 && bad.stderr.contains("SECITEM_APPLICATION_ID"), "\(bad.status) \(bad.stderr)")
    }

    @Test("debug builds warn once, on stderr, when the identifier is derived from the executable; never otherwise")
    func derivedWarning() throws {
        let cli = try CLI(backend: nil, bus: false)
        defer { cli.remove() }
        let bin = cli.root.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let program = try AppProgram(named: "warned", in: bin)
        // store: four adds, one warning.
        let derived = try program.run(["store", "w"], cli)
        #expect(derived.status == 0, "\(derived.stderr)")
        #expect(derived.stderr.components(separatedBy: "no application identifier is set").count - 1 == 1, "\(derived.stderr)")
        #expect(derived.stderr.contains("'executable.warned'") && derived.stderr.contains("SECITEM_APPLICATION_ID"))
        let named = try program.run(["dump"], cli, environment: ["SECITEM_APPLICATION_ID": "com.example.warned"])
        // (Its own group is empty: debug builds may note that the items are in 'executable.warned'.)
        #expect(named.status == 0 && !named.stderr.contains("no application identifier is set"), "\(named.stderr)")
        // The command has its own identifier: never warns.
        let command = try cli.run(["dump-keychain"])
        #expect(command.status == 0 && !command.stderr.contains("application identifier"), "\(command.stderr)")
    }

    @Test("-G on add, find, delete and dump; adds without -G go to the command's default group", arguments: Store.allCases)
    func accessGroupFlag(store: Store) throws {
        let cli = try store.cli()
        defer { cli.remove() }
        #expect(try cli.run(["add-generic-password", "-a", "alice", "-s", "api", "-G", "com.example.a", "-w", "-"], stdin: "A").status == 0)
        #expect(try cli.run(["add-generic-password", "-a", "alice", "-s", "api", "--access-group", "com.example.b", "-w", "-"], stdin: "B").status == 0)
        #expect(try cli.run(["add-generic-password", "-a", "alice", "-s", "api", "-G", "com.example.b", "-w", "-"], stdin: "B2").status == 45, "same key, same group")
        #expect(try cli.run(["add-generic-password", "-a", "alice", "-s", "api", "-w", "-"], stdin: "C").status == 0)
        #expect(try cli.run(["add-internet-password", "-a", "alice", "-s", "example.com", "-G", "com.example.a", "-w", "-"], stdin: "I").status == 0)
        #expect(try cli.run(["find-generic-password", "-a", "alice", "-s", "api", "-G", "com.example.b", "-w"]).stdout == "B\n")
        #expect(try cli.run(["find-generic-password", "-a", "alice", "-s", "api", "-G", "com.example.a", "-w"]).stdout == "A\n")
        #expect(try cli.run(["find-generic-password", "-a", "alice", "-s", "api", "-G", "org.secitem.cli", "-w"]).stdout == "C\n")
        #expect(try cli.run(["find-generic-password", "-a", "alice", "-s", "api", "-G", "com.example.none"]).status == 44)
        #expect(try cli.run(["find-internet-password", "-a", "alice", "-s", "example.com", "-G", "com.example.b"]).status == 44)
        #expect(try cli.run(["find-internet-password", "-a", "alice", "-s", "example.com", "-G", "com.example.a", "-w"]).stdout == "I\n")

        let all = try cli.run(["dump-keychain"])
        #expect(all.status == 0)
        #expect(all.stdout.components(separatedBy: "\"agrp\"<blob>=").count - 1 == 4, "every group: \(all.stdout)")
        let onlyA = try cli.run(["dump-keychain", "-G", "com.example.a"])
        let groupsA = onlyA.stdout.split(separator: "\n").filter { $0.contains("\"agrp\"") }
        #expect(groupsA.count == 2 && groupsA.allSatisfy { $0.contains("\"com.example.a\"") }, "\(onlyA.stdout)")
        #expect(try cli.run(["dump-keychain", "-G", "com.example.none"]).stdout.isEmpty)

        let deleted = try cli.run(["delete-generic-password", "-a", "alice", "-s", "api", "-G", "com.example.b"])
        #expect(deleted.status == 0 && deleted.stdout.contains("\"agrp\"<blob>=\"com.example.b\""), "\(deleted.stdout)")
        #expect(try cli.run(["find-generic-password", "-a", "alice", "-s", "api", "-G", "com.example.b"]).status == 44)
        #expect(try cli.run(["find-generic-password", "-a", "alice", "-s", "api", "-G", "com.example.a", "-w"]).stdout == "A\n", "A untouched")
        #expect(try cli.run(["delete-generic-password", "-a", "alice", "-s", "api", "-G", "com.example.b"]).status == 44)

        // macOS's -G (the generic attribute) is --generic here.
        #expect(try cli.run(["add-generic-password", "-a", "g", "-s", "api", "--generic", "gen-value", "-G", "com.example.a"]).status == 0)
        let generic = try cli.run(["find-generic-password", "-a", "g", "--generic", "gen-value"])
        #expect(generic.status == 0 && generic.stdout.contains("\"gena\"<blob>=\"gen-value\""), "\(generic.stdout)")
    }

    @Test("-U updates only the item in the group the add targets", arguments: Store.allCases)
    func updateScope(store: Store) throws {
        let cli = try store.cli()
        defer { cli.remove() }
        let teams: [String: String?] = ["SECITEM_ACCESS_GROUPS": "teamA,teamB"]
        #expect(try cli.run(["add-generic-password", "-a", "alice", "-s", "api", "-G", "teamB", "-w", "-"], stdin: "b-old", environment: teams).status == 0)
        #expect(try cli.run(["add-generic-password", "-a", "alice", "-s", "api", "-w", "-"], stdin: "a-old", environment: teams).status == 0)
        #expect(try cli.run(["find-generic-password", "-a", "alice", "-s", "api", "-G", "teamA", "-w"]).stdout == "a-old\n", "the default group is the first listed")
        let update = try cli.run(["add-generic-password", "-a", "alice", "-s", "api", "-l", "new label", "-U", "-w", "-"], stdin: "a-new", environment: teams)
        #expect(update.status == 0, "\(update.stderr)")
        #expect(try cli.run(["find-generic-password", "-a", "alice", "-s", "api", "-G", "teamA", "-w"]).stdout == "a-new\n")
        let teamB = try cli.run(["find-generic-password", "-a", "alice", "-s", "api", "-G", "teamB", "-g"])
        #expect(teamB.stderr == "password: \"b-old\"\n", "teamB's password is untouched: \(teamB.stderr)")
        #expect(!teamB.stdout.contains("new label"), "and so is its label")
        #expect(try cli.run(["add-generic-password", "-a", "alice", "-s", "api", "-G", "teamB", "-U", "-w", "-"], stdin: "b-new").status == 0)
        #expect(try cli.run(["find-generic-password", "-a", "alice", "-s", "api", "-G", "teamB", "-w"]).stdout == "b-new\n")
        #expect(try cli.run(["find-generic-password", "-a", "alice", "-s", "api", "-G", "teamA", "-w"]).stdout == "a-new\n")
        // -U with no item in the target group adds there, leaving the others alone.
        #expect(try cli.run(["add-generic-password", "-a", "alice", "-s", "api", "-G", "teamC", "-U", "-w", "-"], stdin: "c").status == 0)
        #expect(try cli.run(["dump-keychain"]).stdout.components(separatedBy: "\"acct\"<blob>=\"alice\"").count - 1 == 3)
    }

    @Test("import: each item keeps its group; --access-group remaps; a library caller may write only its own groups", arguments: Store.allCases)
    func importGroups(store: Store) throws {
        let source = try CLI(backend: "file", bus: false)
        defer { source.remove() }
        #expect(try source.run(["add-generic-password", "-a", "x", "-s", "api", "-G", "com.example.x", "-w", "-"], stdin: "X").status == 0)
        #expect(try source.run(["add-generic-password", "-a", "y", "-s", "api", "-G", "com.example.y", "-w", "-"], stdin: "Y").status == 0)
        let archive = source.root.appendingPathComponent("groups.secitem").path
        let pass: [String: String?] = ["SECITEM_EXPORT_PASSPHRASE": "export passphrase"]
        #expect(try source.run(["export", "--output", archive], environment: pass).status == 0)

        // A library caller entitled to com.example.x only: refused, naming com.example.y; nothing written.
        let items = try ExportArchive.read(from: archive) { () throws(SecItemError) in Passphrase("export passphrase") }
        #expect(items.count == 2)
        let memory = MemoryBackend()
        let app = SecItemClient(backend: memory, applicationIdentifier: "com.example.x")
        do {
            try KeychainTransfer.importItems(items, into: app)
            Issue.record("the import was allowed")
        } catch {
            #expect(error.status == errSecMissingEntitlement)
            #expect("\(error)".contains("'com.example.y'"), "\(error)")
        }
        let everything = SecItemClient(backend: memory, accessGroups: .everyGroup(defaultGroup: "op"))
        #expect(everything.copyMatching([kSecClass: kSecClassGenericPassword] as CFDictionary, nil) == errSecItemNotFound, "nothing written")
        do {
            try KeychainTransfer.importItems(items, into: app, accessGroup: "com.example.y")
            Issue.record("a remap into a group not entitled was allowed")
        } catch {
            #expect(error.status == errSecMissingEntitlement)
        }
        // Remapped into its own group, it may.
        let written = try KeychainTransfer.importItems(items, into: app, accessGroup: "com.example.x").written
        #expect(written.allSatisfy { $0.accessGroup == "com.example.x" } && Set(written.map(\.id)).isDisjoint(with: items.map(\.id)))
        var count: AnyObject?
        #expect(app.copyMatching([kSecClass: kSecClassGenericPassword, kSecMatchLimit: kSecMatchLimitAll, kSecReturnAttributes: true] as CFDictionary, &count) == errSecSuccess)
        #expect((count as? [Any])?.count == 2)

        // The command may write every group; --access-group remaps.
        let target = try store.cli()
        defer { target.remove() }
        let imported = try target.run(["import", "--input", archive], environment: pass)
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try target.run(["find-generic-password", "-a", "y", "-G", "com.example.y", "-w"]).stdout == "Y\n")
        #expect(try target.run(["find-generic-password", "-a", "x", "-G", "com.example.x", "-w"]).stdout == "X\n")
        let remapped = try target.run(["import", "--input", archive, "--access-group", "com.example.z"], environment: pass)
        #expect(remapped.status == 0, "\(remapped.stderr)")
        let inZ = try target.run(["dump-keychain", "-G", "com.example.z"])
        #expect(inZ.stdout.components(separatedBy: "\"agrp\"<blob>=\"com.example.z\"").count - 1 == 2, "\(inZ.stdout)")
        #expect(try target.run(["import", "--input", archive], environment: pass).status == 45, "the originals exist: nothing imported")
    }

    /// The environment that opens fixture `name` (keychain.db with its key file,
    /// passphrase.db with its passphrase), copied under `cli`'s root.
    static func fixtureEnvironment(_ name: String, in cli: CLI) throws -> [String: String?] {
        let db = try fixture(name, to: cli.root.appendingPathComponent("store"))
        var env: [String: String?] = ["SECITEM_FILE": db.path]
        if name == "keychain.db" {
            env["SECITEM_KEY_FILE"] = db.deletingLastPathComponent().appendingPathComponent("keychain.key").path
        } else {
            env["SECITEM_PASSPHRASE"] = "fixture passphrase"
        }
        return env
    }

    /// The committed format-1 fixture (Tests/Fixtures/format1-default-group), copied to `directory`.
    static func fixture(_ name: String, to directory: URL) throws -> URL {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/format1-default-group")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for file in [name, "keychain.key"] {
            let to = directory.appendingPathComponent(file)
            try FileManager.default.copyItem(at: source.appendingPathComponent(file), to: to)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: to.path)
        }
        return directory.appendingPathComponent(name)
    }

    @Test("upgrade: a store of 'default'-group items from the earlier release is readable by a program listing 'default', and movable with the CLI",
          arguments: ["keychain.db", "passphrase.db"])
    func upgradeFromDefaultGroup(fixture: String) throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        let env = try Self.fixtureEnvironment(fixture, in: cli)
        var appEnv = cli.environment
        for (key, value) in env { appEnv[key] = value }
        let bin = cli.root.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let program = try AppProgram(named: "upgraded", in: bin)
        let alice = Data("s3cret-alice".utf8).map { String(format: "%02x", $0) }.joined() + "\n"
        let binary = (0...255).map { String(format: "%02x", $0) }.joined() + "\n"

        // With nothing configured, the program no longer sees the shared 'default' group.
        #expect(try program.run(["read", "com.example.api", "alice"], cli, environment: env).status == 44)
        // Listing 'default' keeps the old behaviour.
        let listing = env.merging(["SECITEM_ACCESS_GROUPS": "com.example.app,default"]) { $1 }
        #expect(try program.ok(["read", "com.example.api", "alice"], cli, environment: listing) == alice)
        #expect(try program.ok(["read", "com.example.blob", "binary"], cli, environment: listing) == binary)
        // The operator sees every group, the shared item included.
        let dump = try cli.run(["dump-keychain"], environment: env)
        #expect(dump.stdout.components(separatedBy: "\"agrp\"<blob>=\"default\"").count - 1 == 3, "\(dump.stdout) \(dump.stderr)")
        #expect(dump.stdout.contains("\"agrp\"<blob>=\"com.example.shared\""))

        let moved = try cli.run(["set-access-group", "-G", "default", "--to", "com.example.app"], environment: env)
        #expect(moved.status == 0 && moved.stderr.contains("moved 3 items"), "\(moved.stderr)")
        let own = env.merging(["SECITEM_APPLICATION_ID": "com.example.app"]) { $1 }
        #expect(try program.ok(["read", "com.example.api", "alice"], cli, environment: own) == alice)
        #expect(try program.ok(["read", "com.example.blob", "binary"], cli, environment: own) == binary)
        let inet = try cli.run(["find-internet-password", "-a", "bob", "-s", "example.com", "-G", "com.example.app", "-w"], environment: env)
        #expect(inet.stdout == "hunter2\n", "\(inet.stderr)")
        #expect(try cli.run(["find-generic-password", "-a", "carol", "-G", "com.example.shared", "-w"], environment: env).stdout == "shared-secret\n",
                "the item in another group stays where it was")
        #expect(try cli.run(["dump-keychain", "-G", "default"], environment: env).stdout.isEmpty, "nothing left in 'default'")
        #expect(try cli.run(["set-access-group", "-G", "default", "--to", "com.example.app"], environment: env).status == 44)
        #expect(try cli.run(["verify"], environment: env).status == 0, "the store is sound")
    }

    @Test("upgrade: the wipe idiom as the first write to an earlier release's store deletes the program's items and upgrades the file",
          arguments: ["keychain.db", "passphrase.db"])
    func wipeAsFirstWrite(fixture: String) throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        let env = try Self.fixtureEnvironment(fixture, in: cli)
        let bin = cli.root.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let program = try AppProgram(named: "legacy", in: bin)
        // A program that keeps the old behaviour (it lists 'default') signs out: a broad delete per class.
        let legacy = env.merging(["SECITEM_ACCESS_GROUPS": "default"]) { $1 }
        let wipe = try program.ok(["wipe"], cli, environment: legacy)
        #expect(wipe == "genp 0\ninet 0\ncert \(errSecItemNotFound)\nkeys \(errSecItemNotFound)\n", "\(wipe)")
        #expect(try program.ok(["dump"], cli, environment: legacy).isEmpty)
        #expect(try cli.run(["find-generic-password", "-a", "carol", "-w"], environment: env).stdout == "shared-secret\n",
                "the item in another group survives")
        #expect(try cli.run(["verify"], environment: env).status == 0, "the store is sound (and upgraded)")
    }

    @Test("set-access-group is all or nothing: a collision in the target group moves nothing", arguments: Store.allCases)
    func moveCollision(store: Store) throws {
        let cli = try store.cli()
        defer { cli.remove() }
        // Generic passwords move first; the internet password then collides, so they move back.
        for account in ["a", "b"] {
            #expect(try cli.run(["add-generic-password", "-a", account, "-s", "api", "-G", "old", "-w", "-"], stdin: "\(account)-old").status == 0)
        }
        for group in ["old", "new"] {
            #expect(try cli.run(["add-internet-password", "-a", "i", "-s", "example.com", "-G", group]).status == 0)
        }
        let before = try cli.run(["dump-keychain"]).stdout
        let refused = try cli.run(["set-access-group", "-G", "old", "--to", "new"])
        #expect(refused.status == 45 && refused.stderr.contains("nothing moved"), "\(refused.stderr)")
        #expect(try cli.run(["dump-keychain"]).stdout.replacingOccurrences(of: #""mdat"<timedate>="\d+Z""#, with: "", options: .regularExpression)
            == before.replacingOccurrences(of: #""mdat"<timedate>="\d+Z""#, with: "", options: .regularExpression), "everything is back where it was")
        #expect(try cli.run(["find-generic-password", "-a", "a", "-G", "old", "-w"]).stdout == "a-old\n")
        #expect(try cli.run(["set-access-group", "-G", "old", "--to", "new", "-a", "a"]).status == 0)
        #expect(try cli.run(["find-generic-password", "-a", "a", "-G", "new", "-w"]).stdout == "a-old\n")
        #expect(try cli.run(["set-access-group", "--to", "new", "-a", "nobody"]).status == 44)
        #expect(try cli.run(["set-access-group", "-G", "old"]).status == 2, "--to is required")
    }
}
