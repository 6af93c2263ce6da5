import Foundation
@testable import SecItemSQLite
import Testing

/// The schema check's fast path (KeychainSchema.rendered) must be exactly what SQLite
/// itself stores for each format: if the two ever differ, every open would take the slow
/// path (still correct, but 0.5 ms of SQLite parsing per process).
@Suite("File backend: the schema as SQLite renders it")
struct SchemaRenderingTests {
    @Test("the written-out rows equal an in-memory database's sqlite_schema", arguments: [Int64(1), 2])
    func renderedMatchesSQLite(format: Int64) {
        let expected = format >= 2 ? KeychainSchema.expected2 : KeychainSchema.expected1
        let rendered = KeychainSchema.rendered(format: format)
        #expect(rendered == expected, "missing \(expected.subtracting(rendered)); extra \(rendered.subtracting(expected))")
        #expect(rendered.contains { $0.name.hasPrefix("sqlite_autoindex_") && $0.sql == nil })
    }

    /// The tables are declared once (`SealedTables`, shared with PostgreSQL) and rendered:
    /// the rendering must be, character for character, what files made by earlier
    /// versions hold, or every existing file would be refused as altered.
    @Test("the declared tables render to exactly the schema of files earlier versions made",
          arguments: [("format1-default-group", Int64(1)), ("format2", Int64(2))])
    func renderedMatchesCommittedFiles(fixture: String, format: Int64) throws {
        var source = URL(fileURLWithPath: #filePath)
        for _ in 0..<2 { source.deleteLastPathComponent() }
        source.appendPathComponent("Fixtures/\(fixture)/keychain.db")
        let dir = TempDir()
        let path = dir.file("copy.db")
        try FileManager.default.copyItem(atPath: source.path, toPath: path)
        let db = try Database(path: path)
        defer { db.close() }
        let found = try KeychainSchema.read(db)
        let rendered = KeychainSchema.rendered(format: format)
        #expect(found == rendered, "missing \(rendered.subtracting(found)); extra \(found.subtracting(rendered))")
    }
}
