import Foundation
import SecItemTestSupport
import Testing

/// git-credential-secitem on a locked keyring: the issue's "never prompting on its own
/// terminal" with the real daemon. A private gnome-keyring of its own (the shared one
/// is never locked).
@Suite("git-credential-secitem on a locked keyring", .serialized)
struct GitHelperLockedTests {
    @Test("a locked keyring: a message on stderr, an empty answer, exit 1, no prompt and no hang")
    func lockedKeyring() throws {
        try SharedService.require()
        let session = try PrivateSession(withKeyring: true)
        let helper = try Executables.built("git-credential-secitem")
        var env = session.environment
        env["SECITEM_BACKEND"] = "secret-service"
        env["SECITEM_CONFIG"] = "none"
        let stored = try ChildProcess.run(
            helper, ["store"], environment: env,
            stdin: Data("protocol=https\nhost=locked.example\nusername=u\npassword=pw-locked\n".utf8))
        #expect(stored.status == 0, "\(stored.stderr)")
        let unlocked = try ChildProcess.run(
            helper, ["get"], environment: env, stdin: Data("protocol=https\nhost=locked.example\n".utf8))
        #expect(unlocked.stdout == "username=u\npassword=pw-locked\n", "\(unlocked.stderr)")

        try session.lockLogin()
        let started = ContinuousClock.now
        let get = try ChildProcess.run(
            helper, ["get"], environment: env, stdin: Data("protocol=https\nhost=locked.example\n".utf8),
            timeout: .seconds(60))
        #expect(ContinuousClock.now - started < .seconds(30), "the helper waited on the locked keyring")
        #expect(get.status == 1)
        #expect(get.stdout.isEmpty)
        #expect(get.stderr.contains("locked"), "\(get.stderr)")
        #expect(get.stderr.contains("git will ask for the password"), "\(get.stderr)")
        #expect(!get.stderr.contains("pw-locked"))
        // A store is refused the same way, and changes nothing.
        let store = try ChildProcess.run(
            helper, ["store"], environment: env,
            stdin: Data("protocol=https\nhost=locked.example\nusername=u\npassword=pw-new\n".utf8))
        #expect(store.status == 1)
        #expect(store.stderr.contains("the credential was not saved"), "\(store.stderr)")
    }
}
