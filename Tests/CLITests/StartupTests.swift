import Foundation
import SecItemTestSupport
import Testing

/// Issue 14, start-up: a command loads what its backend needs and nothing else
/// (docs/cli.md, "Start-up"). Checked with the dynamic loader's own record
/// (`LD_DEBUG=files`), which lists every shared object a process maps, at start or
/// by `dlopen` later; timings are for the benchmark (`SecItemBenchmarks --filter cli`), not for tests.
@Suite("secitem start-up")
struct StartupTests {
    /// Shared objects the PostgreSQL backend alone needs: a file-backend process never maps them.
    static let postgreSQLOnly = ["libpq.so", "libldap", "libgssapi_krb5", "libkrb5", "libsasl2"]
    /// libsecret, GIO, GObject and GLib (and what only they pull in): loaded on first use by
    /// the Secret Service backend and the polkit/logind client (CSecItemGLib, issue 24).
    static let glibFamily = ["libsecret-1.so", "libgio-2.0.so", "libgobject-2.0.so", "libglib-2.0.so", "libgmodule-2.0.so", "libgcrypt.so"]
    /// The Swift runtime and Foundation, linked into the command statically.
    static let swiftRuntime = ["libswiftCore.so", "libFoundation.so", "libFoundationEssentials.so", "libdispatch.so", "lib_FoundationICU.so"]

    /// Runs `secitem arguments…` with the loader's record on; returns the run and the
    /// file names of every shared object the process loaded.
    static func loaded(_ cli: CLI, _ arguments: [String], stdin: String? = nil, environment: [String: String?] = [:])
        throws -> (result: CLI.Result, objects: Set<String>)
    {
        let log = cli.root.appendingPathComponent("ld-\(UUID().uuidString)")
        var env = environment
        env["LD_DEBUG"] = "files"
        env["LD_DEBUG_OUTPUT"] = log.path  // the loader appends ".PID"
        let result = try cli.run(arguments, stdin: stdin, environment: env)
        var objects: Set<String> = []
        let files = try FileManager.default.contentsOfDirectory(atPath: cli.root.path).filter {
            $0.hasPrefix(log.lastPathComponent + ".")
        }
        #expect(files.count == 1, "one loader record per process, found \(files)")
        for file in files {
            let text = try String(contentsOf: cli.root.appendingPathComponent(file), encoding: .utf8)
            // "  1234:\tfile=libpq.so.5 [0];  dynamically loaded by …"
            for line in text.split(separator: "\n") {
                guard let start = line.range(of: "file=") else { continue }
                let name = line[start.upperBound...].prefix { $0 != " " && $0 != "[" }
                objects.insert(String(name.split(separator: "/").last ?? name))
            }
            try FileManager.default.removeItem(at: cli.root.appendingPathComponent(file))
        }
        return (result, objects)
    }

    static func matching(_ objects: Set<String>, _ prefixes: [String]) -> [String] {
        objects.filter { name in prefixes.contains { name.hasPrefix($0) } }.sorted()
    }

    @Test("find -w on the file backend maps neither libpq, GLib nor libsecret, nor a shared Swift runtime")
    func fileFindLoadsLittle() throws {
        let cli = try CLI(backend: "file")
        defer { cli.remove() }
        #expect(try cli.run(["add-generic-password", "-a", "alice", "-s", "svc", "-w", "-"], stdin: "s3cret").status == 0)
        // A machine without a system bus (a server): the session-lock check of this
        // when-unlocked item answers without GIO, so nothing of GLib is mapped.
        let noSystemBus = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(cli.root.path)/no-system-bus"]
        let (found, objects) = try Self.loaded(cli, ["find-generic-password", "-a", "alice", "-s", "svc", "-w"], environment: noSystemBus)
        #expect(found.status == 0, "\(found.stderr)")
        #expect(found.stdout == "s3cret\n")
        // The record is real: it lists what the lookup needs.
        #expect(!Self.matching(objects, ["libsqlite3.so", "libcrypto.so"]).isEmpty, "\(objects.sorted())")
        #expect(Self.matching(objects, Self.postgreSQLOnly).isEmpty, "\(objects.sorted())")
        #expect(Self.matching(objects, Self.glibFamily).isEmpty, "\(objects.sorted())")
        #expect(Self.matching(objects, Self.swiftRuntime).isEmpty, "\(objects.sorted())")
        // The runtime's C++ library is linked in too (Linker/static-libstdc++).
        #expect(Self.matching(objects, ["libstdc++.so"]).isEmpty, "\(objects.sorted())")
        // With a system bus (the tests' own, with logind), the session-lock check asks logind
        // through GIO, loaded then; libsecret, the Secret Service's library, still never is.
        let (again, withBus) = try Self.loaded(cli, ["find-generic-password", "-a", "alice", "-s", "svc", "-w"])
        #expect(again.status == 0 && again.stdout == "s3cret\n", "\(again.stderr)")
        #expect(Self.matching(withBus, ["libsecret-1.so"]).isEmpty, "\(withBus.sorted())")
    }

    @Test("the automatic choice with no session bus maps neither GLib nor libsecret")
    func noBusLoadsNoGLib() throws {
        let cli = try CLI(backend: nil, bus: false)
        defer { cli.remove() }
        let (found, objects) = try Self.loaded(cli, ["find-generic-password", "-a", "alice", "-s", "svc", "-w"])
        #expect(found.status == 44, "\(found.stderr)")  // errSecItemNotFound, from the file the choice fell to
        #expect(!Self.matching(objects, ["libsqlite3.so"]).isEmpty, "\(objects.sorted())")
        #expect(Self.matching(objects, Self.glibFamily).isEmpty, "\(objects.sorted())")
    }

    @Test("the Secret Service backend loads libsecret and GLib when it is used")
    func secretServiceLoadsLibsecret() throws {
        try CLI.requireSecretService()
        let cli = try CLI(backend: "secret-service")
        defer { cli.remove() }
        let secret = "s3cret-\(UUID().uuidString.prefix(8))"
        #expect(try cli.run(["add-generic-password", "-a", "alice", "-s", "svc", "-w", "-"], stdin: secret).status == 0)
        let (found, objects) = try Self.loaded(cli, ["find-generic-password", "-a", "alice", "-s", "svc", "-w"])
        #expect(found.status == 0, "\(found.stderr)")
        #expect(found.stdout == secret + "\n")
        #expect(Self.matching(objects, ["libsecret-1.so", "libglib-2.0.so", "libgio-2.0.so"]).count == 3, "\(objects.sorted())")
        _ = try cli.run(["delete-generic-password", "-a", "alice", "-s", "svc"])
    }

    @Test("the PostgreSQL backend loads libpq when it is used")
    func postgreSQLLoadsLibpq() throws {
        let cli = try CLI(backend: "postgresql", bus: false)
        defer { cli.remove() }
        let key = cli.root.appendingPathComponent("fleet.key").path
        let hex = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        _ = FileManager.default.createFile(atPath: key, contents: Data(hex.utf8), attributes: [.posixPermissions: 0o600])
        // A server that cannot exist (no such socket directory): libpq is loaded, then fails to connect.
        let (found, objects) = try Self.loaded(
            cli, ["find-generic-password", "-a", "alice", "-s", "svc", "-w"],
            environment: [
                "SECITEM_KEY_FILE": key, "SECITEM_POSTGRESQL_URL": "host=\(cli.root.path)/no-server dbname=none connect_timeout=2",
            ])
        #expect(found.status == 53, "\(found.stderr)")
        #expect(found.stderr.contains("cannot connect to the PostgreSQL server"), "\(found.stderr)")
        #expect(Self.matching(objects, ["libpq.so"]) == ["libpq.so.5"], "\(objects.sorted())")
    }
}
