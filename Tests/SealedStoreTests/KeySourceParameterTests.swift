import Foundation
import SecItemCore
import SecItemSealedStore
import Testing

/// A key source's own header rows (`kek_*`): kept through the meta values, bound into
/// the data key's wrapping, and a protection this program does not know refused by name.
@Suite struct KeySourceParameterTests {
    private func wrapped(_ parameters: [String: KeychainHeader.MetaValue], kek: SecretBytes, dataKey: SecretBytes) throws -> KeychainHeader {
        var header = KeychainHeader(protection: .key, wrappedDataKey: [], epoch: 1)
        header.protect(with: KeyEncryptionKey(kek: kek, protection: .key, parameters: parameters))
        try header.wrap(dataKey, kek: kek)
        return header
    }

    private func stored(_ header: KeychainHeader) throws -> KeychainHeader {
        try KeychainHeader.parse(Dictionary(uniqueKeysWithValues: header.metaValues.map { ($0.key, $0.value) }), source: "test")
    }

    @Test("parameters round-trip through the meta values and unwrap")
    func roundTrip() throws {
        let kek = try SecretBytes(random: 32)
        let dataKey = try SecretBytes(random: 32)
        let header = try wrapped(["kek_store": .text("0123abcd"), "kek_portal_salt": .bytes([1, 2, 3])], kek: kek, dataKey: dataKey)
        let again = try stored(header)
        #expect(again.parameters["kek_store"] == .text("0123abcd"))
        #expect(again.parameters["kek_portal_salt"] == .bytes([1, 2, 3]))
        #expect(try again.unwrap(kek: kek)?.equals(dataKey) == true)
        // Without parameters the associated data is what it always was: older files still open.
        let plain = try wrapped([:], kek: kek, dataKey: dataKey)
        #expect(try stored(plain).unwrap(kek: kek)?.equals(dataKey) == true)
    }

    @Test("a changed or removed parameter no longer unwraps (they are bound into the wrapping)")
    func bound() throws {
        let kek = try SecretBytes(random: 32)
        let dataKey = try SecretBytes(random: 32)
        let header = try wrapped(["kek_store": .text("0123abcd")], kek: kek, dataKey: dataKey)
        var changed = try stored(header)
        changed.parameters["kek_store"] = .text("0123abce")
        #expect(try changed.unwrap(kek: kek) == nil)
        var removed = try stored(header)
        removed.parameters = [:]
        #expect(try removed.unwrap(kek: kek) == nil)
        var retyped = try stored(header)
        retyped.parameters["kek_store"] = .bytes(Array("0123abcd".utf8))
        #expect(try retyped.unwrap(kek: kek) == nil)
    }

    @Test("a protection no registered source has is errSecNotAvailable naming it, not 'not a keychain'")
    func unknownProtection() throws {
        let kek = try SecretBytes(random: 32)
        var values = Dictionary(
            uniqueKeysWithValues: try wrapped([:], kek: kek, dataKey: try SecretBytes(random: 32)).metaValues.map { ($0.key, $0.value) })
        values["kek"] = .text("no-such-source")
        do {
            _ = try KeychainHeader.parse(values, source: "test.db")
            Issue.record("a header with an unknown protection parsed")
        } catch {
            #expect(error.status == errSecNotAvailable)
            #expect(error.detail?.contains("\"no-such-source\"") == true)
        }
    }
}
