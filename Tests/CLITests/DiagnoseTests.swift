import Foundation
import SecItemTestSupport
import Testing

@Suite("secitem diagnose and the automatic choice")
struct DiagnoseTests {
    @Test("no session bus: the encrypted file, quickly, saying why")
    func noBus() throws {
        let cli = try CLI(backend: nil, bus: false)
        defer { cli.remove() }
        let start = Date()
        let result = try cli.run(["diagnose"])
        // Wall-clock bounds are loose (a shared, loaded machine); the probe's own time is checked below.
        #expect(Date().timeIntervalSince(start) < 3.0)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.hasPrefix("backend: file\n"))
        #expect(result.stdout.contains("no D-Bus session bus"))
        #expect(result.stdout.contains("secret-service: not usable"))
        #expect(result.stdout.contains("memory: usable"))
        // The automatic choice used by a verb is the same: the item lands in the file.
        #expect(try cli.run(["add-generic-password", "-a", "a", "-s", "auto", "-w", "-"], stdin: "x").status == 0)
        let found = try cli.run(["find-generic-password", "-s", "auto"])
        #expect(found.stdout.contains("keychain: \"file\""))
        #expect(FileManager.default.fileExists(atPath: cli.root.appendingPathComponent("data/secitem/keychain.db").path))
    }

    @Test("a bus without a Secret Service provider: the encrypted file, within a second")
    func busWithoutProvider() throws {
        let cli = try CLI(backend: nil, bus: false)
        defer { cli.remove() }
        let bus = try PrivateDBus(directory: cli.root)
        defer { bus.stop() }
        let start = Date()
        let result = try cli.run(["diagnose"], environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        #expect(Date().timeIntervalSince(start) < 3.0)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.hasPrefix("backend: file\n"))
        #expect(result.stdout.contains("no Secret Service provider answers"), "\(result.stdout)")
        // The probe itself answers well under a second.
        let line = result.stdout.split(separator: "\n").first { $0.contains("probe took") }
        let milliseconds = line.flatMap { Int($0.split(separator: " ")[2]) }
        #expect(milliseconds.map { $0 < 1000 } == true, "\(line ?? "no probe line")")
    }

    @Test("a working gnome-keyring: the Secret Service")
    func workingKeyring() throws {
        try CLI.requireSecretService()
        let cli = try CLI(backend: nil)
        defer { cli.remove() }
        let result = try cli.run(["diagnose"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.hasPrefix("backend: secret-service\n"), "\(result.stdout)")
        #expect(result.stdout.contains("a Secret Service provider answers"))
        #expect(result.stdout.contains("file: usable"))
        #expect(try cli.run(["add-generic-password", "-a", "a", "-s", "auto-ss", "-w", "-"], stdin: "x").status == 0)
        #expect(try cli.run(["find-generic-password", "-s", "auto-ss"]).stdout.contains("keychain: \"secret-service\""))
    }

    @Test("a key file with loose permissions: not usable, exit 53, says chmod")
    func looseKeyFile() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        let keyFile = cli.root.appendingPathComponent("loose.key")
        try Data(String(repeating: "ab", count: 32).utf8).write(to: keyFile)
        chmod(keyFile.path, 0o644)
        let result = try cli.run(["diagnose"], environment: ["SECITEM_KEY_FILE": keyFile.path])
        #expect(result.status == 53)
        #expect(result.stdout.contains("key file refused"))
        #expect(result.stdout.contains("chmod 600"))
        #expect(!result.stdout.contains(String(repeating: "ab", count: 32)))
        chmod(keyFile.path, 0o600)
        #expect(try cli.run(["diagnose"], environment: ["SECITEM_KEY_FILE": keyFile.path]).status == 0)
    }

    @Test("diagnose shows the config file and hides the passphrase")
    func configAndSecrets() throws {
        let cli = try CLI(backend: nil, bus: false)
        defer { cli.remove() }
        try cli.writeConfig("# test\nbackend = file\naccess-groups = team,other\n")
        let result = try cli.run(["diagnose"], environment: ["SECITEM_PASSPHRASE": "hunter2-passphrase"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("reason: backend = file in the config file"))
        #expect(result.stdout.contains("access-groups = team,other"))
        #expect(result.stdout.contains("SECITEM_PASSPHRASE=(set)"))
        #expect(!result.stdout.contains("hunter2") && !result.stderr.contains("hunter2"))
        // access-groups from the config file are shared groups, not a default: new items go to the command's own group.
        #expect(try cli.run(["add-generic-password", "-a", "g", "-s", "groups", "-w", "-"], stdin: "x",
                            environment: ["SECITEM_PASSPHRASE": "hunter2-passphrase"]).status == 0)
        let found = try cli.run(["find-generic-password", "-s", "groups"], environment: ["SECITEM_PASSPHRASE": "hunter2-passphrase"])
        #expect(found.stdout.contains("\"agrp\"<blob>=\"org.secitem.cli\""), "\(found.stdout)\(found.stderr)")
        // They are entitled: -G team puts an item there.
        #expect(try cli.run(["add-generic-password", "-a", "g", "-s", "team-groups", "-G", "team", "-w", "-"], stdin: "x",
                            environment: ["SECITEM_PASSPHRASE": "hunter2-passphrase"]).status == 0)
    }

    @Test("a bad config file is bad usage and names the line")
    func badConfig() throws {
        let cli = try CLI(backend: nil, bus: false)
        defer { cli.remove() }
        try cli.writeConfig("backend = file\ncolour = blue\n")
        let result = try cli.run(["find-generic-password", "-s", "x"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("line 2: unknown key 'colour'"))
    }
}

@Suite("secitem exit statuses")
struct ExitStatusTests {
    @Test("wrong passphrase: 51 (auth failed)")
    func authFailed() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        #expect(try cli.run(["add-generic-password", "-a", "a", "-s", "s", "-w", "-"], stdin: "x",
                            environment: ["SECITEM_PASSPHRASE": "right-one"]).status == 0)
        let wrong = try cli.run(["find-generic-password", "-s", "s"], environment: ["SECITEM_PASSPHRASE": "wrong-one"])
        #expect(wrong.status == 51, "\(wrong.stderr)")
        #expect(wrong.stderr.contains("The user name or passphrase you entered is not correct."))
        #expect(!wrong.stderr.contains("wrong-one") && !wrong.stderr.contains("right-one"))
    }

    @Test("no Secret Service when asked for it: 53 (not available), quickly")
    func notAvailable() throws {
        let cli = try CLI(backend: "secret-service", bus: false)
        defer { cli.remove() }
        let start = Date()
        let result = try cli.run(["find-generic-password", "-s", "s"])
        #expect(Date().timeIntervalSince(start) < 3.0)
        #expect(result.status == 53)
        #expect(result.stderr.contains("No keychain is available."))
        #expect(result.stderr.contains("session bus"))
    }
}
