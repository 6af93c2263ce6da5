/// The tables a sealed store keeps its rows and state in, declared once. The file
/// (SQLite) and PostgreSQL backends render them in their own column types
/// (``render(_:types:)``); `docs/file-format.md` and `docs/postgresql.md` show the result.
///
/// The layout (which columns share a line) is part of the declaration: SQLite keeps a
/// table's `CREATE` statement as written, and the file backend refuses a file whose
/// schema differs from its own by a character (`KeychainSchema`), so the rendering must
/// stay byte for byte what existing files hold (`KeychainSchemaTests` checks it against
/// the committed format-2 fixture).
///
/// Each store keeps its header its own way (SQLite's dynamically typed `meta(key, value)`,
/// PostgreSQL's `meta(key, number, bytes, text)`), and PostgreSQL's state row also holds
/// the key epoch: those stay with the store.
package enum SealedTables {
    /// A column's kind, which each store names in its own type.
    package enum Kind: Sendable {
        case bytes, text, integer
    }

    /// One column: its name, kind and constraints.
    package struct Column: Sendable {
        package var name: String
        package var kind: Kind
        package var notNull: Bool
        package var unique: Bool

        init(_ name: String, _ kind: Kind, notNull: Bool = true, unique: Bool = false) {
            self.name = name
            self.kind = kind
            self.notNull = notNull
            self.unique = unique
        }
    }

    /// The items table's columns after its `seq` (the store's own, the order of rows),
    /// one line each group: ``EncodedRow/columns`` with their kinds.
    /// `withVersion: false` is format 1's table (read only, upgraded on the first write).
    package static func itemLines(withVersion: Bool = true) -> [[Column]] {
        var lines: [[Column]] = [
            [Column("uuid", .bytes, unique: true)],
            [Column("class", .text)],
            [Column("pk", .bytes, unique: true)],
            IndexedColumns.attributes.map { Column(IndexedColumns.column(for: $0), .bytes, notNull: false) },
            [Column(IndexedColumns.accessGroup, .bytes), Column(IndexedColumns.synchronizable, .bytes)],
        ]
        if withVersion { lines.append([Column("version", .integer)]) }
        lines.append([Column("ct", .bytes)])
        return lines
    }

    /// The state row's columns after its `id` (always 1): the commitment and its MAC.
    package static let stateLines: [[Column]] = [
        [Column("generation", .integer)], [Column("count", .integer)], [Column("cells", .bytes)], [Column("mac", .bytes)],
    ]

    /// The indexed attribute columns, each with the suffix of its index's name (`<table>_svce`).
    package static var indexes: [(suffix: String, column: String)] {
        IndexedColumns.attributes.map { ($0, IndexedColumns.column(for: $0)) }
    }

    /// The body of a `CREATE TABLE` after the table's name: `(\n    first,\n    …);`, each
    /// line indented four spaces, `types` naming each kind.
    package static func render(_ lines: [[Column]], first: [String] = [], types: (Kind) -> String) -> String {
        let rendered = first + lines.map { line in
            line.map { column in
                "\(column.name) \(types(column.kind))" + (column.notNull ? " NOT NULL" : "") + (column.unique ? " UNIQUE" : "")
            }.joined(separator: ", ")
        }
        return "(\n" + rendered.map { "    " + $0 }.joined(separator: ",\n") + ");"
    }
}
