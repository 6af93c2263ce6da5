import Foundation
import SecItemTestSupport
import Testing

/// Every ```swift block of README.md compiles, as a user's file with exactly the
/// imports it shows, against the modules this package just built: the README
/// cannot drift from the API again.
@Suite("README snippets")
struct ReadmeSnippetTests {
    /// The package root (this file is Tests/SecItemTests/ReadmeSnippetTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The ```swift blocks of a Markdown text, with the line each starts on.
    static func swiftBlocks(_ markdown: String) -> [(line: Int, code: String)] {
        var blocks: [(Int, String)] = []
        var current: [String]?
        var start = 0
        for (number, line) in markdown.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if current == nil, line.trimmingCharacters(in: .whitespaces) == "```swift" {
                current = []
                start = number + 2
            } else if current != nil, line.trimmingCharacters(in: .whitespaces) == "```" {
                blocks.append((start, current!.joined(separator: "\n") + "\n"))
                current = nil
            } else if current != nil {
                current!.append(String(line))
            }
        }
        return blocks
    }

    /// `swiftc -typecheck` flags that find this build's modules: the Swift modules,
    /// the C modules' maps (system libraries and generated ones) and their headers.
    static func compilerFlags() throws -> [String] {
        let debug = URL(fileURLWithPath: try Executables.built("secitem")).deletingLastPathComponent()
        var flags = ["-swift-version", "6", "-I", debug.appendingPathComponent("Modules").path]
        var maps: [String] = []
        let backends = root.appendingPathComponent("Backends")
        for case let url as URL in FileManager.default.enumerator(at: backends, includingPropertiesForKeys: nil) ?? .init()
        where url.lastPathComponent == "module.modulemap" {
            maps.append(url.path)
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: debug.path)) ?? [] where name.hasSuffix(".build") {
            let map = debug.appendingPathComponent(name).appendingPathComponent("module.modulemap").path
            if FileManager.default.fileExists(atPath: map) { maps.append(map) }
        }
        for map in maps { flags += ["-Xcc", "-fmodule-map-file=\(map)"] }
        let pkgConfig = try ChildProcess.run(
            try Executables.which("pkg-config"), ["--cflags-only-I", "libsecret-1", "libpq", "sqlite3", "libcrypto"])
        guard pkgConfig.status == 0 else { throw TestSetupError("pkg-config failed: \(pkgConfig.stderr)") }
        for flag in pkgConfig.stdout.split(whereSeparator: \.isWhitespace) { flags += ["-Xcc", String(flag)] }
        return flags
    }

    @Test("README.md has Swift snippets, and the extractor finds them")
    func extraction() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let blocks = Self.swiftBlocks(readme)
        #expect(blocks.count >= 3)
        #expect(blocks.allSatisfy { $0.code.hasPrefix("import ") }, "every snippet says what it imports")
        #expect(Self.swiftBlocks("a\n```swift\nlet x = 1\n```\n```sh\nls\n```\n").map(\.code) == ["let x = 1\n"])
    }

    @Test("every Swift snippet in README.md compiles with exactly the imports it shows")
    func snippetsCompile() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let flags = try Self.compilerFlags()
        let swiftc = try Executables.which("swiftc")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secitem-readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for (index, block) in Self.swiftBlocks(readme).enumerated() {
            let file = directory.appendingPathComponent("snippet\(index + 1).swift")
            try Data(block.code.utf8).write(to: file)
            let result = try ChildProcess.run(swiftc, ["-typecheck"] + flags + [file.path], timeout: .seconds(300))
            #expect(
                result.status == 0,
                "README.md line \(block.line): the snippet does not compile:\n\(result.stderr)\(result.stdout)")
        }
    }
}
