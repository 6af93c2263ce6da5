// Issue 15, point 6, and issue 22, item 3: `import SecItem` brings Apple's names and
// `SecItem…` names only, so a file can import it next to a module with its own `Keychain`
// or `ItemClass` (NameClashTests compiles such a file). SecItem re-exports module SecItemAPI
// whole, which re-exports SecItemSecurity; nothing lists the names by hand.
//
// These tests read what the compiler says the modules export: swift-symbolgraph-extract loads
// the built `SecItem` module (with the flags SwiftPM compiled it with, from the build's
// llbuild manifest) and follows its `@_exported` imports, so a generic name added to any
// module `import SecItem` re-exports fails here, whatever file declares it.
import Foundation
import Testing

@Suite("What import SecItem exports")
struct SurfaceNamesTests {
    /// Security's and Core Foundation's spelling (`kSec…`, `errSec…`, `Sec…`, `CF…`, `kCF…`,
    /// and MacTypes' `OSStatus`, `noErr`); `SecItem…` names are `Sec…` names.
    static func isSecurityStyle(_ name: String) -> Bool {
        name.range(of: #"^(k?Sec|errSec|k?CF)[A-Z]"#, options: .regularExpression) != nil
            || ["OSStatus", "noErr"].contains(name)
    }

    @Test("every top-level name import SecItem gives is Apple's or SecItem-prefixed")
    func onlySecurityNames() throws {
        let names = try SymbolGraph.topLevelNames(importing: "SecItem")
        // The surface is there (its three layers: SecItem's functions, SecItemAPI's types,
        // SecItemSecurity's constants), so an empty or partial graph cannot pass.
        for expected in ["SecItemAdd", "SecItemClient", "SecItemBackend", "SecItemConfiguration", "kSecClass", "errSecParam",
                         "OSStatus", "CFDictionary", "SecItemError", "SecAccessControl", "SecKey"] {
            #expect(names.contains(expected), "import SecItem no longer gives \(expected)")
        }
        let generic = names.filter { !Self.isSecurityStyle($0) }.sorted()
        #expect(generic.isEmpty, "import SecItem exports names that are neither Apple's nor SecItem-prefixed: \(generic)")
    }

    @Test("the check sees generic names where they are: import SecItemCore, the backend writer's kit, gives them")
    func kitHasGenericNames() throws {
        let names = try SymbolGraph.topLevelNames(importing: "SecItemCore")
        for generic in ["StoredItem", "ItemQuery", "AccessGroups", "AttributeValue", "BackendAvailability"] {
            #expect(names.contains(generic), "SecItemCore re-exports \(generic)")
        }
        #expect(names.contains("SecItemClient"))
    }
}

/// The top-level public names a module gives its importers, from its symbol graph.
enum SymbolGraph {
    struct SetupError: Error, CustomStringConvertible { let description: String }

    /// The directory SwiftPM built the tests in (`.build/<triple>/<config>`): the one above
    /// this test program holding `Modules/SecItem.swiftmodule`.
    static func buildDirectory() throws -> URL {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        while dir.pathComponents.count > 1 {
            if FileManager.default.fileExists(atPath: dir.appendingPathComponent("Modules/SecItem.swiftmodule").path) {
                return dir
            }
            dir.deleteLastPathComponent()
        }
        throw SetupError(description: "no Modules/SecItem.swiftmodule above \(CommandLine.arguments[0])")
    }

    /// The search paths and C module maps SwiftPM compiled `module` with (the `-I`, `-Xcc`,
    /// `-target` and `-module-cache-path` arguments of its command in the llbuild manifest,
    /// `.build/<config>.yaml`), which loading the module needs again.
    static func compilerFlags(for module: String, buildDirectory: URL) throws -> [String] {
        let config = buildDirectory.lastPathComponent
        var dir = buildDirectory
        var manifest: String?
        while dir.pathComponents.count > 1, manifest == nil {
            dir.deleteLastPathComponent()
            let path = dir.appendingPathComponent("\(config).yaml").path
            if FileManager.default.fileExists(atPath: path) { manifest = path }
        }
        guard let manifest else { throw SetupError(description: "no \(config).yaml above \(buildDirectory.path)") }
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
        guard let key = text.range(of: #"\n  "C\.\#(module)-[^"\n]*\.module":"#, options: .regularExpression),
            let argsLine = text[key.upperBound...].split(separator: "\n").first(where: {
                $0.trimmingCharacters(in: .whitespaces).hasPrefix("args: [")
            }),
            let open = argsLine.firstIndex(of: "[")
        else { throw SetupError(description: "\(manifest) has no compile command for \(module)") }
        let args = try JSONDecoder().decode([String].self, from: Data(argsLine[open...].utf8))
        var flags: [String] = []
        var index = 0
        while index < args.count {
            let arg = args[index]
            if ["-I", "-Xcc", "-target", "-module-cache-path"].contains(arg), index + 1 < args.count {
                flags += [arg, args[index + 1]]
                index += 2
                continue
            }
            if arg.hasPrefix("-I") { flags.append(arg) }  // pkg-config's -I/usr/include/… for the system libraries
            index += 1
        }
        return flags
    }

    /// Runs swift-symbolgraph-extract on `module`, allowing every module of the build to be
    /// followed through `@_exported import` (the tool follows only those the module re-exports),
    /// and returns the names of the top-level public symbols (functions without their labels).
    static func topLevelNames(importing module: String) throws -> Set<String> {
        let build = try buildDirectory()
        let modules = try FileManager.default.contentsOfDirectory(atPath: build.appendingPathComponent("Modules").path)
            .filter { $0.hasSuffix(".swiftmodule") }.map { String($0.dropLast(".swiftmodule".count)) }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("secitem-symbols-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: output) }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift-symbolgraph-extract", "-module-name", module, "-output-dir", output.path,
                             "-minimum-access-level", "public",
                             "-experimental-allowed-reexported-modules=\(modules.joined(separator: ","))"]
            + (try compilerFlags(for: module, buildDirectory: build))
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw SetupError(description: "swift-symbolgraph-extract \(module) failed: \(String(decoding: message, as: UTF8.self))")
        }

        struct Graph: Decodable {
            struct Symbol: Decodable { let pathComponents: [String] }
            let symbols: [Symbol]
        }
        // `Module.symbols.json` holds the module's own symbols and those of the modules it
        // re-exports; `Module@Other.symbols.json` holds extensions of other modules' types
        // (members, not names an importer can write unqualified).
        let data = try Data(contentsOf: output.appendingPathComponent("\(module).symbols.json"))
        let graph = try JSONDecoder().decode(Graph.self, from: data)
        return Set(graph.symbols.filter { $0.pathComponents.count == 1 }.map {
            String($0.pathComponents[0].prefix { $0 != "(" })
        })
    }
}
