import Foundation
import SecItemCore
import SecItemSealedStore

/// Every statement the backend sends, for one schema. `docs/postgresql.md` lists
/// them; nothing else is sent (no extensions, no functions of our own).
package struct SQL {
    let schema: String
    /// `"schema"`: validated, then quoted.
    let q: String

    init(schema: String) throws(SecItemError) {
        let bytes = Array(schema.utf8)
        let valid =
            !bytes.isEmpty && bytes.count <= 63
            && bytes.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }
            && !(bytes[0] >= 0x30 && bytes[0] <= 0x39)
        guard valid else {
            throw SecItemError(
                errSecParam,
                "the PostgreSQL schema name \"\(schema)\" must be letters, digits and _ (not starting with a digit), at most 63 bytes")
        }
        self.schema = schema
        q = "\"\(schema)\""
    }

    /// The columns of a row, as ``PostgreSQLSession/Row`` reads them.
    static let columns = ["seq"] + EncodedRow.columns
    static let rowColumns = columns.map { "i.\($0)" }.joined(separator: ", ")

    /// The schema's tables, created in one transaction under ``advisoryLock``.
    var createSchema: String {
        func type(_ kind: SealedTables.Kind) -> String {
            switch kind {
            case .bytes: "BYTEA"
            case .text: "TEXT"
            case .integer: "BIGINT"
            }
        }
        return """
            CREATE SCHEMA IF NOT EXISTS \(q);
            CREATE TABLE IF NOT EXISTS \(q).meta(
                key TEXT PRIMARY KEY,
                number BIGINT,
                bytes BYTEA,
                text TEXT);
            CREATE TABLE IF NOT EXISTS \(q).items\(
                SealedTables.render(SealedTables.itemLines(), first: ["seq BIGSERIAL PRIMARY KEY"], types: type))
            CREATE TABLE IF NOT EXISTS \(q).state\(
                SealedTables.render(
                    SealedTables.stateLines, first: ["id INTEGER PRIMARY KEY CHECK (id = 1)", "epoch BIGINT NOT NULL"], types: type))

            """ + SealedTables.indexes.map { "CREATE INDEX IF NOT EXISTS items_\($0.suffix) ON \(q).items(\($0.column));" }
            .joined(separator: "\n")
    }

    /// The transaction-scoped advisory lock that serializes creation across hosts.
    let advisoryLock = "SELECT pg_advisory_xact_lock($1::bigint)"

    /// The advisory lock's key: a fixed tag and the schema name (FNV-1a, 64 bits).
    var lockKey: Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in Array("secitem-postgresql/".utf8) + Array(schema.utf8) {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return Int64(bitPattern: hash)
    }

    let begin = "BEGIN"
    let commit = "COMMIT"
    var readMeta: String { "SELECT key, number, bytes, text FROM \(q).meta" }
    /// The key epoch, as the state row holds it (a copy of meta's, written in the
    /// same transaction, so that the row a write locks carries it).
    var epoch: String { "SELECT epoch FROM \(q).state WHERE id = 1" }
    var bumpEpoch: String { "UPDATE \(q).meta SET number = number + 1 WHERE key = 'epoch' RETURNING number" }
    var deleteScryptMeta: String { "DELETE FROM \(q).meta WHERE key LIKE 'scrypt\\_%' OR key LIKE 'kek\\_%'" }

    /// Upserts one meta row (`$1` key, then number, bytes, text).
    static let putMetaTemplate =
        "INSERT INTO %@.meta(key, number, bytes, text) VALUES ($1::text, $2::bigint, $3::bytea, $4::text) "
        + "ON CONFLICT (key) DO UPDATE SET number = EXCLUDED.number, bytes = EXCLUDED.bytes, text = EXCLUDED.text"
    var putMeta: String { Self.putMetaTemplate.replacingOccurrences(of: "%@", with: q) }

    /// What was added to the keychain's tables outside secitem that changes what its
    /// statements do, one description per row (no rows: the tables are as created).
    ///
    /// The file backend refuses any schema but its own (`KeychainSchema`); here the
    /// things that make a write report success and change nothing or something else,
    /// or hide rows from reads: rules (`DO INSTEAD NOTHING`), triggers that are not
    /// PostgreSQL's own (`BEFORE UPDATE … RETURN NULL`, or one rewriting `NEW`),
    /// row-level security and its policies, a table replaced by a view or a
    /// partitioned or foreign table, and tables inheriting from ours (their rows
    /// would be read and changed with ours). Run at open, by `verify()`, and by a write
    /// when ``lockState``'s quick check flags the tables.
    var alterations: String {
        let tables = "ARRAY[" + ["meta", "items", "state"].map { "'\(q).\($0)'::regclass::oid" }.joined(separator: ", ") + "]"
        return """
            SELECT 'rule ' || r.rulename || ' on ' || r.ev_class::regclass FROM pg_catalog.pg_rewrite r WHERE r.ev_class = ANY(\(tables)) \
            UNION ALL SELECT 'trigger ' || t.tgname || ' on ' || t.tgrelid::regclass FROM pg_catalog.pg_trigger t \
            WHERE t.tgrelid = ANY(\(tables)) AND NOT t.tgisinternal \
            UNION ALL SELECT 'row-level security policy ' || p.polname || ' on ' || p.polrelid::regclass FROM pg_catalog.pg_policy p \
            WHERE p.polrelid = ANY(\(tables)) \
            UNION ALL SELECT 'row-level security turned on for ' || c.oid::regclass FROM pg_catalog.pg_class c \
            WHERE c.oid = ANY(\(tables)) AND (c.relrowsecurity OR c.relforcerowsecurity) \
            UNION ALL SELECT 'not a plain table: ' || c.oid::regclass FROM pg_catalog.pg_class c WHERE c.oid = ANY(\(tables)) AND c.relkind <> 'r' \
            UNION ALL SELECT 'table ' || i.inhrelid::regclass || ' inherits from ' || i.inhparent::regclass FROM pg_catalog.pg_inherits i \
            WHERE i.inhparent = ANY(\(tables)) \
            ORDER BY 1
            """
    }

    /// Whether any of the three tables may have been altered (1) or certainly was not (0):
    /// `pg_class`'s flags for rules, triggers, row-level security and inheritance children,
    /// and its kind. One index lookup (by schema and name) in the statement a write runs
    /// anyway, about 2 µs of server time; ``alterations`` then says what, if anything. The
    /// rule and trigger flags stay set after a `DROP` until the table is next vacuumed,
    /// so until then each write pays that second query, which finds nothing.
    var mayBeAltered: String {
        "(EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.relnamespace = '\(q)'::regnamespace "
            + "AND c.relname IN ('meta', 'items', 'state') AND (c.relhasrules OR c.relhastriggers OR c.relrowsecurity "
            + "OR c.relforcerowsecurity OR c.relhassubclass OR c.relkind <> 'r')))::int"
    }

    /// The row-set commitment, locked for the write transaction, with the key epoch
    /// (every write takes it: writes are serialized, and a rotation excludes them),
    /// and ``mayBeAltered`` (column 5), checked in the same round trip.
    var lockState: String {
        "SELECT generation, count, cells, mac, epoch, \(mayBeAltered) FROM \(q).state WHERE id = 1 FOR UPDATE"
    }
    /// The committed state and the key epoch, unlocked (the rollback check's).
    var readState: String { "SELECT generation, count, cells, mac, epoch FROM \(q).state WHERE id = 1" }
    var writeState: String {
        "UPDATE \(q).state SET generation = $1::bigint, count = $2::bigint, cells = $3::bytea, mac = $4::bytea, "
            + "epoch = $5::bigint WHERE id = 1"
    }
    var createState: String {
        "INSERT INTO \(q).state(id, generation, count, cells, mac, epoch) "
            + "VALUES (1, $1::bigint, $2::bigint, $3::bytea, $4::bytea, $5::bigint)"
    }

    /// `$1` uuid, `$2` class, `$3` pk, the HMAC columns, the version, the box.
    private static let rowParameters =
        ["$1::bytea", "$2::text", "$3::bytea"] + (0..<IndexedColumns.columns.count).map { "$\($0 + 4)::bytea" }
        + ["$\(4 + IndexedColumns.columns.count)::bigint", "$\(5 + IndexedColumns.columns.count)::bytea"]
    private static let writtenColumns = EncodedRow.columns

    var insert: String {
        "INSERT INTO \(q).items(\(Self.writtenColumns.joined(separator: ", "))) VALUES (\(Self.rowParameters.joined(separator: ", ")))"
    }

    /// Rewrites a row in place (keeping its `seq`, so its position in the order).
    var rewrite: String {
        let sets = zip(Self.writtenColumns, Self.rowParameters).map { "\($0) = \($1)" }
        return "UPDATE \(q).items SET \(sets.joined(separator: ", ")) WHERE seq = $\(Self.rowParameters.count + 1)::bigint"
    }

    /// Moves rows' primary-key HMACs out of the way (to their UUIDs) before a
    /// rewrite swaps keys among them (``SealedRowStorage/clearPrimaryKeys(at:)``).
    var clearPrimaryKeys: String { "UPDATE \(q).items SET pk = uuid WHERE seq = ANY($1::bigint[])" }

    var delete: String { "DELETE FROM \(q).items WHERE seq = ANY($1::bigint[])" }

    /// A write in one statement (one round trip, one commit, in autocommit): the state
    /// row moves from the state the session knows (`generation`, `mac` and `epoch`: the
    /// last three of the seven parameters after `change`'s `n`) to the new commitment
    /// (the first four), and `change`, a statement on the items that joins the moved
    /// state row `s`, runs only when it did (``PostgreSQLSession/writeInOneStatement(_:_:next:rows:what:)``).
    /// When another write came first, the epoch changed, or ``mayBeAltered`` flags the
    /// tables, nothing happens (column 0 is 0) and the caller runs a write transaction.
    /// Column 1 is the rows `change` touched; the last expression fails the whole
    /// statement (division by zero) unless that is `expected` when the state moved, so
    /// the state never moves without its rows.
    private func inOneStatement(_ change: String, after n: Int, expected: String) -> String {
        let p = (1...7).map { "$\(n + $0)" }
        return "WITH s AS (UPDATE \(q).state SET generation = \(p[0])::bigint, count = \(p[1])::bigint, "
            + "cells = \(p[2])::bytea, mac = \(p[3])::bytea WHERE id = 1 AND generation = \(p[4])::bigint "
            + "AND mac = \(p[5])::bytea AND epoch = \(p[6])::bigint AND NOT \(mayBeAltered)::boolean RETURNING id), "
            + "c AS (\(change) RETURNING 1) "
            + "SELECT (SELECT count(*) FROM s), (SELECT count(*) FROM c), 1 / (CASE WHEN (SELECT count(*) FROM c) = "
            + "\(expected) * (SELECT count(*) FROM s) THEN 1 ELSE 0 END)"
    }

    /// ``insert`` in one statement with the commitment (``inOneStatement(_:after:expected:)``).
    var insertInOneStatement: String {
        inOneStatement(
            "INSERT INTO \(q).items(\(Self.writtenColumns.joined(separator: ", "))) SELECT \(Self.rowParameters.joined(separator: ", ")) FROM s",
            after: Self.rowParameters.count, expected: "1")
    }

    /// ``rewrite`` in one statement with the commitment.
    var rewriteInOneStatement: String {
        let sets = zip(Self.writtenColumns, Self.rowParameters).map { "\($0) = \($1)" }
        let seq = Self.rowParameters.count + 1
        return inOneStatement(
            "UPDATE \(q).items SET \(sets.joined(separator: ", ")) FROM s WHERE items.seq = $\(seq)::bigint",
            after: seq, expected: "1")
    }

    /// ``delete`` in one statement with the commitment (`$2`: how many rows `$1` lists).
    var deleteInOneStatement: String {
        inOneStatement(
            "DELETE FROM \(q).items USING s WHERE items.seq = ANY($1::bigint[])", after: 2, expected: "$2::bigint")
    }

    /// Rows matching `conditions` after the key epoch (column 0) and the committed
    /// generation (column 1), and the commitment's MAC last (for the rollback check),
    /// in one statement (one snapshot); one row of NULLs after them when nothing matches.
    /// `single`: the conditions name one value of a unique column (`pk`, `uuid`), so at most
    /// one row matches and it needs no sort (the server's sort node cost a lookup ~15% of
    /// its server time, issue 24).
    package func selectWithEpoch(_ conditions: [String], single: Bool = false) -> String {
        let on = conditions.isEmpty ? "TRUE" : conditions.joined(separator: " AND ")
        return "SELECT st.epoch, st.generation, \(Self.rowColumns), st.mac FROM \(q).state st "
            + "LEFT JOIN \(q).items i ON \(on) WHERE st.id = 1" + (single ? "" : " ORDER BY i.seq")
    }

    /// Rows matching `conditions`, inside a write transaction (which holds the
    /// state row, so no other writer runs); columns 0 and 1 are unused.
    package func selectInWrite(_ conditions: [String], single: Bool = false) -> String {
        let whereClause = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        return "SELECT 0::bigint, 0::bigint, \(Self.rowColumns) FROM \(q).items i\(whereClause)" + (single ? "" : " ORDER BY i.seq")
    }
}
