import Foundation
import SecItemCore
import SecItemSealedStore

/// The `state` row (format 2): generation, row count and commitment cells, sealed
/// by an HMAC under the data key's HMAC key.
enum RowSetState {
    /// - Returns: The MAC written (its first 16 bytes are the digest the rollback check keeps).
    @discardableResult
    static func write(_ commitment: RowSetCommitment, keys: ItemKeys, _ db: Database) throws(SecItemError) -> [UInt8] {
        let mac = try commitment.mac(keys.mac)
        let stmt = try db.statement(
            "INSERT OR REPLACE INTO state(id, generation, count, cells, mac) VALUES (1, ?, ?, ?, ?)")
        stmt.bind(1, commitment.generation)
        stmt.bind(2, commitment.count)
        stmt.bind(3, commitment.cells)
        stmt.bind(4, mac)
        try stmt.run(during: "writing the row-set commitment")
        return mac
    }

    /// Reads and authenticates the state row.
    /// - Returns: The commitment and its MAC.
    /// - Throws: `errSecInvalidKeychain` when it is missing or was altered.
    static func read(_ keys: ItemKeys, _ db: Database) throws(SecItemError) -> (RowSetCommitment, mac: [UInt8]) {
        let stmt = try db.statement("SELECT generation, count, cells, mac FROM state WHERE id = 1")
        defer { stmt.reset() }
        guard try stmt.step(during: "reading the row-set commitment") else {
            throw SecItemError(errSecInvalidKeychain, "the keychain \(db.path) lost its row-set commitment (altered outside secitem)")
        }
        guard let commitment = RowSetCommitment(generation: stmt.int64(0), count: stmt.int64(1), cells: stmt.bytes(2) ?? []),
            let stored = stmt.bytes(3), stored == (try commitment.mac(keys.mac))
        else {
            throw SecItemError(
                errSecInvalidKeychain,
                "the keychain \(db.path) was altered outside secitem: its row-set commitment does not authenticate")
        }
        return (commitment, stored)
    }
}
