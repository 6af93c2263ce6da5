public import Foundation

extension SQLiteBackend {
    /// A row that cannot be returned, as ``SQLiteBackend/verify()`` reports it.
    public struct DamagedRow: Sendable, Hashable, CustomStringConvertible {
        /// The row's position in the file (SQLite rowid).
        public var row: Int64
        /// The item's UUID as the row claims it, when readable.
        public var id: UUID?
        /// The row's class column.
        public var itemClass: String
        /// Why the row is damaged.
        public var reason: String

        public var description: String {
            "row \(row) (\(itemClass), id \(id?.uuidString ?? "unreadable")): \(reason)"
        }
    }

    /// A difference between the rows in the file and the row set the file's
    /// commitment holds (format 2): what someone who wrote the file without the key
    /// did to it.
    public struct RowSetDifference: Sendable, Hashable, CustomStringConvertible {
        public enum Kind: String, Sendable, Hashable {
            /// A committed row is not in the file: deleted outside secitem.
            case missing
            /// The file holds an older version of a committed row: restored from an earlier copy.
            case older
            /// The file holds another box of a committed row at the same or a newer
            /// version than committed (the commitment itself was rolled back, or the
            /// box was swapped for another).
            case replaced
            /// A row the commitment does not know: copied in from another file or a backup.
            case unknown
            /// Too many rows differ to list them one by one.
            case unlisted
        }

        public var kind: Kind
        /// The item's UUID, when known.
        public var id: UUID?
        /// The row's position in the file, when it is in the file.
        public var row: Int64?
        /// The row's version in the file, when it is in the file.
        public var fileVersion: Int64?
        /// The version the commitment holds, when it holds the row.
        public var committedVersion: Int64?

        public init(
            kind: Kind, id: UUID? = nil, row: Int64? = nil, fileVersion: Int64? = nil, committedVersion: Int64? = nil
        ) {
            self.kind = kind
            self.id = id
            self.row = row
            self.fileVersion = fileVersion
            self.committedVersion = committedVersion
        }

        public var description: String {
            let item = "item \(id?.uuidString ?? "?")"
            let at = row.map { "row \($0) " } ?? ""
            switch kind {
            case .missing:
                return "\(item) (version \(committedVersion ?? 0)) is committed but missing: deleted outside secitem"
            case .older:
                return "\(at)\(item) is version \(fileVersion ?? 0), older than the committed \(committedVersion ?? 0): "
                    + "restored from an earlier copy"
            case .replaced:
                return "\(at)\(item) is version \(fileVersion ?? 0) but the commitment holds version "
                    + "\(committedVersion ?? 0) with another box: replaced outside secitem"
            case .unknown:
                return "\(at)\(item) (version \(fileVersion ?? 0)) is not in the commitment: "
                    + "added outside secitem (copied from another file or a backup)"
            case .unlisted:
                return "the rows differ from the commitment in more places than can be listed: altered outside secitem"
            }
        }
    }

    /// What ``SQLiteBackend/verify()`` found.
    public struct VerificationReport: Sendable, Hashable {
        /// The file's format version (1 until its first write upgrades it).
        public var format: Int
        /// Rows that cannot be returned.
        public var damaged: [DamagedRow]
        /// Format 2: differences between the rows and the committed row set.
        public var rowSet: [RowSetDifference] = []
        /// Format 2: live rows minus committed rows, when they differ.
        public var rowCountDifference: Int?
        /// Format 2: `<generation>:<32 hex digits>`, a value that changes with every
        /// write. Kept elsewhere, it lets `secitem verify --expect-commitment` detect
        /// a whole-file rollback to an older consistent copy. Empty for format 1.
        public var commitment = ""
        /// The rollback evidence's finding: the file is older than (or diverges from) a
        /// state this host saw (docs/file-format.md, "Rollback evidence"); `nil` when not.
        public var rollback: String?

        public init(format: Int, damaged: [DamagedRow]) {
            self.format = format
            self.damaged = damaged
        }

        /// Every row intact and, in format 2, exactly the committed row set.
        public var isIntact: Bool { damaged.isEmpty && rowSet.isEmpty && rowCountDifference == nil && rollback == nil }

        /// One line per problem, without contents (empty when intact).
        public var problems: [String] {
            var out = (rollback.map { [$0] } ?? []) + damaged.map(\.description) + rowSet.map(\.description)
            if let difference = rowCountDifference {
                out.append(
                    "the file holds \(abs(difference)) \(difference > 0 ? "more" : "fewer") rows than committed")
            }
            return out
        }
    }
}
