import Foundation
import SecItemTestSupport
import Testing

/// An app that depends on SecItem with no traits (`Tests/Fixtures/MinimalApp`): the
/// file and memory stores only. It builds with pkg-config seeing sqlite3 alone (so no
/// libsecret, GLib or libpq header could be found), its build plan holds none of the
/// optional backends' targets, and `ldd` shows its executable links none of libsecret,
/// GIO, GLib or libpq. It then stores and reads a secret in the file backend.
@Suite("The minimal trait set")
struct MinimalTraitsTests {
    static let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let fixture = checkout.appendingPathComponent("Tests/Fixtures/MinimalApp")
    /// Kept between runs: incremental after the first (cold: a few minutes on a loaded 2-core machine).
    static let scratch = checkout.appendingPathComponent(".build/fixtures/MinimalApp")

    /// The optional parts: none may be built for an app that enables no trait.
    static let optionalTargets: Set<String> = [
        "SecItemSecretService", "CSecItemLibsecret", "CSecItemLibsecretSystem", "SecItemPolkit", "CSecItemDBus", "CSecItemGLib",
        "SecItemPostgreSQL", "CSecItemLibpq",
    ]

    @Test("builds without libsecret, GLib or libpq headers and links none of them")
    func minimalApp() throws {
        let temporary = NSTemporaryDirectory() + "secitem-minimal-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        // pkg-config sees sqlite3's .pc file alone.
        let pcdir = try ChildProcess.run("/usr/bin/pkg-config", ["--variable", "pcfiledir", "sqlite3"]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let onlySQLite = temporary + "/pkgconfig"
        try FileManager.default.createDirectory(atPath: onlySQLite, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: onlySQLite + "/sqlite3.pc", withDestinationPath: pcdir + "/sqlite3.pc")
        var env = ProcessInfo.processInfo.environment
        env["PKG_CONFIG_LIBDIR"] = onlySQLite
        env["PKG_CONFIG_PATH"] = ""
        env["SECITEM_FIXTURE_TRAITS"] = nil  // traits: [] (scripts/check-traits sets one at a time)
        let location = ["--package-path", Self.fixture.path, "--scratch-path", Self.scratch.path]
        let build = try ChildProcess.run(
            try Executables.which("swift"), ["build"] + location, environment: env, timeout: .seconds(1200))
        try #require(build.status == 0, "the minimal app did not build:\n\(build.stdout.suffix(4000))\n\(build.stderr.suffix(2000))")

        let plan = Self.scratch.appendingPathComponent("debug/description.json")
        let description = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: plan)) as? [String: Any], "no build plan at \(plan.path)")
        let dependencies = try #require(description["targetDependencyMap"] as? [String: [String]], "no targetDependencyMap")
        let built = Set(try #require(dependencies["MinimalApp"], "MinimalApp is not in the plan"))
        #expect(built.contains("SecItemSQLite") && built.contains("SecItem"), "the plan: \(built.sorted())")
        #expect(built.isDisjoint(with: Self.optionalTargets), "built anyway: \(built.intersection(Self.optionalTargets).sorted())")

        let executable = Self.scratch.appendingPathComponent("debug/MinimalApp").path
        let ldd = try ChildProcess.run("/usr/bin/ldd", [executable])
        try #require(ldd.status == 0, "ldd failed: \(ldd.stderr)")
        let linked = ldd.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        for library in ["libsecret", "libgio", "libglib", "libgobject", "libpq", "libtss2"] {
            #expect(!linked.contains { $0.hasPrefix(library) }, "\(library) is linked:\n\(ldd.stdout)")
        }
        #expect(linked.contains { $0.hasPrefix("libsqlite3") }, "the file backend's SQLite is not linked:\n\(ldd.stdout)")

        let home = temporary + "/home"
        let run = try ChildProcess.run(
            executable, [],
            environment: [
                "HOME": home, "XDG_DATA_HOME": home + "/data", "XDG_CONFIG_HOME": home + "/config",
                "PATH": "/usr/bin:/bin",
            ])
        #expect(run.status == 0, "the minimal app failed: \(run.stdout) \(run.stderr)")
        #expect(run.stdout.contains("ok\n"))
        #expect(run.stdout.contains("backends: file memory\n"), "\(run.stdout)")
    }
}
