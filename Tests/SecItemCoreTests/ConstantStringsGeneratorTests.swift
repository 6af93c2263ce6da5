import Foundation
import Testing

/// `ConstantStrings.swift` (the `SecConstant` twins) is generated from `Constants.swift`
/// by `scripts/constant-strings`: the committed file must be what the script writes, and
/// say what the public `CFString` constants say (each checked once, here).
@Suite("ConstantStrings.swift is generated")
struct ConstantStringsGeneratorTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs `scripts/constant-strings --check` in `root`; its exit status and what it said.
    private func check(in root: URL) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = root.appendingPathComponent("scripts/constant-strings")
        process.arguments = ["--check"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    @Test("the committed ConstantStrings.swift is what scripts/constant-strings writes from Constants.swift")
    func committedFileIsGenerated() throws {
        let (status, output) = try check(in: Self.root)
        #expect(status == 0, "\(output)")
    }

    @Test("every kSec constant Constants.swift declares has its twin, with the same value")
    func everyConstantHasItsTwin() throws {
        // Read here with patterns of its own, looser than the script's (any `public let
        // kSec…: CFString`, whatever precedes it): a declaration the script's pattern
        // skips has no twin, and `--check` alone would not notice.
        func pairs(_ file: String, _ pattern: String) throws -> [String: String] {
            let text = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
            let regex = try NSRegularExpression(pattern: pattern)
            var out: [String: String] = [:]
            for m in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                out[String(text[Range(m.range(at: 1), in: text)!])] = String(text[Range(m.range(at: 2), in: text)!])
            }
            return out
        }
        let constants = try pairs("Sources/SecItemSecurity/Constants.swift", #"public let (kSec\w+): CFString = "([^"]*)""#)
        let twins = try pairs("Sources/SecItemSecurity/ConstantStrings.swift", #"package static let (kSec\w+) = "([^"]*)""#)
        #expect(constants.count > 120)
        let differing = Set(constants.keys).union(twins.keys).filter { constants[$0] != twins[$0] }.sorted()
        #expect(differing.isEmpty, "a constant and its twin differ, or one is missing: \(differing)")
    }

    @Test("a twin edited by hand, or a constant added without regenerating, fails the check")
    func handEditFails() throws {
        let fm = FileManager.default
        let scratch = fm.temporaryDirectory.appendingPathComponent("constant-strings-\(UUID().uuidString)")
        defer { try? fm.removeItem(at: scratch) }
        let source = try #require(
            try fm.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Sources").path).first {
                fm.fileExists(atPath: Self.root.appendingPathComponent("Sources/\($0)/Constants.swift").path)
            })
        for path in ["scripts/constant-strings", "Sources/\(source)/Constants.swift", "Sources/\(source)/ConstantStrings.swift"] {
            let to = scratch.appendingPathComponent(path)
            try fm.createDirectory(at: to.deletingLastPathComponent(), withIntermediateDirectories: true)
            try fm.copyItem(at: Self.root.appendingPathComponent(path), to: to)
        }
        #expect(try check(in: scratch).status == 0)
        let twins = scratch.appendingPathComponent("Sources/\(source)/ConstantStrings.swift")
        let original = try String(contentsOf: twins, encoding: .utf8)
        try original.replacingOccurrences(of: #"kSecClassGenericPassword = "genp""#, with: #"kSecClassGenericPassword = "gen""#)
            .write(to: twins, atomically: true, encoding: .utf8)
        let edited = try check(in: scratch)
        #expect(edited.status != 0)
        #expect(edited.output.contains("ConstantStrings.swift differs"), "\(edited.output)")
        try original.write(to: twins, atomically: true, encoding: .utf8)
        let constants = scratch.appendingPathComponent("Sources/\(source)/Constants.swift")
        try (try String(contentsOf: constants, encoding: .utf8) + "nonisolated(unsafe) public let kSecExample: CFString = \"ex\"\n")
            .write(to: constants, atomically: true, encoding: .utf8)
        #expect(try check(in: scratch).status != 0)
    }
}
