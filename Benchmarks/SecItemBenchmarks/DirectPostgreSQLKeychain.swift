import Foundation
import SecItemCore
import SecItemPostgreSQL
import SecItemSealedStore

/// The benchmark's baseline: the same work as ``PostgreSQLBackend`` done directly
/// on libpq with the same statements and the same crypto (the shared row codec),
/// and nothing else: no query dictionary, no SecItem matcher, no lock, no retry,
/// no reconnect. What the backend costs beyond this is the SecItem layers.
///
/// Items are generic passwords of one service and access group, found by their
/// whole primary key, as the benchmark workload's are.
///
/// It lives here, not in the backend's module: it reaches the backend's session, SQL and
/// result types through their `package` access, which package users never see.
final class DirectPostgreSQLKeychain {
    private let session: PostgreSQLSession
    private let service: String
    private let group: String

    /// Opens (creating when missing) the keychain `configuration` names.
    init(configuration: PostgreSQLBackend.Configuration, service: String, accessGroup: String) throws(SecItemError) {
        session = try PostgreSQLSession.open(configuration)
        self.service = service
        group = accessGroup
    }

    private var sql: SQL { session.sql }

    private func exec(_ statement: String, _ values: [PQValue] = []) throws(SecItemError) -> PQResult {
        try session.exec(statement, values)
    }

    private func primaryKeyMAC(_ account: String) throws(SecItemError) -> [UInt8] {
        try session.codec.primaryKeyMAC(
            PrimaryKey(
                itemClass: .genericPassword,
                attributes: [
                    SecConstant.kSecAttrAccount: .string(account), SecConstant.kSecAttrService: .string(service),
                    SecConstant.kSecAttrAccessGroup: .string(group), SecConstant.kSecAttrSynchronizable: .number(0),
                ]))
    }

    private func item(account: String, label: String, data: [UInt8]) -> StoredItem {
        let now = Date()
        return StoredItem(
            itemClass: .genericPassword, id: UUID(),
            attributes: [
                SecConstant.kSecAttrAccount: .string(account), SecConstant.kSecAttrService: .string(service),
                SecConstant.kSecAttrLabel: .string(label), SecConstant.kSecAttrAccessGroup: .string(group),
                SecConstant.kSecAttrSynchronizable: .number(0),
                SecConstant.kSecAttrAccessible: .string(SecConstant.kSecAttrAccessibleWhenUnlocked),
                SecConstant.kSecAttrCreationDate: .date(now), SecConstant.kSecAttrModificationDate: .date(now),
            ],
            data: Data(data))
    }

    /// BEGIN, lock the state row, INSERT, update the commitment, COMMIT.
    func add(account: String, label: String, data: [UInt8]) throws(SecItemError) {
        try session.write { () throws(SecItemError) in try session.insertItem(item(account: account, label: label, data: data)) }
    }

    /// One SELECT by primary-key HMAC (with the epoch and generation), one GCM open.
    /// - Returns: The data's length, or -1 when not found.
    func lookup(account: String) throws(SecItemError) -> Int {
        let conditions = ["i.class = $1::text", "i.pk IN ($2::bytea)"]
        let r = try exec(sql.selectWithEpoch(conditions), [.text(ItemClass.genericPassword.rawValue), .bytes(try primaryKeyMAC(account))])
        guard r.rows >= 1, let generation = r.int64(0, 1) else { return -1 }
        let row = PostgreSQLSession.Row(result: r, row: 0)
        guard row.seq != nil, case .item(let item, _) = try session.codec.decode(row, maxVersion: generation) else {
            return -1
        }
        return item.data?.count ?? 0
    }

    private func locked(_ account: String) throws(SecItemError) -> PostgreSQLSession.Match? {
        let conditions = ["i.class = $1::text", "i.pk IN ($2::bytea)"]
        let r = try exec(sql.selectInWrite(conditions), [.text(ItemClass.genericPassword.rawValue), .bytes(try primaryKeyMAC(account))])
        guard r.rows >= 1 else { return nil }
        let row = PostgreSQLSession.Row(result: r, row: 0)
        guard let seq = row.seq, case .item(let item, _) = try session.codec.decode(row, maxVersion: session.commitment.generation)
        else { return nil }
        return PostgreSQLSession.Match(seq: seq, item: item, primaryKeyMAC: r.array(0, 5) ?? [], element: row.element)
    }

    /// BEGIN, lock the state row, SELECT, open, seal, UPDATE, update the commitment, COMMIT.
    func update(account: String, data: [UInt8]) throws(SecItemError) -> Int {
        try session.write { () throws(SecItemError) -> Int in
            guard let match = try locked(account) else { return 0 }
            var changed = match.item
            changed.data = Data(data)
            changed.attributes[SecConstant.kSecAttrModificationDate] = .date(Date())
            try session.replaceItems([match], with: [changed])
            return 1
        }
    }

    /// BEGIN, lock the state row, SELECT, open, DELETE, update the commitment, COMMIT.
    func delete(account: String) throws(SecItemError) -> Int {
        try session.write { () throws(SecItemError) -> Int in
            guard let match = try locked(account) else { return 0 }
            try session.removeItems([match])
            return 1
        }
    }

    /// One SELECT by label HMAC, one GCM open per row.
    func count(label: String) throws(SecItemError) -> Int {
        let mac = try session.codec.attributeMAC(.genericPassword, SecConstant.kSecAttrLabel, .string(label))
        let agrp = try session.codec.accessGroupMAC(.genericPassword, group)
        let r = try exec(
            sql.selectWithEpoch([
                "i.class = $1::text", "i.\(IndexedColumns.accessGroup) IN ($2::bytea)",
                "i.\(IndexedColumns.column(for: SecConstant.kSecAttrLabel)) = $3::bytea",
            ]),
            [.text(ItemClass.genericPassword.rawValue), .bytes(agrp), .bytes(mac)])
        guard r.rows >= 1, let generation = r.int64(0, 1) else { return 0 }
        var n = 0
        for i in 0..<r.rows {
            let row = PostgreSQLSession.Row(result: r, row: i)
            guard row.seq != nil else { continue }
            if case .item = try session.codec.decode(row, maxVersion: generation) { n += 1 }
        }
        return n
    }

    /// Adds `count` items in one transaction (to fill a large store quickly).
    func fill(_ count: Int, _ make: (Int) -> (account: String, label: String, data: [UInt8])) throws(SecItemError) {
        try session.write { () throws(SecItemError) in
            for i in 0..<count {
                let (account, label, data) = make(i)
                try session.insertItem(item(account: account, label: label, data: data))
            }
        }
    }
}
