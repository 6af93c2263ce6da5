import Foundation
import SecItemCore
import Testing

/// The primary key's bytes are a stored format (the file backend keeps a keyed hash
/// of them): these pin it byte for byte, and check that every way of building a key
/// agrees.
@Suite("PrimaryKey")
struct PrimaryKeyTests {
    private func ascii(_ s: String) -> [UInt8] { Array(s.utf8) }

    /// Name, 4-byte big-endian length, canonical value: one attribute of a key.
    private func field(_ name: String, _ value: [UInt8]) -> [UInt8] {
        let n = UInt32(value.count)
        return ascii(name) + [UInt8(n >> 24), UInt8((n >> 16) & 0xFF), UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF)] + value
    }

    @Test("canonical bytes: a tag, then the value")
    func canonicalBytes() {
        #expect(AttributeValue.string("ab").canonicalBytes(kind: .blob) == [0x62] + ascii("ab"))
        #expect(AttributeValue.string("ab").canonicalBytes(kind: .string) == [0x62] + ascii("ab"))
        #expect(AttributeValue.string("ab").canonicalBytes(kind: .number) == [0x73] + ascii("ab"))
        #expect(AttributeValue.string("").canonicalBytes(kind: .blob) == [0x62])
        #expect(AttributeValue.data(Data([1, 2])).canonicalBytes(kind: .number) == [0x62, 1, 2])
        #expect(AttributeValue.number(80).canonicalBytes(kind: .blob) == [0x62] + ascii("80"))
        #expect(AttributeValue.number(-1205).canonicalBytes(kind: .number) == [0x6E] + ascii("-1205"))
        #expect(AttributeValue.number(0).canonicalBytes(kind: .number) == [0x6E] + ascii("0"))
        #expect(AttributeValue.number(.min).canonicalBytes(kind: .number) == [0x6E] + ascii(String(Int64.min)))
        let date = Date(timeIntervalSinceReferenceDate: 12.5)
        let bits = date.timeIntervalSinceReferenceDate.bitPattern
        #expect(
            AttributeValue.date(date).canonicalBytes(kind: .date)
                == [0x64] + (0..<8).map { UInt8(truncatingIfNeeded: bits >> (56 - 8 * $0)) })
        var appended: [UInt8] = [9]
        AttributeValue.string("é").appendCanonicalBytes(kind: .blob, to: &appended)
        #expect(appended == [9, 0x62] + ascii("é"))
    }

    @Test("bytes: class name, then each key attribute in canonical order; absent ones count as defaults")
    func bytesFormat() {
        let key = PrimaryKey(
            itemClass: .genericPassword,
            attributes: ["acct": .string("me"), "agrp": .string("g"), "sync": .number(1), "labl": .string("x")])
        let expected =
            ascii("genp") + field("acct", [0x62] + ascii("me")) + field("svce", [0x62])
            + field("agrp", [0x62] + ascii("g")) + field("sync", [0x6E] + ascii("1"))
        #expect(key.bytes == expected)
    }

    @Test("candidates: one per group (sorted) and sync state, equal to the stored items' keys")
    func candidates() {
        let attributes: [String: AttributeValue] = [
            "srvr": .string("example.com"), "ptcl": .string("htps"), "port": .number(443), "acct": .data(Data("a".utf8)),
            "sdmn": .string(""), "atyp": .string(""), "path": .string("/"), "labl": .string("not in the key"),
        ]
        let query = ItemQuery(
            itemClass: .internetPassword, attributes: attributes, accessGroups: ["b", "a"], synchronizable: .any)
        var seen: [PrimaryKey] = []
        #expect(query.forEachPrimaryKeyCandidate { seen.append($0) })
        var expected: [PrimaryKey] = []
        for group in ["a", "b"] {
            for sync: Int64 in [0, 1] {
                expected.append(
                    PrimaryKey(
                        itemClass: .internetPassword,
                        attributes: attributes.merging(["agrp": .string(group), "sync": .number(sync)]) { $1 }))
            }
        }
        #expect(seen == expected)
        #expect(query.primaryKeyCandidates == expected)

        var missing = attributes
        missing["path"] = nil
        var called = false
        let unpinned = ItemQuery(itemClass: .internetPassword, attributes: missing, accessGroups: ["a"])
        #expect(!unpinned.forEachPrimaryKeyCandidate { _ in called = true })
        #expect(!called)
        #expect(unpinned.primaryKeyCandidates == nil)
    }
}
