import CSecItemSQLite3
import Foundation
import SecItemConformance
import SecItemTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 14, "Losing data" and "Leaking": each report reproduced, then fixed.
@Suite("secitem operator safety")
struct OperatorSafetyTests {
    static let exportPass: [String: String?] = ["SECITEM_EXPORT_PASSPHRASE": "a-long-export-passphrase"]

    /// A plaintext export document with `count` generic passwords (written directly: fast).
    /// Item `i`'s data is `secret(i)`, by default `secret-<seed>-<i>`.
    static func plaintextExport(count: Int, seed: UInt64, secret: ((Int) -> Data)? = nil) -> Data {
        var items: [String] = []
        for i in 0..<count {
            let id = String(format: "6F3B2C1A-0000-4000-8000-%012llX", UInt64(i) &+ seed % 1_000_000)
            let secret = (secret?(i) ?? Data("secret-\(seed)-\(i)".utf8)).base64EncodedString()
            items.append("""
                {"class":"genp","id":"\(id)","data":"\(secret)","attributes":{"acct":{"string":"acct-\(i)"},\
                "svce":{"string":"bulk"},"agrp":{"string":"default"},"sync":{"number":0},"pdmn":{"string":"ak"},\
                "cdat":{"date":0},"mdat":{"date":0}}}
                """)
        }
        let manifest = "{\"format\":\"secitem-export\",\"version\":1,\"count\":\(count),\"accessGroups\":[\"default\"],\"created\":0}"
        return Data("{\"manifest\":\(manifest),\"items\":[\(items.joined(separator: ","))]}".utf8)
    }

    static func itemCount(_ cli: CLI) throws -> Int {
        let dump = try cli.run(["dump-keychain"])
        return dump.stdout.components(separatedBy: "class: ").count - 1
    }

    @Test("migrate --move to the memory backend is refused; the items stay")
    func moveToMemory() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        for i in 0..<3 {
            #expect(try cli.run(["add-generic-password", "-a", "m\(i)", "-s", "move", "-w", "-"], stdin: "s\(i)").status == 0)
        }
        let move = try cli.run(["migrate", "--from", "file", "--to", "memory", "--move"])
        #expect(move.status == 2, "\(move.stderr)")
        #expect(move.stderr.contains("memory"))
        #expect(!move.stderr.contains("moved"))
        #expect(try Self.itemCount(cli) == 3)
    }

    @Test("import killed at any instant leaves all or nothing on the file backend; a second import then works")
    func importKilled() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        let seed = UInt64.random(in: 1...1_000_000)
        print("OperatorSafetyTests.importKilled seed \(seed)")
        var rng = SeededRandom(seed: seed)
        let count = 2000
        let file = cli.root.appendingPathComponent("bulk.json")
        try Self.plaintextExport(count: count, seed: seed).write(to: file)
        // Time an import, then kill others at seeded instants across that span.
        let started = Date()
        let first = try cli.run(["import", "--plaintext", "--input", file.path])
        let span = Date().timeIntervalSince(started)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try Self.itemCount(cli) == count)
        for attempt in 0..<3 {
            let target = try CLI(backend: "file", bus: false)
            defer { target.remove() }
            let delay = Double(rng.next() % 1000) / 1000 * span
            let running = try target.start(["import", "--plaintext", "--input", file.path])
            running.closeInput()
            usleep(useconds_t(delay * 1_000_000))
            kill(running.process.processIdentifier, SIGKILL)
            _ = try running.finish()
            let left = try Self.itemCount(target)
            #expect(left == 0 || left == count, "attempt \(attempt), killed after \(delay) s: \(left) of \(count) items left")
            let again = try target.run(["import", "--plaintext", "--input", file.path])
            if left == 0 {
                #expect(again.status == 0, "\(again.stderr)")
                #expect(try Self.itemCount(target) == count)
            } else {
                #expect(again.status == 45)
            }
        }
    }

    @Test("an interrupted Secret Service import is finished with --resume")
    func resumeOnSecretService() throws {
        try CLI.requireSecretService()
        let cli = try CLI(backend: "secret-service")
        defer { cli.remove() }
        let file = cli.root.appendingPathComponent("three.json")
        try Self.plaintextExport(count: 3, seed: 7).write(to: file)
        #expect(try cli.run(["import", "--plaintext", "--input", file.path]).status == 0)
        // As if the import had been killed after two items.
        #expect(try cli.run(["delete-generic-password", "-a", "acct-2", "-s", "bulk"]).status == 0)
        let again = try cli.run(["import", "--plaintext", "--input", file.path])
        #expect(again.status == 45)
        #expect(again.stderr.contains("--resume"), "\(again.stderr)")
        let resumed = try cli.run(["import", "--plaintext", "--resume", "--input", file.path])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stderr.contains("imported 1 items"))
        #expect(try Self.itemCount(cli) == 3)
        // --resume never takes over a different item holding the same key.
        // (-U updates only in the group the add targets: the export's items are in 'default'.)
        #expect(try cli.run(["add-generic-password", "-U", "-a", "acct-0", "-s", "bulk", "-G", "default", "-w", "-"], stdin: "changed").status == 0)
        #expect(try cli.run(["import", "--plaintext", "--resume", "--input", file.path]).status == 45)
    }

    @Test("export never replaces a file, even one created while it runs")
    func exportNoReplace() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        #expect(try cli.run(["add-generic-password", "-a", "x", "-s", "nr", "-w", "-"], stdin: "s").status == 0)
        let dir = cli.root.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let output = dir.appendingPathComponent("export.secitem").path
        let running = try cli.start(["export", "--output", output], environment: Self.exportPass)
        running.closeInput()
        // The export is under way once its private directory exists (scrypt N=2^17 takes a while after).
        try Wait.until("the export's private directory") {
            ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).contains { $0.hasPrefix(".secitem-export-") }
        }
        try Data("someone else's file\n".utf8).write(to: URL(fileURLWithPath: output))
        let result = try running.finish()
        #expect(result.status != 0, "\(result.stderr)")
        #expect(try String(contentsOfFile: output, encoding: .utf8) == "someone else's file\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["export.secitem"], "temporary files left behind")
    }

    @Test("a plaintext export is 0600 whatever the umask; the temporary directory is private")
    func plaintextExportMode() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        #expect(try cli.run(["add-generic-password", "-a", "x", "-s", "pm", "-w", "-"], stdin: "s").status == 0)
        let output = cli.root.appendingPathComponent("plain.json").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "umask 000 && exec \"$0\" export --plaintext --output \"$1\"", CLI.executable.path, output]
        process.environment = cli.environment
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let mode = try FileManager.default.attributesOfItem(atPath: output)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test("damaged rows make export, migrate and dump fail with a count and identities, unless --skip-damaged")
    func damagedRows() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        for i in 0..<3 {
            #expect(try cli.run(["add-generic-password", "-a", "d\(i)", "-s", "dmg", "-w", "-"], stdin: "damaged-secret-\(i)").status == 0)
        }
        // Damage the first row as someone who can write the file but has no key would.
        let path = cli.root.appendingPathComponent("data/secitem/keychain.db").path
        var db: OpaquePointer?
        #expect(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK)
        #expect(sqlite3_exec(db, "UPDATE sealed_items SET ct = randomblob(length(ct)) WHERE seq = (SELECT MIN(seq) FROM sealed_items)", nil, nil, nil) == SQLITE_OK)
        #expect(sqlite3_changes(db) == 1)
        sqlite3_close_v2(db)

        let output = cli.root.appendingPathComponent("x.secitem").path
        let export = try cli.run(["export", "--output", output], environment: Self.exportPass)
        #expect(export.status == 1, "\(export.stderr)")
        #expect(export.stderr.contains("problems that searches skip"))
        #expect(export.stderr.contains("genp"))
        #expect(!export.stderr.contains("damaged-secret"))
        #expect(!FileManager.default.fileExists(atPath: output))
        let skipping = try cli.run(["export", "--skip-damaged", "--output", output], environment: Self.exportPass)
        #expect(skipping.status == 0, "\(skipping.stderr)")
        #expect(skipping.stderr.contains("exported 2 items"))

        let migrate = try cli.run(["migrate", "--from", "file", "--to", "memory"])
        #expect(migrate.status == 1)
        #expect(migrate.stderr.contains("problems that searches skip"))
        #expect(try cli.run(["migrate", "--from", "file", "--to", "memory", "--skip-damaged"]).status == 0)

        let dump = try cli.run(["dump-keychain"])
        #expect(dump.status == 1)
        #expect(dump.stdout.components(separatedBy: "class: ").count - 1 == 2)
        #expect(dump.stderr.contains("problems that searches skip"))
        #expect(try cli.run(["dump-keychain", "--skip-damaged"]).status == 0)
    }

    @Test("an empty SECITEM_PASSPHRASE is an error, not a generated key file")
    func emptyPassphrase() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        let add = try cli.run(["add-generic-password", "-a", "e", "-s", "empty", "-w", "-"], stdin: "s", environment: ["SECITEM_PASSPHRASE": ""])
        #expect(add.status == 2, "\(add.stderr)")
        #expect(add.stderr.contains("SECITEM_PASSPHRASE") && add.stderr.contains("empty"))
        #expect(!FileManager.default.fileExists(atPath: cli.root.appendingPathComponent("config/secitem/keychain.key").path))
        #expect(!FileManager.default.fileExists(atPath: cli.root.appendingPathComponent("data/secitem/keychain.db").path))
    }

    @Test("a plaintext file swapped in for an encrypted export is refused without --plaintext")
    func plaintextSwappedIn() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        let file = cli.root.appendingPathComponent("swapped.secitem")
        try Self.plaintextExport(count: 2, seed: 3).write(to: file)
        let refused = try cli.run(["import", "--input", file.path], environment: Self.exportPass)
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("--plaintext"))
        #expect(try Self.itemCount(cli) == 0)
        #expect(try cli.run(["import", "--plaintext", "--input", file.path]).status == 0)
        #expect(try Self.itemCount(cli) == 2)
    }

    @Test("a FIFO, a symlink or a device as the key file is refused at once")
    func keyFileNotRegular() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        let fifo = cli.root.appendingPathComponent("key.fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let real = cli.root.appendingPathComponent("real.key").path
        try Data(String(repeating: "ab", count: 32).utf8).write(to: URL(fileURLWithPath: real))
        chmod(real, 0o600)
        let link = cli.root.appendingPathComponent("link.key").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        for (path, word) in [(fifo, "FIFO"), (link, "symbolic link"), ("/dev/zero", "device")] {
            let running = try cli.start(["find-generic-password", "-s", "k"], environment: ["SECITEM_KEY_FILE": path])
            running.closeInput()
            let result = try running.finish(timeout: .seconds(20))
            #expect(result.status == 2, "\(path): \(result.stderr)")
            #expect(result.stderr.contains(word), "\(result.stderr)")
        }
        // The target itself works.
        #expect(try cli.run(["add-generic-password", "-a", "k", "-s", "k"], environment: ["SECITEM_KEY_FILE": real]).status == 0)
    }

    @Test("export needs a passphrase of at least 12 characters")
    func shortExportPassphrase() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        #expect(try cli.run(["add-generic-password", "-a", "x", "-s", "sp", "-w", "-"], stdin: "s").status == 0)
        let output = cli.root.appendingPathComponent("short.secitem").path
        let short = try cli.run(["export", "--output", output], environment: ["SECITEM_EXPORT_PASSPHRASE": "x"])
        #expect(short.status == 2)
        #expect(short.stderr.contains("at least 12"))
        #expect(!FileManager.default.fileExists(atPath: output))
    }
}
