import Foundation
import SecItemTestSupport
import Testing

/// Issue 27, finding 5: what a per-user config file may not do to unrelated programs.
@Suite("The config file's access-groups: shared groups, never every program's default")
struct SharedConfigGroupsTests {
    @Test("access-groups in the config file: one program's wipe leaves another's items and git's credential")
    func configGroupsAreNotADefault() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        // The example docs/cli.md gave.
        try cli.writeConfig("access-groups = app,shared\n")
        let bin = cli.root.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let a = try AppProgram(named: "configA", in: bin), b = try AppProgram(named: "configB", in: bin)
        try a.ok(["store", "A"], cli)
        try b.ok(["store", "B"], cli)
        var env = cli.environment
        env["GIT_TERMINAL_PROMPT"] = "0"
        let helper = try Executables.built("git-credential-secitem")
        let stored = try ChildProcess.run(
            helper, ["store"], environment: env,
            stdin: Data("protocol=https\nhost=git.example.com\nusername=u\npassword=git-secret\n\n".utf8))
        #expect(stored.status == 0, "\(stored.stderr)")
        try a.ok(["wipe"], cli)
        let bDump = try b.ok(["dump"], cli)
        #expect(bDump.split(separator: "\n").count == 4, "B lost items to A's wipe: \(bDump)")
        let got = try ChildProcess.run(
            helper, ["get"], environment: env, stdin: Data("protocol=https\nhost=git.example.com\n\n".utf8))
        #expect(got.stdout.contains("password=git-secret"), "git's credential was wiped by A: \(got.status) \(got.stderr)")
        // Each program's default group is still its own application identifier.
        let who = try a.ok(["whoami"], cli).split(separator: "\n").map(String.init)
        #expect(who.first == "executable.configA")
        #expect(who.last?.split(separator: ",").first == "executable.configA", "\(who)")
    }
}
