package import SecItemCore
package import SecItemSealedStore

/// The secret of a rollback mark item in the login keyring (``SecretServiceMarkWitness``):
/// one store's high-water mark, bound to the store and authenticated with a key derived
/// from the store's key-encryption key.
///
/// The mark is not a secret (the state directory's file spells it out); it is kept as
/// the item's secret, not in its attributes, because it must be authenticated and read
/// whole, and attributes are what any program searches by. The layout (big-endian):
///
/// | bytes | field |
/// |---|---|
/// | 4 | `SIRM` |
/// | 1 | version, 1 |
/// | 1 | the digest's length `d`, 0…64 |
/// | 1 | the store id's length `s`, 0…64, or 255 for none |
/// | 1 | the key id's length `k`, 1…64 |
/// | 8 | the generation (signed, never negative) |
/// | 16 | ``identity``: the digest of the witnessed store's identity |
/// | d, s, k | the digest, the store id, the key id (printable ASCII: the key item's `store` attribute) |
/// | 32 | HMAC-SHA256 of everything before, under ``macKey(kek:)`` |
///
/// Anything else (another length, trailing bytes, a negative generation) does not parse.
package struct KeyringMarkPayload: Sendable, Hashable {
    package static let magic: [UInt8] = Array("SIRM".utf8)
    package static let version: UInt8 = 1
    package static let macLength = 32
    /// The longest digest, store id and key id the layout allows.
    package static let maximumFieldLength = 64
    static let headerLength = 4 + 1 + 3 + 8 + 16

    package var mark: HighWaterMark
    /// The `store` attribute of the key item whose key authenticates this mark.
    package var keyID: String
    /// 16 bytes: ``identityDigest(_:)`` of the store it is the mark of.
    package var identity: [UInt8]
    /// 32 bytes: the HMAC (``seal(_:)`` sets it).
    package var mac: [UInt8]

    package init(mark: HighWaterMark, keyID: String, identity: [UInt8], mac: [UInt8] = []) {
        self.mark = mark
        self.keyID = keyID
        self.identity = identity
        self.mac = mac
    }

    /// The digest marks are bound to: 16 bytes of the store's identity (the state
    /// directory's file name for it, which the keyring item's `witnessed` attribute spells).
    package static func identityDigest(_ store: WitnessedStore) -> [UInt8] {
        StateDirectoryWitness.unhex(StateDirectoryWitness.fileName(store.identity)) ?? []
    }

    /// The key marks are authenticated with: HKDF-SHA256 of the store's key-encryption key.
    package static func macKey(kek: SecretBytes) throws(SecItemError) -> SecretBytes {
        try Crypto.hkdf(kek, info: "secitem rollback mark v1")
    }

    /// Whether the fields fit the layout (what ``signed`` can encode).
    package var isEncodable: Bool {
        mark.generation >= 0 && mark.digest.count <= Self.maximumFieldLength
            && (mark.storeID?.count ?? 0) <= Self.maximumFieldLength && !keyID.isEmpty
            && keyID.utf8.count <= Self.maximumFieldLength && keyID.utf8.allSatisfy(Self.printable)
            && identity.count == 16
    }

    private static func printable(_ byte: UInt8) -> Bool { byte >= 0x21 && byte <= 0x7E }

    /// Everything the MAC covers (the fields must be ``isEncodable``).
    package var signed: [UInt8] {
        var out = Self.magic
        out.append(Self.version)
        out.append(UInt8(mark.digest.count))
        out.append(mark.storeID.map { UInt8($0.count) } ?? 255)
        out.append(UInt8(keyID.utf8.count))
        out += (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: mark.generation) >> (56 - 8 * $0)) }
        out += identity
        out += mark.digest
        out += mark.storeID ?? []
        out += Array(keyID.utf8)
        return out
    }

    /// The item's secret: ``signed`` and the MAC.
    package var bytes: [UInt8] { signed + mac }

    /// Sets ``mac`` under `key` (``macKey(kek:)``).
    package mutating func seal(_ key: SecretBytes) throws(SecItemError) {
        mac = try MACContext(key: key).run(signed)
    }

    /// Whether ``mac`` is the HMAC of ``signed`` under `key` (compared in constant time).
    package func verifies(_ key: SecretBytes) throws(SecItemError) -> Bool {
        let expected = try MACContext(key: key).run(signed)
        guard mac.count == expected.count else { return false }
        var difference: UInt8 = 0
        for i in expected.indices { difference |= expected[i] ^ mac[i] }
        return difference == 0
    }

    /// Reads a payload; `nil` when the bytes are not one (whatever they are: they come
    /// from the keyring, which any program of the user can write). The MAC is not checked.
    package static func parse(_ bytes: some Collection<UInt8>) -> KeyringMarkPayload? {
        let b = Array(bytes)
        guard b.count >= headerLength + 1 + macLength, Array(b[0..<4]) == magic, b[4] == version else { return nil }
        let d = Int(b[5]), k = Int(b[7])
        let s: Int? = b[6] == 255 ? nil : Int(b[6])
        guard d <= maximumFieldLength, (s ?? 0) <= maximumFieldLength, k >= 1, k <= maximumFieldLength else { return nil }
        guard b.count == headerLength + d + (s ?? 0) + k + macLength else { return nil }
        let generation = Int64(bitPattern: b[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        guard generation >= 0 else { return nil }
        var at = headerLength
        func take(_ n: Int) -> [UInt8] {
            defer { at += n }
            return Array(b[at..<(at + n)])
        }
        let identity = Array(b[16..<32])
        let digest = take(d)
        let storeID = s.map { take($0) }
        let key = take(k)
        guard key.allSatisfy(printable) else { return nil }
        let mac = take(macLength)
        return KeyringMarkPayload(
            mark: HighWaterMark(generation: generation, digest: digest, storeID: storeID),
            keyID: String(decoding: key, as: UTF8.self), identity: identity, mac: mac)
    }
}
