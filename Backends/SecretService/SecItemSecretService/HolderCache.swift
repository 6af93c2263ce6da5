/// Where the holder of a primary key was last seen: `primary-key` hash → item
/// path. A hint only, never trusted: a lookup through it checks the item's
/// attributes in the same round trip as its secret (another process may have
/// changed or deleted it). Bounded by ``limit``: when full, it starts over.
struct HolderCache {
    private(set) var paths: [String: String] = [:]
    static let limit = 4_096

    /// The path where the holder of `hash` was last seen.
    func path(for hash: String) -> String? { paths[hash] }

    /// Records (or with `nil`, forgets) where the holder of a primary key is.
    mutating func remember(_ hash: String, at path: String?) {
        if path != nil, paths[hash] == nil, paths.count >= Self.limit {
            paths.removeAll(keepingCapacity: true)
        }
        paths[hash] = path
    }
}
