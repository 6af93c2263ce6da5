// The global Apple-style functions. Each resolves the current client (a task-local
// override, else the process default) and calls it; semantics live in SecItemCore.
// They are @discardableResult because Apple's are imported C functions, whose
// unused results Swift does not warn about; ported code often ignores them.

/// Adds one item to the keychain.
///
/// - Parameters:
///   - attributes: The item: `kSecClass`, its attributes, `kSecValueData`, and
///     optionally `kSecReturn…` keys.
///   - result: Receives what the return keys ask for (one object, never an array); may be `nil`.
/// - Returns: `errSecSuccess`, `errSecDuplicateItem` when an item with the same
///   primary key exists, `errSecParam` for bad input, or a backend status.
@discardableResult
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    withCurrentClient { $0.add(attributes, result) }
}

/// Finds items matching a query.
///
/// - Parameters:
///   - query: `kSecClass`, attribute constraints, `kSecMatchLimit`, `kSecReturn…` keys.
///   - result: Receives the result shaped as the return keys and limit ask; left
///     untouched on failure; may be `nil`.
/// - Returns: `errSecSuccess`, `errSecItemNotFound`, `errSecParam`, or a backend status.
@discardableResult
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    withCurrentClient { client in
        let status = client.copyMatching(query, result)
        if status == errSecItemNotFound { ForeignGroupHint.check(query, client) }
        return status
    }
}

/// Updates every item matching a query, atomically.
///
/// - Parameters:
///   - query: Which items (`kSecMatch…`, `kSecReturn…` and `kSecValueData` are ignored).
///   - attributesToUpdate: The new attribute values and/or `kSecValueData`.
/// - Returns: `errSecSuccess`, `errSecItemNotFound`, `errSecDuplicateItem` (nothing changed), or another status.
@discardableResult
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    withCurrentClient { $0.update(query, attributesToUpdate) }
}

/// Deletes every item matching a query.
///
/// - Returns: `errSecSuccess`, `errSecItemNotFound`, or another status.
@discardableResult
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    withCurrentClient { $0.delete(query) }
}

private func withCurrentClient(_ body: (SecItemClient) -> OSStatus) -> OSStatus {
    do {
        return body(try SecItemSystem.currentClient())
    } catch {
        return error.status
    }
}
