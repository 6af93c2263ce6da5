import SecItemCore

/// The keys one data key gives: separate HMAC and encryption keys (HKDF).
final class ItemKeys {
    let dataKey: SecretBytes
    let macKey: SecretBytes
    let encKey: SecretBytes
    /// HMACs that depend on the key alone (access groups, sync states), computed
    /// once. Not secret beyond what the file's columns show. Used under the
    /// backend's mutex only.
    var memo: [String: [UInt8]] = [:]

    init(dataKey: SecretBytes) throws(SecItemError) {
        self.dataKey = dataKey
        macKey = try Crypto.hkdf(dataKey, info: "secitem-file/1 hmac-sha256")
        encKey = try Crypto.hkdf(dataKey, info: "secitem-file/1 aes-256-gcm")
    }

    /// A fresh random data key.
    static func generate() throws(SecItemError) -> ItemKeys {
        try ItemKeys(dataKey: SecretBytes(random: Crypto.keyLength))
    }
}
