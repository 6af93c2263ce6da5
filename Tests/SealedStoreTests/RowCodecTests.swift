import Foundation
import SecItemConformance
import SecItemCore
import SecItemSealedStore
import Testing

@Suite struct RowCodecTests {
    private func item(_ random: inout SeededRandom, _ i: Int) -> StoredItem {
        let secret = (0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
        return StoredItem(
            itemClass: .genericPassword, id: UUID(),
            attributes: [
                SecConstant.kSecAttrService: .string("svc-\(i)"), SecConstant.kSecAttrAccount: .string("acct-\(random.next() % 1000)"),
                SecConstant.kSecAttrAccessGroup: .string("group"),
            ],
            data: Data(secret))
    }

    @Test("rows round-trip under one data key; a flipped byte or another key is damage, never a crash")
    func roundTrip() throws {
        var random = SeededRandom()
        print("RowCodecTests.roundTrip: \(random.replayHint)")
        let codec = RowCodec(keys: try ItemKeys.generate(format: Int(KeychainHeader.formatVersion)))
        let other = RowCodec(keys: try ItemKeys.generate(format: Int(KeychainHeader.formatVersion)))
        for i in 0..<20 {
            let original = item(&random, i)
            let encoded = try codec.encode(original, version: 3)
            guard case .item(let decoded, let version) = try codec.decode(StoredRow(encoded), maxVersion: 3) else {
                Issue.record("row \(i) did not decode")
                continue
            }
            #expect(decoded == original)
            #expect(version == 3)
            if case .item = try other.decode(StoredRow(encoded), maxVersion: 3) { Issue.record("another key opened row \(i)") }
            var tampered = encoded
            let at = Int.random(in: 0..<tampered.sealed.count, using: &random)
            tampered.sealed[at] ^= 0x01
            if case .item = try codec.decode(StoredRow(tampered), maxVersion: 3) { Issue.record("a flipped byte passed in row \(i)") }
            // A row from the future (a version past the committed generation) is refused.
            if case .item = try codec.decode(StoredRow(encoded), maxVersion: 2) { Issue.record("row \(i) from the future passed") }
        }
    }

    @Test("the row-set commitment lists what was removed and what was added behind its back")
    func commitment() throws {
        var random = SeededRandom()
        print("RowCodecTests.commitment: \(random.replayHint)")
        let codec = RowCodec(keys: try ItemKeys.generate(format: Int(KeychainHeader.formatVersion)))
        let mac = codec.keys.mac
        let rows = try (0..<30).map { i in try codec.encode(item(&random, i), version: Int64(i + 1)) }
        var committed = RowSetCommitment(generation: 30)
        for row in rows { try committed.insert(row.element, mac) }
        #expect(committed.count == 30)
        // The same rows, one deleted and one rolled back to an older version.
        var actual = RowSetCommitment(generation: 30)
        let deleted = Int.random(in: 0..<15, using: &random)
        let rolledBack = Int.random(in: 15..<30, using: &random)
        for (i, row) in rows.enumerated() where i != deleted {
            var element = row
            if i == rolledBack { element.version -= 1 }
            try actual.insert(element.element, mac)
        }
        let difference = try #require(try committed.difference(actual, mac))
        #expect(Set(difference.onlyHere.map(\.version)) == [Int64(deleted + 1), Int64(rolledBack + 1)])
        #expect(difference.onlyThere.map(\.version) == [Int64(rolledBack)])
        // Removing what was inserted leaves the empty commitment.
        for row in rows { try committed.remove(row.element, mac) }
        #expect(committed == RowSetCommitment(generation: 30))
    }
}
