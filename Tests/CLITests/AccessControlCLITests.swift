import Foundation
import SecItem
import SecItemCore
import SecItemSecretService
import SecItemTestSupport
import Testing

/// `find-… -w` of a protected item goes through the same check as SecItemCopyMatching;
/// `diagnose` says whether polkit, an agent and logind are reachable. Against the
/// mock polkit and logind of scripts/with-system-bus.
@Suite("secitem and protected items")
struct AccessControlCLITests {
    static func requireSystemBus() throws {
        try TestService.systemBus.require()
    }

    /// A CLI on the Secret Service, and a protected item stored in its namespace by this process.
    static func cliWithProtectedItem() throws -> CLI {
        try CLI.requireSecretService()
        var cli = try CLI(backend: "secret-service")
        cli.environment["SECITEM_ACCESS_GROUPS"] = "cli-test"
        let namespace = try #require(cli.environment["SECITEM_SECRET_SERVICE_NAMESPACE"])
        let backend = try SecretServiceBackend(configuration: .init(namespace: namespace, timeout: .seconds(20)))
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["cli-test"]))
        try client.addItem([
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc",
            kSecAttrAccount as String: "protected", kSecValueData as String: Data("hunter2".utf8),
            kSecAttrAccessControl as String: SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, .userPresence, nil)!,
        ])
        try client.addItem([
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc",
            kSecAttrAccount as String: "plain", kSecValueData as String: Data("open".utf8),
        ])
        return cli
    }

    static func action(_ outcome: String) -> String { "org.secitem.test.\(outcome).\(UUID().uuidString.lowercased())" }

    @Test("find -w of a protected item asks polkit; the attributes alone do not")
    func findPassword() throws {
        try Self.requireSystemBus()
        let cli = try Self.cliWithProtectedItem()
        defer { cli.remove() }
        let find = ["find-generic-password", "-s", "svc", "-a", "protected", "-w"]

        let allowed = try cli.run(find, environment: ["SECITEM_POLKIT_ACTION": Self.action("allow")])
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(allowed.stdout == "hunter2\n")

        for outcome in ["deny", "dismiss", "noagent"] {
            let refused = try cli.run(find, environment: ["SECITEM_POLKIT_ACTION": Self.action(outcome)])
            #expect(refused.status == 51, "\(outcome): \(refused.stderr)")
            #expect(refused.stdout.isEmpty)
            #expect(!refused.stderr.contains("hunter2"))
        }
        let noBus = try cli.run(find, environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/secitem-bus"])
        #expect(noBus.status == 51)
        #expect(noBus.stderr.contains("cannot connect to the system bus"), "\(noBus.stderr)")

        let attributes = try cli.run(
            ["find-generic-password", "-s", "svc", "-a", "protected"],
            environment: ["SECITEM_POLKIT_ACTION": Self.action("deny")])
        #expect(attributes.status == 0, "\(attributes.stderr)")
        #expect(!attributes.stdout.contains("hunter2") && !attributes.stderr.contains("hunter2"))
    }

    @Test("find -w of a WhenUnlocked item fails while the session is locked")
    func findWhileLocked() throws {
        try Self.requireSystemBus()
        let cli = try Self.cliWithProtectedItem()
        defer { cli.remove() }
        let find = ["find-generic-password", "-s", "svc", "-a", "plain", "-w"]
        let locked = try cli.run(find, environment: ["XDG_SESSION_ID": "locked"])
        #expect(locked.status == 51)
        #expect(locked.stderr.contains("session is locked"), "\(locked.stderr)")
        let unlocked = try cli.run(find, environment: ["XDG_SESSION_ID": "unlocked"])
        #expect(unlocked.stdout == "open\n", "\(unlocked.stderr)")
    }

    @Test("diagnose says whether the system bus, polkit, an agent and logind are reachable")
    func diagnose() throws {
        try Self.requireSystemBus()
        let cli = try CLI(backend: "memory")
        defer { cli.remove() }
        let locked = try cli.run(["diagnose"], environment: ["XDG_SESSION_ID": "locked"])
        #expect(locked.stdout.contains("access control:"))
        #expect(locked.stdout.contains("  system bus: reachable"))
        #expect(locked.stdout.contains("  polkit: running (action org.secitem.item.read-protected)"))
        #expect(locked.stdout.contains("  authentication agent: "))
        #expect(locked.stdout.contains("  session lock: logind session /org/freedesktop/login1/session/locked: locked"))

        let noSession = try cli.run(["diagnose"], environment: ["XDG_SESSION_ID": nil])
        #expect(noSession.stdout.contains("the session counts as unlocked"), "\(noSession.stdout)")

        let noBus = try cli.run(["diagnose"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/secitem-bus"])
        #expect(noBus.stdout.contains("  system bus: not reachable"))
        #expect(noBus.stdout.contains("  polkit: cannot be asked (no system bus)"))
        #expect(noBus.stdout.contains("  session lock: no logind (no system bus): the session counts as unlocked"))
    }
}
