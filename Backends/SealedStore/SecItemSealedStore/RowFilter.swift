import Foundation
package import SecItemCore

/// What a query narrows a sealed store's search to: equality on the row's columns
/// (the class, and keyed HMACs of the primary key, access group, sync state and the
/// indexed attributes), planned once for every store. A store renders it in its own
/// SQL (or scans with it) and still filters every row it opens with the core's matcher
/// (``byPrimaryKey``: ``ItemQuery/matchesBeyondPrimaryKey(_:)``, else ``ItemQuery/matches(_:)``).
package struct RowFilter {
    /// A column value.
    package enum Value: Equatable {
        case bytes([UInt8])
        case text(String)
    }

    /// The column holds one of `values` (one value: equality).
    package struct Condition: Equatable {
        package var column: String
        package var values: [Value]
    }

    /// All must hold; none: every row.
    package private(set) var conditions: [Condition] = []
    /// Narrowed by the primary-key HMAC (the `pk` condition): only the query's attributes
    /// beyond the key need comparing.
    package private(set) var byPrimaryKey = false

    /// The most primary keys a filter lists; a query pinning more is narrowed by its other columns.
    package static let maxPrimaryKeys = 64
    /// The most access groups a filter lists; a query searching more is not narrowed by group.
    package static let maxAccessGroups = 16

    /// The filter for `query` under `codec`'s keys, or `nil` when no row can match.
    package init?(_ query: ItemQuery, _ codec: RowCodec) throws(SecItemError) {
        if let id = query.persistentReferenceID {
            conditions.append(Condition(column: "uuid", values: [.bytes(withUnsafeBytes(of: id.uuid) { Array($0) })]))
        }
        guard let itemClass = query.itemClass else { return }
        conditions.append(Condition(column: "class", values: [.text(itemClass.rawValue)]))
        if query.accessGroups.isEmpty && !query.coversEveryAccessGroup { return nil }
        if let candidates = query.primaryKeyCandidates, !candidates.isEmpty, candidates.count <= Self.maxPrimaryKeys {
            var keys: [Value] = []
            for candidate in candidates { keys.append(.bytes(try codec.primaryKeyMAC(candidate))) }
            conditions.append(Condition(column: "pk", values: keys))
            byPrimaryKey = true
            return
        }
        if !query.coversEveryAccessGroup && query.accessGroups.count <= Self.maxAccessGroups {
            var groups: [Value] = []
            for group in query.accessGroups.sorted() { groups.append(.bytes(try codec.accessGroupMAC(itemClass, group))) }
            conditions.append(Condition(column: IndexedColumns.accessGroup, values: groups))
        }
        switch query.synchronizable {
        case .no, .yes:
            let mac = try codec.syncMAC(itemClass, query.synchronizable == .yes)
            conditions.append(Condition(column: IndexedColumns.synchronizable, values: [.bytes(mac)]))
        case .any:
            break
        }
        if !query.caseInsensitive {
            for name in IndexedColumns.attributes {
                guard let value = query.attributes[name] else { continue }
                let mac = try codec.attributeMAC(itemClass, name, value)
                conditions.append(Condition(column: IndexedColumns.column(for: name), values: [.bytes(mac)]))
            }
        }
    }

    /// The primary-key HMACs listed (``byPrimaryKey``), in the query's candidate order.
    package var primaryKeys: [[UInt8]] {
        guard byPrimaryKey, let pk = conditions.last(where: { $0.column == "pk" }) else { return [] }
        return pk.values.compactMap { if case .bytes(let b) = $0 { b } else { nil } }
    }

    /// Whether a row's columns meet every condition (a store that scans instead of querying).
    package func admits(column: (String) -> Value?) -> Bool {
        conditions.allSatisfy { condition in column(condition.column).map(condition.values.contains) ?? false }
    }
}
