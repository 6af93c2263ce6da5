public import Foundation
public import SecItemSecurity

/// Checks an update plan for primary-key collisions, for backends that apply an
/// update item by item (no unique index to lean on).
///
/// - Parameters:
///   - updated: The matched items after `transform`.
///   - ownerOfKey: Returns the id of the stored item holding a primary key, if any.
/// - Throws: `errSecDuplicateItem` when two updated items share a primary key,
///   or one takes the key of a stored item that is not itself being updated.
public func checkUpdateCollisions(
    _ updated: [StoredItem],
    ownerOfKey: (PrimaryKey) throws(SecItemError) -> UUID?
) throws(SecItemError) {
    let updatedIDs = Set(updated.map(\.id))
    var seen = Set<PrimaryKey>()
    for item in updated {
        let key = item.primaryKey
        guard seen.insert(key).inserted else {
            throw SecItemError(errSecDuplicateItem, "the update would give two items the same primary key")
        }
        if let owner = try ownerOfKey(key), !updatedIDs.contains(owner) {
            throw SecItemError(errSecDuplicateItem, "the update would collide with an existing item")
        }
    }
}
