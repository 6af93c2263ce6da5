import Foundation
import SecItem
import SecItemCore
import SecItemTools
import SecItemMemory
import SecItemTestSupport
import Testing

@Suite("secitem export, import, migrate, rekey, verify")
struct TransferTests {
    /// Adds a generic and an internet password with many attributes and binary data.
    static func fill(_ cli: CLI) throws {
        let binary = Data([0, 0xFF, 1, 10, 0, 13, 0x80])
        #expect(try cli.run(["add-generic-password", "-a", "alice", "-s", "svc", "-l", "Label", "-j", "comment",
                             "-D", "kind", "-G", "generic", "-c", "crtr", "-C", "type", "-w", "-"], stdinData: binary).status == 0)
        #expect(try cli.run(["add-internet-password", "-a", "bob", "-s", "host.example", "-r", "htps", "-P", "8443",
                             "-p", "/p", "-d", "dom", "-t", "form", "-w", "-"], stdin: "inet-secret").status == 0)
    }

    /// Every item with its data, without the line naming the backend.
    static func contents(_ cli: CLI, environment: [String: String?] = [:]) throws -> String {
        let dump = try cli.run(["dump-keychain", "-d", "--yes"], environment: environment)
        #expect(dump.status == 0, "\(dump.stderr)")
        return dump.stdout.split(separator: "\n").filter { !$0.hasPrefix("keychain:") }.joined(separator: "\n")
    }

    @Test("export → import into an empty store round-trips every attribute and byte")
    func roundTrip() throws {
        let source = try CLI()
        let target = try CLI()
        defer { source.remove(); target.remove() }
        try Self.fill(source)
        let file = source.root.appendingPathComponent("items.secitem").path
        let pass: [String: String?] = ["SECITEM_EXPORT_PASSPHRASE": "export-pass-1-long"]
        let export = try source.run(["export", "--output", file], environment: pass)
        #expect(export.status == 0, "\(export.stderr)")
        #expect(export.stderr.contains("exported 2 items"))
        let raw = try Data(contentsOf: URL(fileURLWithPath: file))
        #expect(raw.range(of: Data("inet-secret".utf8)) == nil && raw.range(of: Data("host.example".utf8)) == nil)
        let imported = try target.run(["import", "--input", file], environment: pass)
        #expect(imported.status == 0, "\(imported.stderr)")
        let before = try Self.contents(source)
        #expect(before.contains("inet-secret") && before.contains("0x00FF010A000D80"))
        #expect(try Self.contents(target) == before)
        // A second import would duplicate everything: nothing is added.
        let again = try target.run(["import", "--input", file], environment: pass)
        #expect(again.status == 45)
    }

    @Test("a wrong passphrase fails (51) and imports nothing")
    func wrongPassphrase() throws {
        let source = try CLI()
        let target = try CLI()
        defer { source.remove(); target.remove() }
        try Self.fill(source)
        let file = source.root.appendingPathComponent("items.secitem").path
        #expect(try source.run(["export", "--output", file], environment: ["SECITEM_EXPORT_PASSPHRASE": "right-passphrase"]).status == 0)
        let wrong = try target.run(["import", "--input", file], environment: ["SECITEM_EXPORT_PASSPHRASE": "wrong-passphrase"])
        #expect(wrong.status == 51)
        #expect(!wrong.stderr.contains("right-passphrase") && !wrong.stderr.contains("wrong-passphrase"))
        #expect(try target.run(["dump-keychain"]).stdout.isEmpty)
        // The passphrase can also come from stdin.
        #expect(try target.run(["import", "--input", file], stdin: "right-passphrase\n").status == 0)
    }

    @Test("a truncated export file fails and imports nothing", arguments: [0.3, 0.6, 0.95])
    func truncated(fraction: Double) throws {
        let source = try CLI()
        let target = try CLI()
        defer { source.remove(); target.remove() }
        try Self.fill(source)
        for plaintext in [false, true] {
            let file = source.root.appendingPathComponent("items-\(plaintext)").path
            var args = ["export", "--output", file]
            if plaintext { args.append("--plaintext") }
            #expect(try source.run(args, environment: ["SECITEM_EXPORT_PASSPHRASE": "p-is-long-enough"]).status == 0)
            let data = try Data(contentsOf: URL(fileURLWithPath: file))
            let cut = file + ".cut"
            try data.prefix(Int(Double(data.count) * fraction)).write(to: URL(fileURLWithPath: cut))
            let result = try target.run(["import", "--plaintext", "--input", cut], environment: ["SECITEM_EXPORT_PASSPHRASE": "p-is-long-enough"])
            #expect(result.status != 0, "plaintext \(plaintext): \(result.stderr)")
            #expect(try target.run(["dump-keychain"]).stdout.isEmpty, "plaintext \(plaintext)")
        }
    }

    @Test("--plaintext is explicit; ThisDeviceOnly items are left out unless asked")
    func plaintextAndThisDeviceOnly() throws {
        let cli = try CLI()
        defer { cli.remove() }
        let json = """
            {"manifest":{"format":"secitem-export","version":1,"count":1,"accessGroups":["default"],"created":0},
             "items":[{"class":"genp","id":"6F3B2C1A-0000-4000-8000-000000000001","data":"ZGV2aWNl",
               "attributes":{"acct":{"string":"dev"},"svce":{"string":"only"},"agrp":{"string":"default"},
                 "sync":{"number":0},"pdmn":{"string":"aku"},"cdat":{"date":0},"mdat":{"date":0}}}]}
            """
        let input = cli.root.appendingPathComponent("device.json")
        try Data(json.utf8).write(to: input)
        #expect(try cli.run(["import", "--input", input.path]).status == 1)  // plaintext needs --plaintext
        #expect(try cli.run(["import", "--plaintext", "--input", input.path]).status == 0)
        #expect(try cli.run(["find-generic-password", "-s", "only", "-w"]).stdout == "device\n")
        let out = cli.root.appendingPathComponent("out.json").path
        let export = try cli.run(["export", "--plaintext", "--output", out])
        #expect(export.status == 0)
        #expect(export.stderr.contains("left out 1 ThisDeviceOnly"))
        #expect(!(try String(contentsOfFile: out, encoding: .utf8)).contains("ZGV2aWNl"))
        let out2 = cli.root.appendingPathComponent("out2.json").path
        #expect(try cli.run(["export", "--plaintext", "--include-this-device-only", "--output", out2]).status == 0)
        #expect(try String(contentsOfFile: out2, encoding: .utf8).contains("ZGV2aWNl"))
        #expect(try cli.run(["export", "--plaintext", "--output", out2]).status == 2)  // exists
    }

    @Test("migrate file → secret-service → file preserves everything; --move empties the source")
    func migrateRoundTrip() throws {
        try CLI.requireSecretService()
        let cli = try CLI(backend: "file")
        defer { cli.remove() }
        try Self.fill(cli)
        let original = try Self.contents(cli)
        let there = try cli.run(["migrate", "--from", "file", "--to", "secret-service", "--move"])
        #expect(there.status == 0, "\(there.stderr)")
        #expect(there.stderr.contains("moved 2 items"))
        #expect(try cli.run(["dump-keychain"]).stdout.isEmpty)
        #expect(try Self.contents(cli, environment: ["SECITEM_BACKEND": "secret-service"]) == original)
        let back = try cli.run(["migrate", "--from", "secret-service", "--to", "file", "--move"])
        #expect(back.status == 0, "\(back.stderr)")
        #expect(try Self.contents(cli) == original)
        #expect(try cli.run(["dump-keychain"], environment: ["SECITEM_BACKEND": "secret-service"]).stdout.isEmpty)
    }

    @Test("a failure part-way through a copy removes what was copied and leaves the source intact")
    func copyFailureMidway() throws {
        let source = MemoryBackend()
        let target = MemoryBackend()
        let client = SecItemClient(backend: source, accessGroups: AccessGroups(["g"]))
        for i in 0..<5 {
            try client.addItem([kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "a\(i)", kSecValueData as String: Data([UInt8(i)])])
        }
        let items = try KeychainTransfer.items(in: source, KeychainTransfer.Selection(accessGroups: ["g"])).items
        #expect(items.count == 5)
        target.injectFault(errSecIO, on: [.add], after: 3)
        #expect(throws: SecItemError.io) { try KeychainTransfer.copy(items, into: target) }
        #expect(target.count == 0)
        #expect(source.count == 5)
    }

    @Test("rekey to a new passphrase, rotate, verify")
    func rekeyAndVerify() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        let old: [String: String?] = ["SECITEM_PASSPHRASE": "old-pass"]
        let new: [String: String?] = ["SECITEM_PASSPHRASE": "new-pass"]
        #expect(try cli.run(["add-generic-password", "-a", "k", "-s", "rk", "-w", "-"], stdin: "kept", environment: old).status == 0)
        let verify = try cli.run(["verify"], environment: old)
        #expect(verify.status == 0)
        #expect(verify.stdout.hasSuffix(": ok\n"))
        let rekey = try cli.run(["rekey", "--new-passphrase"], stdin: "new-pass\n", environment: old)
        #expect(rekey.status == 0, "\(rekey.stderr)")
        #expect(try cli.run(["find-generic-password", "-s", "rk"], environment: old).status == 51)
        #expect(try cli.run(["find-generic-password", "-s", "rk", "-w"], environment: new).stdout == "kept\n")
        #expect(try cli.run(["rekey", "--rotate"], environment: new).status == 0)
        #expect(try cli.run(["find-generic-password", "-s", "rk", "-w"], environment: new).stdout == "kept\n")
        #expect(try cli.run(["rekey"], environment: new).status == 2)
    }
}
