import Foundation
import SecItem
import SecItemSecretService
import SecItemTestSupport
import Testing

/// Broken environments, each in child processes on a private bus of the test's
/// own (the shared daemon is never locked, stopped or killed). Serialized: each
/// test starts its own daemons.
@Suite("Secret Service availability", .serialized)
struct SecretServiceAvailabilityTests {
    /// Every bounded call in the children uses 2 s (SECITEM_SECRET_SERVICE_TIMEOUT);
    /// allow a margin for process start-up.
    static let bound = 3_500

    @Test("no session bus: errSecNotAvailable at once, naming the bus")
    func noBus() throws {
        try SharedService.require()
        var env = ProcessInfo.processInfo.environment
        env["SECITEM_SECRET_SERVICE_TIMEOUT"] = "2"
        for address in ["unix:path=/nonexistent/secitem-bus", nil] {
            env["DBUS_SESSION_BUS_ADDRESS"] = address
            env["DISPLAY"] = nil
            let helper = try HelperProcess(environment: env)
            let reply = try helper.run("find s a")
            #expect(reply.status == errSecNotAvailable, "\(reply)")
            #expect(reply.milliseconds < Self.bound)
            #expect(reply.detail.contains("D-Bus session bus"), "\(reply.detail)")
        }
    }

    @Test("a bus without a provider: errSecNotAvailable within the bound, naming org.freedesktop.secrets")
    func noProvider() throws {
        try SharedService.require()
        let session = try PrivateSession(withKeyring: false)
        let helper = try HelperProcess(environment: session.environment)
        let reply = try helper.run("find s a")
        #expect(reply.status == errSecNotAvailable, "\(reply)")
        #expect(reply.milliseconds < Self.bound)
        #expect(reply.detail.contains("org.freedesktop.secrets"), "\(reply.detail)")
    }

    @Test("locked collection: errSecInteractionNotAllowed; with interaction allowed the prompt does not hang")
    func locked() throws {
        try SharedService.require()
        let session = try PrivateSession(withKeyring: true)
        let helper = try HelperProcess(environment: session.environment)
        #expect(try helper.run("add s a").kind == "ok")
        // Misses before locking: the helper then knows the collection unlocked, until a signal.
        #expect(try helper.run("find s nothing-yet").status == errSecItemNotFound)
        #expect(try helper.run("find s nothing-yet").status == errSecItemNotFound)
        try session.lockLogin()
        let find = try helper.run("find s a")
        #expect(find.status == errSecInteractionNotAllowed, "\(find)")
        let missing = try helper.run("find s nothing-here")
        #expect(missing.status == errSecInteractionNotAllowed, "\(missing)")
        let add = try helper.run("add s b")
        #expect(add.status == errSecInteractionNotAllowed, "\(add)")
        // Headless there is no prompter: gnome-keyring dismisses the unlock prompt at once.
        let ui = try helper.run("findui s a", timeout: .seconds(150))
        #expect(ui.status == errSecUserCanceled, "\(ui)")
        #expect(ui.detail.contains("dismissed"), "\(ui.detail)")
    }

    @Test("provider killed between two calls: the next call is errSecNotAvailable, no hang")
    func killed() throws {
        try SharedService.require()
        let session = try PrivateSession(withKeyring: true)
        let helper = try HelperProcess(environment: session.environment)
        #expect(try helper.run("add s a").kind == "ok")
        #expect(try helper.run("find s a").kind == "ok")
        session.killKeyring()
        let reply = try helper.run("find s a")
        #expect(reply.status == errSecNotAvailable, "\(reply)")
        #expect(reply.milliseconds < Self.bound)
        #expect(reply.detail.contains("org.freedesktop.secrets") || reply.detail.contains("provider"), "\(reply.detail)")
        // And again (the backend reconnects, and still finds nothing).
        #expect(try helper.run("find s a").status == errSecNotAvailable)
    }

    @Test("provider that stops answering: errSecNotAvailable after the timeout; recovers when it answers again")
    func hung() throws {
        try SharedService.require()
        let session = try PrivateSession(withKeyring: true)
        let helper = try HelperProcess(environment: session.environment)
        #expect(try helper.run("add s a").kind == "ok")
        session.signalKeyring(SIGSTOP)
        let reply = try helper.run("find s a")
        session.signalKeyring(SIGCONT)
        #expect(reply.status == errSecNotAvailable, "\(reply)")
        #expect(reply.milliseconds >= 1_900 && reply.milliseconds < Self.bound, "\(reply.milliseconds) ms")
        #expect(reply.detail.contains("did not answer within 2 s"), "\(reply.detail)")
        #expect(try helper.run("find s a").kind == "ok")
    }
}
