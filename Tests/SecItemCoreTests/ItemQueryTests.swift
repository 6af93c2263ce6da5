import Foundation
import SecItemCore
import Testing

@Suite("ItemQuery")
struct ItemQueryTests {
    private let key: [String: AttributeValue] = ["svce": .string("svc"), "acct": .string("a")]

    private func query(
        _ attributes: [String: AttributeValue], groups: Set<String> = ["g"], sync: SynchronizableFilter = .no,
        caseInsensitive: Bool = false
    ) -> ItemQuery {
        ItemQuery(
            itemClass: .genericPassword, attributes: attributes, accessGroups: groups, synchronizable: sync,
            caseInsensitive: caseInsensitive)
    }

    @Test("exactPrimaryKey: only when the key is pinned and nothing else is constrained")
    func exactPrimaryKey() {
        let stored = PrimaryKey(itemClass: .genericPassword, attributes: key.merging([
            "agrp": .string("g"), "sync": .number(0), "labl": .string("not in the key"),
        ]) { $1 })
        #expect(query(key).exactPrimaryKey == stored)
        #expect(query(key, sync: .yes).exactPrimaryKey != stored)
        #expect(query(key, sync: .yes).exactPrimaryKey != nil)
        #expect(query(["svce": .string("svc")]).exactPrimaryKey == nil, "account not pinned")
        #expect(query(key.merging(["labl": .string("x")]) { $1 }).exactPrimaryKey == nil, "another constraint")
        #expect(query(key, groups: ["g", "h"]).exactPrimaryKey == nil, "two groups")
        #expect(query(key, sync: .any).exactPrimaryKey == nil, "both sync states")
        #expect(query(key, caseInsensitive: true).exactPrimaryKey == nil, "case-insensitive")
        var byReference = query(key)
        byReference.persistentReferenceID = UUID()
        #expect(byReference.exactPrimaryKey == nil, "by persistent reference")
    }
}
