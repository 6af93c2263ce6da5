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
}
