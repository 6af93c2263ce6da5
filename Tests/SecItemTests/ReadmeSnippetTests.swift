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
        // C targets' public headers, which other C modules' headers include by name
        // (CSecItemLibsecret's header includes CSecItemGLib.h), as SwiftPM passes them.
        for folder in ["Sources", "Backends"] {
            let top = root.appendingPathComponent(folder)
            for case let url as URL in FileManager.default.enumerator(at: top, includingPropertiesForKeys: nil) ?? .init()
            where url.lastPathComponent == "include" && url.deletingLastPathComponent().lastPathComponent.hasPrefix("CSecItem") {
                flags += ["-Xcc", "-I\(url.path)"]
            }
        }
        let pkgConfig = try ChildProcess.run(
            try Executables.which("pkg-config"), ["--cflags-only-I", "libsecret-1", "libpq", "sqlite3", "libcrypto"])
        guard pkgConfig.status == 0 else { throw TestSetupError("pkg-config failed: \(pkgConfig.stderr)") }
        for flag in pkgConfig.stdout.split(whereSeparator: \.isWhitespace) { flags += ["-Xcc", String(flag)] }
        return flags
    }

    /// The Markdown files whose Swift snippets are compiled: the README and the DocC articles.
    static func documents() throws -> [(name: String, text: String)] {
        var names = ["README.md"]
        let catalog = root.appendingPathComponent("docs/SecItem.docc")
        for name in (try? FileManager.default.contentsOfDirectory(atPath: catalog.path))?.sorted() ?? [] where name.hasSuffix(".md") {
            names.append("docs/SecItem.docc/\(name)")
        }
        return try names.map { ($0, try String(contentsOf: root.appendingPathComponent($0), encoding: .utf8)) }
    }

    /// A manifest (`Package.swift`) rather than program code.
    static func isManifest(_ code: String) -> Bool { code.hasPrefix("// swift-tools-version") }

    /// The snippet as a file outside `main.swift`: its imports, then its statements in a function.
    /// A snippet of declarations only (a `@Test` function) is already such a file.
    static func wrapped(_ code: String) -> String {
        if code.contains("@Test") { return code }
        let lines = code.split(separator: "\n", omittingEmptySubsequences: false)
        let imports = lines.filter { $0.hasPrefix("import ") }
        let body = lines.filter { !$0.hasPrefix("import ") }
        return imports.joined(separator: "\n") + "\n\nfunc readmeSnippet() throws {\n" + body.joined(separator: "\n") + "\n}\n"
    }

    @Test("README.md has Swift snippets, and the extractor finds them")
    func extraction() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let blocks = Self.swiftBlocks(readme)
        #expect(blocks.count >= 3)
        #expect(
            blocks.allSatisfy { $0.code.hasPrefix("import ") || Self.isManifest($0.code) },
            "every snippet says what it imports, or is a whole Package.swift")
        #expect(Self.swiftBlocks("a\n```swift\nlet x = 1\n```\n```sh\nls\n```\n").map(\.code) == ["let x = 1\n"])
        #expect(Self.wrapped("import A\nlet x = 1\n") == "import A\n\nfunc readmeSnippet() throws {\nlet x = 1\n\n}\n")
    }

    @Test(
        "every Swift snippet in README.md and the DocC articles compiles with exactly the imports it shows, as main.swift and inside a function, without a warning"
    )
    func snippetsCompile() throws {
        let flags = try Self.compilerFlags()
        let swiftc = try Executables.which("swiftc")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secitem-readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var compiled = 0
        for (name, text) in try Self.documents() {
            for (index, block) in Self.swiftBlocks(text).enumerated() where !Self.isManifest(block.code) {
                #expect(block.code.hasPrefix("import "), "\(name) line \(block.line): the snippet does not say what it imports")
                let place = directory.appendingPathComponent("\(compiled)")
                try FileManager.default.createDirectory(at: place, withIntermediateDirectories: true)
                let main = place.appendingPathComponent("main.swift")
                try Data(block.code.utf8).write(to: main)
                let library = place.appendingPathComponent("Snippet.swift")
                try Data(Self.wrapped(block.code).utf8).write(to: library)
                for (file, extra) in [(main, [String]()), (library, ["-parse-as-library"])] {
                    let result = try ChildProcess.run(swiftc, ["-typecheck"] + extra + flags + [file.path], timeout: .seconds(300))
                    let output = result.stderr + result.stdout
                    // Inside the function, a value the snippet shows but does not use is a local
                    // that is never read: an artefact of the wrapping, not of the snippet.
                    let warnings = output.split(separator: "\n").filter {
                        $0.contains("warning:") && !(file == library && ($0.contains("never used") || $0.contains("never read")))
                    }
                    #expect(
                        result.status == 0 && warnings.isEmpty,
                        "\(name) line \(block.line) (snippet \(index + 1)), as \(file.lastPathComponent): \(output)")
                }
                compiled += 1
            }
        }
        #expect(compiled >= 8)
    }

    @Test("README.md's Package.swift lines resolve: the path form's package: is the checkout folder's name, and a wrong name fails as newcomers saw")
    func manifestsResolve() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let manifests = Self.swiftBlocks(readme).map(\.code).filter(Self.isManifest)
        #expect(manifests.count == 2)
        guard let url = manifests.first(where: { $0.contains(".package(url:") }),
            let path = manifests.first(where: { $0.contains(".package(path:") })
        else {
            Issue.record("README.md lacks the URL or the path form")
            return
        }
        #expect(url.contains("from: \""), "the URL form gives a version")
        let swift = try Executables.which("swift")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secitem-manifest-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        // A checkout named as the README names it, next to the app: a copy of the manifest and
        // links to the source folders (resolving reads them, never builds).
        let checkout = directory.appendingPathComponent("swift-secitem-linux")
        try FileManager.default.createDirectory(at: checkout, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: Self.root.appendingPathComponent("Package.swift"), to: checkout.appendingPathComponent("Package.swift"))
        for folder in ["Sources", "Backends", "Examples", "Benchmarks", "Tests"] {
            try FileManager.default.createSymbolicLink(
                at: checkout.appendingPathComponent(folder), withDestinationURL: Self.root.appendingPathComponent(folder))
        }
        func resolve(_ manifest: String) throws -> ProcessOutput {
            let app = directory.appendingPathComponent("app-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: app.appendingPathComponent("Sources/App"), withIntermediateDirectories: true)
            try Data(manifest.replacingOccurrences(of: "../swift-secitem-linux", with: checkout.path).utf8)
                .write(to: app.appendingPathComponent("Package.swift"))
            try Data("print(1)\n".utf8).write(to: app.appendingPathComponent("Sources/App/main.swift"))
            return try ChildProcess.run(swift, ["package", "--package-path", app.path, "show-dependencies"], timeout: .seconds(300))
        }
        let good = try resolve(path)
        #expect(good.status == 0, "the README's path form: \(good.stderr)")
        let wrong = try resolve(path.replacingOccurrences(of: "package: \"swift-secitem-linux\"", with: "package: \"secitem-linux\""))
        #expect(wrong.status != 0 && wrong.stderr.contains("unknown package"), "\(wrong.stderr)")
    }
}
