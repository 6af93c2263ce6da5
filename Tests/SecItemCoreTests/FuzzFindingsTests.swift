import Foundation
import SecItemCore
import SecItemMemory
import Testing

/// What the fuzz targets found (docs/fuzzing.md, "Findings"), each as the smallest
/// call that showed it; the input that found it is kept in the target's corpus.
@Suite("Fuzz findings")
struct FuzzFindingsTests {
    /// query-dictionary: a backend query for kSecClassIdentity, which has no primary
    /// key, trapped in `PrimaryKey.encode` (precondition) on the memory backend's
    /// exact-key lookup instead of finding nothing.
    @Test("a query for a class without a primary key finds nothing instead of trapping")
    func classWithoutPrimaryKey() throws {
        let backend = MemoryBackend()
        for groups in [["g"], ["g", "h"]] {
            let query = ItemQuery(itemClass: .identity, accessGroups: Set(groups), synchronizable: .any)
            var candidates = 0
            #expect(query.forEachPrimaryKeyCandidate { _ in candidates += 1 } == false)
            #expect(candidates == 0)
            #expect(try backend.fetch(matching: query, limit: nil).isEmpty)
            #expect(try backend.delete(matching: query) == 0)
        }
    }
}
