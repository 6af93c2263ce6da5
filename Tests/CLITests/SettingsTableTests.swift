import Foundation
import SecItem
import SecItemCore
import SecItemTestSupport
import Testing

/// The settings tables of the docs, `--help` and `secitem-config(5)` come from the
/// settings' declarations: a committed table that differs from what the declarations
/// give fails here (`scripts/settings-tables` rewrites them).
@Suite("Settings tables are generated from the declarations")
struct SettingsTableTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Every `<!-- settings: SCOPE -->` … `<!-- /settings -->` block of the docs, with its file.
    static func blocks() throws -> [(file: String, scope: String, table: String)] {
        var found: [(String, String, String)] = []
        let docs = root.appendingPathComponent("docs")
        for name in try FileManager.default.contentsOfDirectory(atPath: docs.path).sorted() where name.hasSuffix(".md") {
            let text = try String(contentsOf: docs.appendingPathComponent(name), encoding: .utf8)
            var rest = Substring(text)
            while let open = rest.range(of: "<!-- settings: ") {
                guard let end = rest[open.upperBound...].range(of: " -->"),
                    let close = rest[end.upperBound...].range(of: "<!-- /settings -->")
                else { break }
                let scope = String(rest[open.upperBound..<end.lowerBound])
                let table = String(rest[end.upperBound..<close.lowerBound]).trimmingCharacters(in: .newlines)
                found.append(("docs/" + name, scope, table))
                rest = rest[close.upperBound...]
            }
        }
        return found
    }

    @Test("each committed table is what `secitem _generate settings SCOPE` prints")
    func committedTables() throws {
        let blocks = try Self.blocks()
        #expect(blocks.contains { $0.file == "docs/settings.md" && $0.scope == "all" }, "docs/settings.md holds every setting")
        let cli = try CLI()
        defer { cli.remove() }
        for block in blocks {
            let result = try cli.run(["_generate", "settings"] + (block.scope == "all" ? [] : [block.scope]))
            #expect(result.status == 0, "\(block.file): scope \(block.scope): \(result.stderr)")
            #expect(
                block.table == result.stdout.trimmingCharacters(in: .newlines),
                "\(block.file)'s table for \(block.scope) differs from the declarations: run scripts/settings-tables")
        }
    }

    @Test("--help lists every declared variable, and secitem-config(5) every config-file key with its help")
    func helpAndManual() throws {
        let cli = try CLI()
        defer { cli.remove() }
        let help = try cli.run(["--help"]).stdout
        let page = try cli.run(["_generate", "man", "secitem-config"]).stdout
        let table = try cli.run(["_generate", "settings"]).stdout
        for variable in ["SECITEM_BACKEND", "SECITEM_FILE", "SECITEM_KEY_SOURCE", "SECITEM_PASSPHRASE", "SECITEM_CONFIG"] {
            #expect(help.contains(variable), "--help lacks \(variable)")
            #expect(table.contains("`\(variable)`"), "the table lacks \(variable)")
        }
        for key in ["backend", "file", "key-file", "passphrase-file", "key-source", "access-groups", "application-id"] {
            #expect(page.contains(".BR \(key.replacingOccurrences(of: "-", with: "\\-")) "), "secitem-config(5) lacks \(key)")
        }
        #expect(!page.contains(".BR passphrase \""), "a secret is not a config-file key")
    }

    @Test("diagnose shows each setting given, where it came from, and a secret as (set)")
    func diagnoseShowsOrigins() throws {
        let cli = try CLI()
        defer { cli.remove() }
        let config = cli.root.appendingPathComponent("config/secitem")
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        try Data("access-groups = com.example.shared\n".utf8).write(to: config.appendingPathComponent("config"))
        let result = try cli.run(
            ["diagnose"], environment: ["SECITEM_BACKEND": "memory", "SECITEM_PASSPHRASE": "never-shown-passphrase"])
        #expect(result.stdout.contains("backend = memory (SECITEM_BACKEND)"), "\(result.stdout)")
        #expect(result.stdout.contains("access-groups = com.example.shared (the config file \(config.path)/config)"))
        #expect(result.stdout.contains("passphrase = (set) (SECITEM_PASSPHRASE)"))
        #expect(!result.stdout.contains("never-shown-passphrase"))
    }
}
