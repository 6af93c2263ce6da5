import Testing
import Foundation

/// Runs the example programs kept in the repository as a user would.
enum ExamplePrograms {
    /// The directory holding the package's built executables (next to the test bundle).
    static var productsDirectory: URL {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.pathComponents.count > 1 && !FileManager.default.fileExists(atPath: url.appendingPathComponent("KeychainHelperExample").path) {
            url.deleteLastPathComponent()
        }
        return url
    }

    /// Runs `name` with extra environment; returns exit status and standard output.
    static func run(_ name: String, environment: [String: String]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = productsDirectory.appendingPathComponent(name)
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { $1 }
        process.environment = env
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
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
