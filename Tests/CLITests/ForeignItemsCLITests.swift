import Foundation
import SecItemTestSupport
import Testing

/// secret-tool's and Python keyring's items through `secitem`, with the foreign group listed,
/// and the other tool seeing each change; `migrate --adopt-foreign` copies them into a SecItem group.
@Suite("secitem and items other Secret Service clients stored")
struct ForeignItemsCLITests {
    static let foreign = "org.secitem.foreign"

    func tool(_ cli: CLI, _ path: String, _ arguments: [String], stdin: String? = nil) throws -> ProcessOutput {
        try ChildProcess.run(path, arguments, environment: cli.environment, stdin: stdin.map { Data($0.utf8) })
    }

    @Test("secret-tool's token: find, update (-U), delete through secitem; secret-tool sees each change")
    func secretTool() throws {
        let cli = try Store.secretService.cli()
        defer { cli.remove() }
        let service = "svc.foreign-\(UUID().uuidString)"
        let secretTool = "/usr/bin/secret-tool"
        #expect(try tool(cli, secretTool, ["store", "--label=x", "service", service, "account", "bob"], stdin: "tok-1").status == 0)
        defer { _ = try? tool(cli, secretTool, ["clear", "service", service, "account", "bob"]) }
        // The report: invisible without the foreign group (exit 44).
        #expect(try cli.run(["find-generic-password", "-s", service, "-a", "bob", "-w"]).status == 44)
        let foreign: [String: String?] = ["SECITEM_ACCESS_GROUPS": Self.foreign]
        let find = try cli.run(["find-generic-password", "-s", service, "-a", "bob", "-w"], environment: foreign)
        #expect(find.status == 0, "\(find.stderr)")
        #expect(find.stdout == "tok-1\n")
        // Read-only without the opt-in: the delete is refused and secret-tool still finds its item.
        let refused = try cli.run(["delete-generic-password", "-s", service, "-a", "bob"], environment: foreign)
        #expect(refused.status != 0, "\(refused.stdout)")
        #expect(try tool(cli, secretTool, ["lookup", "service", service, "account", "bob"]).stdout == "tok-1")
        var writable = foreign
        writable["SECITEM_SECRET_SERVICE_FOREIGN_WRITES"] = "1"
        let update = try cli.run(["add-generic-password", "-U", "-s", service, "-a", "bob", "-w", "-"], stdin: "tok-2",
                                 environment: writable)
        #expect(update.status == 0, "\(update.stderr)")
        #expect(try tool(cli, secretTool, ["lookup", "service", service, "account", "bob"]).stdout == "tok-2")
        let delete = try cli.run(["delete-generic-password", "-s", service, "-a", "bob"], environment: writable)
        #expect(delete.status == 0, "\(delete.stderr)")
        #expect(try tool(cli, secretTool, ["lookup", "service", service, "account", "bob"]).status != 0)
    }

    @Test("Python keyring's password: read through secitem; migrate --adopt-foreign copies it into a SecItem group, --move deletes the original")
    func pythonKeyringAndAdopt() throws {
        let cli = try Store.secretService.cli()
        defer { cli.remove() }
        let service = "svc.py-\(UUID().uuidString)"
        let python = "/usr/bin/python3"
        let set = try tool(cli, python, ["-c", "import keyring; keyring.set_password('\(service)', 'carol', 'py-1')"])
        #expect(set.status == 0, "\(set.stderr)")
        defer { _ = try? tool(cli, python, ["-c", "import keyring; keyring.delete_password('\(service)', 'carol')"]) }
        let foreign: [String: String?] = ["SECITEM_ACCESS_GROUPS": "app,\(Self.foreign)"]
        // Listed as the first (default) group, so that an operator tool entitled to every group searches it too.
        let foreignFirst: [String: String?] = ["SECITEM_ACCESS_GROUPS": Self.foreign]
        #expect(try cli.run(["find-generic-password", "-s", service, "-w"], environment: foreignFirst).stdout == "py-1\n")

        // Adopt: a SecItem copy in group app, verified; the original stays without --move.
        let adopt = try cli.run(["migrate", "--adopt-foreign", "--to-group", "app", "-s", service], environment: foreign)
        #expect(adopt.status == 0, "\(adopt.stderr)")
        #expect(adopt.stderr.contains("adopted 1 items"))
        let own: [String: String?] = ["SECITEM_ACCESS_GROUPS": "app"]
        #expect(try cli.run(["find-generic-password", "-s", service, "-a", "carol", "-w"], environment: own).stdout == "py-1\n")
        #expect(try tool(cli, python, ["-c", "import keyring; print(keyring.get_password('\(service)', 'carol'))"]).stdout
            == "py-1\n")
        // Adopting again: the copy exists, nothing is copied (45).
        #expect(try cli.run(["migrate", "--adopt-foreign", "--to-group", "app", "-s", service], environment: foreign).status == 45)
        // --move removes the original once the copy is verified: delete ours first so the copy is made again.
        #expect(try cli.run(["delete-generic-password", "-s", service, "-a", "carol"], environment: own).status == 0)
        let move = try cli.run(["migrate", "--adopt-foreign", "--to-group", "app", "--move", "-s", service], environment: foreign)
        #expect(move.status == 0, "\(move.stderr)")
        let gone = try tool(cli, python, ["-c", "import keyring, secretstorage\nc = secretstorage.get_default_collection(secretstorage.dbus_init())\nprint([i.get_label() for i in c.search_items({'service': '\(service)', 'application': 'Python keyring library'})])"])
        #expect(gone.stdout == "[]\n", "\(gone.stderr)")
        #expect(try cli.run(["find-generic-password", "-s", service, "-a", "carol", "-w"], environment: own).stdout == "py-1\n")
        #expect(try cli.run(["find-generic-password", "-s", service, "-a", "carol"], environment: foreign).stdout
            .contains("\"agrp\"<blob>=\"app\""))
    }
}
