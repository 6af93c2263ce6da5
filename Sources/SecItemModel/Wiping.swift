package import Foundation
import SecItemSecurity

extension StoredItem {
    /// Zeroes this item's data in place, for code that decrypted the item and is
    /// about to drop it (a key rotation, a verify, an export).
    ///
    /// Best effort, as far as Swift allows: the bytes are zeroed where this value
    /// keeps them when no other copy shares its buffer; if one does, Swift copies
    /// first and only the copy is zeroed, and copies made earlier (by `Data`, by a
    /// dictionary, by the caller) are out of reach.
    package mutating func wipeData() {
        guard data != nil else { return }
        data!.withUnsafeMutableBytes { bytes in
            if let base = bytes.baseAddress, bytes.count > 0 { explicit_bzero(base, bytes.count) }
        }
    }
}

extension Array where Element == StoredItem {
    /// ``StoredItem/wipeData()`` for every item.
    package mutating func wipeData() {
        for index in indices { self[index].wipeData() }
    }
}

/// Zeroes `data` in place (best effort, as ``StoredItem/wipeData()``).
package func wipeData(_ data: inout Data) {
    data.withUnsafeMutableBytes { bytes in
        if let base = bytes.baseAddress, bytes.count > 0 { explicit_bzero(base, bytes.count) }
    }
}
