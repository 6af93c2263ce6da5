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

    @Test("a data-alone read keeps exactly the access check's attributes, whatever the previous row's protection")
    func dataAlone() throws {
        var random = SeededRandom()
        print("RowCodecTests.dataAlone: \(random.replayHint)")
        let codec = RowCodec(keys: try ItemKeys.generate(format: Int(KeychainHeader.formatVersion)))
        let protections: [[String: AttributeValue]] = [
            [SecConstant.kSecAttrAccessible: .string(SecConstant.kSecAttrAccessibleWhenUnlocked)],
            [SecConstant.kSecAttrAccessible: .string(SecConstant.kSecAttrAccessibleAfterFirstUnlock)],
            [SecConstant.kSecAttrAccessible: .string(SecConstant.kSecAttrAccessibleAfterFirstUnlock),
             SecConstant.kSecAttrAccessControl: .number(1)],
            [SecConstant.kSecAttrAccessible: .string(SecConstant.kSecAttrAccessibleAfterFirstUnlock),
             SecConstant.kSecAttrAccessControl: .number(3)],
            [:],
            [SecConstant.kSecAttrIsExtractable: .number(0), SecConstant.kSecAttrAccessible: .string("dk")],
        ]
        // Rows in a random order of protections, so the remembered attributes of one row
        // meet rows with the same, another, more and fewer kept attributes.
        for i in 0..<60 {
            var original = item(&random, i)
            let protection = protections[Int(random.next() % UInt64(protections.count))]
            original.attributes.merge(protection) { $1 }
            if random.next() % 4 == 0 { original.data = nil }
            let encoded = try codec.encode(original, version: 3)
            guard let (data, id, attributes) = try codec.decodeData(StoredRow(encoded), maxVersion: 3) else {
                Issue.record("row \(i) did not decode for its data")
                continue
            }
            #expect(data == original.data, "row \(i): the data")
            #expect(id == original.id, "row \(i): the identity")
            #expect(attributes == protection, "row \(i): the kept attributes")
        }
        // Malformed plaintexts (cut short at every length) decode to nothing, never crash.
        var original = item(&random, 0)
        original.attributes[SecConstant.kSecAttrAccessControl] = .number(7)
        let plain = ItemPlaintext.encode(original)
        let kept = ItemPlaintext.KeptAttributes(ItemProjection.accessAttributes)
        for length in 0..<plain.count {
            let cut = Array(plain[0..<length])
            #expect(cut.withUnsafeBufferPointer { ItemPlaintext.decodeData($0, keeping: kept) } == nil, "cut at \(length)")
        }
        let whole = plain.withUnsafeBufferPointer { ItemPlaintext.decodeData($0, keeping: kept) }
        #expect(whole?.data == original.data)
        #expect(whole?.attributes == [SecConstant.kSecAttrAccessControl: .number(7)])
    }
}
