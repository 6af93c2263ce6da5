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
}
