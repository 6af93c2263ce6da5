import Testing
import Foundation
import SecItemTestSupport

/// Runs the example programs kept in the repository as a user would.
enum ExamplePrograms {
    /// Runs `name` with extra environment; returns exit status and standard output.
    static func run(_ name: String, environment: [String: String], arguments: [String] = []) throws -> (Int32, String) {
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { $1 }
        let output = try ChildProcess.run(try Executables.built(name), arguments, environment: env, timeout: .seconds(120))
        return (output.status, output.stdout)
    }
}

@Suite("Example programs")
struct ExampleProgramTests {
    @Test("the iOS-style KeychainHelper example runs correctly on the memory backend")
    func keychainHelperOnMemory() throws {
        let (status, output) = try ExamplePrograms.run("KeychainHelperExample", environment: ["SECITEM_BACKEND": "memory"])
        #expect(status == 0, "output:\n\(output)")
        #expect(output.contains("all steps passed"))
        #expect(!output.contains("FAIL"))
    }
}

@Suite("Swift-native example")
struct SwiftNativeExampleTests {
    @Test("the README's Swift-native example runs on the memory backend")
    func swiftNativeOnMemory() throws {
        let (status, output) = try ExamplePrograms.run("SwiftNativeExample", environment: ["SECITEM_BACKEND": "memory"])
        #expect(status == 0, "output:\n\(output)")
        #expect(output.contains("swift-native example passed"))
    }
}

@Suite("Examples on the embedded default store")
struct ExamplesOnFileBackendTests {
    /// A fresh XDG data/config home, so the file backend creates its keychain and key there.
    func freshHome() throws -> (URL, [String: String]) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("secitem-example-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return (dir, [
            "XDG_DATA_HOME": dir.appendingPathComponent("data").path,
            "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path,
            "SECITEM_BACKEND": "", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus",
        ])
    }

    @Test("with nothing configured and no keyring, both examples run on the encrypted file", arguments: [
        ("KeychainHelperExample", "all steps passed"), ("SwiftNativeExample", "swift-native example passed"),
    ])
    func onFile(program: String, success: String) throws {
        let (dir, env) = try freshHome()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (status, output) = try ExamplePrograms.run(program, environment: env)
        #expect(status == 0, "output:\n\(output)")
        #expect(output.contains(success))
        let db = dir.appendingPathComponent("data/secitem/keychain.db").path
        #expect(FileManager.default.fileExists(atPath: db), "the automatic choice created the keychain file")
    }
}

/// The examples on the Secret Service provider of scripts/with-secret-service (gnome-keyring,
/// KWallet or KeePassXC: scripts/test runs this suite on each), in a namespace of their own.
@Suite("Examples on the Secret Service")
struct ExamplesOnSecretServiceTests {
    @Test("both examples run on the Secret Service", arguments: [
        ("KeychainHelperExample", "all steps passed"), ("SwiftNativeExample", "swift-native example passed"),
    ])
    func onSecretService(program: String, success: String) throws {
        try TestService.secretService.require()
        let (status, output) = try ExamplePrograms.run(program, environment: [
            "SECITEM_BACKEND": "secret-service", "SECITEM_SECRET_SERVICE_NAMESPACE": "example-\(UUID().uuidString)",
            "SECITEM_SECRET_SERVICE_TIMEOUT": "20",
        ])
        #expect(status == 0, "output:\n\(output)")
        #expect(output.contains(success))
        #expect(!output.contains("FAIL"))
    }
}

@Suite("Benchmark harness")
struct BenchmarkHarnessTests {
    @Test("the benchmark runs, warns loudly in a debug build, and writes the documented JSON")
    func quickMemoryRun() throws {
        let json = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: json) }
        let (status, output) = try ExamplePrograms.run(
            "SecItemBenchmarks", environment: [:],
            arguments: ["--quick", "--filter", "memory/1000", "--op", "lookup", "--json", json.path])
        #expect(status == 0, "output:\n\(output)")
        #expect(output.contains("WARNING: a debug build"), "the banner says the numbers are meaningless")
        #expect(output.contains("lookup-hit") && output.contains("dictionary+lock"))
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: json)) as? [String: Any]
        let results = try #require(object?["results"] as? [[String: Any]])
        #expect(object?["machine"] != nil && object?["date"] != nil)
        let hit = try #require(results.first { $0["op"] as? String == "lookup-hit" })
        for key in ["backend", "op", "items", "median_ns", "p99_ns", "baseline", "baseline_median_ns", "ratio"] {
            #expect(hit[key] != nil, "result has \(key)")
        }
        #expect(hit["items"] as? Int == 1000)
        #expect((hit["median_ns"] as? Int ?? 0) > 0)
    }

    /// `add` creates the items `delete` removes: a subject and its baselines run in
    /// rounds, so `--op add` without `delete` added the same accounts again in the second
    /// round (errSecDuplicateItem), and `--op delete` alone timed deleting nothing.
    @Test(
        "any subset of --op runs on the memory and file groups",
        arguments: [
            ("memory/1000", "lookup-hit,add"), ("memory/1000", "add"), ("memory/1000", "delete,lookup-miss"),
            ("file/1000", "add,update"), ("file/1000", "delete"),
        ])
    func operationSubset(group: String, ops: String) throws {
        let (status, output) = try ExamplePrograms.run(
            "SecItemBenchmarks", environment: [:], arguments: ["--quick", "--filter", group, "--op", ops])
        #expect(status == 0, "--filter \(group) --op \(ops):\n\(output)")
        let rows = output.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }
        let all = ["add", "lookup-hit", "lookup-miss", "update", "delete", "query-100-attrs"]
        let selected = ops.split(separator: ",").map(String.init)
        for op in all {
            #expect(rows.contains(op) == selected.contains(op), "\(group) --op \(ops): a row for \(op) only when selected:\n\(output)")
        }
    }

    /// The CLI table in the benchmark's own run (issue 24): `find -w` on the file store
    /// against the C program, timed through spawn_measure, in the table and the JSON;
    /// without a Secret Service its rows are skipped, saying so, and the run still succeeds.
    @Test("the cli group times find -w against its C baseline and says when the Secret Service rows are skipped")
    func cliTable() throws {
        let json = FileManager.default.temporaryDirectory.appendingPathComponent("bench-cli-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: json) }
        let (status, output) = try ExamplePrograms.run(
            "SecItemBenchmarks", environment: ["DBUS_SESSION_BUS_ADDRESS": ""],
            arguments: ["--quick", "--filter", "cli", "--json", json.path])
        #expect(status == 0, "output:\n\(output)")
        #expect(output.contains("cli/secret-service: SKIPPED, NO SECRET SERVICE"), "output:\n\(output)")
        #expect(output.contains("sqlite3+libcrypto C") && output.contains("process floor (/bin/true)"), "output:\n\(output)")
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: json)) as? [String: Any]
        let results = try #require(object?["results"] as? [[String: Any]])
        let file = try #require(results.first { $0["group"] as? String == "cli" && $0["backend"] as? String == "file" })
        let subject = try #require(file["subject"] as? [String: Any])
        #expect((subject["cpu_ms"] as? Double ?? 0) > 0 && (subject["median_ms"] as? Double ?? 0) > 0)
        #expect((subject["peak_rss_mib"] as? Double ?? 0) > 0 && (file["ratio"] as? Double ?? 0) > 0)
        #expect(results.contains { $0["group"] as? String == "cli" && $0["skipped"] != nil && $0["backend"] as? String == "secret-service" })
    }
}

/// The seeds' biometric-save example, ported with only its import changed: it stores the
/// item, and reading it goes through polkit (the mock of scripts/with-system-bus).
@Suite("Biometric-save example")
struct BiometricSaveExampleTests {
    static func requireSystemBus() throws {
        try TestService.systemBus.require()
    }

    /// How many CheckAuthorization calls the mock polkit received for `action`, with the example's prompt.
    static func checks(of action: String) throws -> Int {
        let result = try ChildProcess.run(
            try Executables.which("gdbus"),
            [
                "call", "--system", "--dest", "org.freedesktop.PolicyKit1", "--object-path",
                "/org/freedesktop/PolicyKit1/Authority", "--method", "org.freedesktop.DBus.Mock.GetMethodCalls",
                "CheckAuthorization",
            ])
        try #require(result.status == 0, "gdbus: \(result.stderr)")
        let output = result.stdout
        // Each call's arguments follow its action id; its details carry the prompt.
        return output.components(separatedBy: "'\(action)'").dropFirst()
            .filter { $0.prefix(while: { $0 != "]" }).contains("'polkit.message': 'Confirm it is you to pay with card 4242'") }
            .count
    }

    @Test("it saves the token, and reading it asks polkit with the example's prompt", arguments: ["memory", "file"])
    func readsThroughPolkit(backend: String) throws {
        try Self.requireSystemBus()
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("secitem-biometric-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let base = [
            "SECITEM_BACKEND": backend, "XDG_DATA_HOME": home.appendingPathComponent("data").path,
            "XDG_CONFIG_HOME": home.appendingPathComponent("config").path, "XDG_SESSION_ID": "unlocked",
        ]
        let allow = "org.secitem.test.allow.\(UUID().uuidString.lowercased())"
        var (status, output) = try ExamplePrograms.run(
            "BiometricSaveExample", environment: base.merging(["SECITEM_POLKIT_ACTION": allow]) { $1 })
        #expect(status == 0, "output:\n\(output)")
        #expect(output.contains("saved the payment token"))
        #expect(output.contains("item present without asking: true"))
        #expect(output.contains("read the payment token after authentication"))
        #expect(try Self.checks(of: allow) == 1, "polkit was asked once, with the prompt")

        let outcomes = [("deny", "errSecAuthFailed"), ("dismiss", "errSecUserCanceled"), ("noagent", "errSecInteractionNotAllowed")]
        for (outcome, name) in outcomes {
            let action = "org.secitem.test.\(outcome).\(UUID().uuidString.lowercased())"
            (status, output) = try ExamplePrograms.run(
                "BiometricSaveExample", environment: base.merging(["SECITEM_POLKIT_ACTION": action]) { $1 })
            #expect(status == 2, "\(outcome): \(output)")
            #expect(output.contains(name) && !output.contains("tok_visa"), "\(outcome): \(output)")
            #expect(try Self.checks(of: action) == 1)
        }
        // WhenPasscodeSetThisDeviceOnly: a locked session refuses before anyone is asked.
        let locked = "org.secitem.test.allow.\(UUID().uuidString.lowercased())"
        (status, output) = try ExamplePrograms.run(
            "BiometricSaveExample",
            environment: base.merging(["SECITEM_POLKIT_ACTION": locked, "XDG_SESSION_ID": "locked"]) { $1 })
        #expect(status == 2 && output.contains("errSecInteractionNotAllowed"), "\(output)")
        #expect(try Self.checks(of: locked) == 0)
    }
}
