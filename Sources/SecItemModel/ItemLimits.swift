public import Foundation
public import SecItemSecurity

/// The largest item the keychain stores, the same for every backend.
///
/// Apple documents no limit; its peers do: Windows' Credential Manager takes
/// 2,560 bytes of secret and 256-character attributes, the Linux kernel keyring
/// 4,095-byte descriptions and 1 MiB `big_key` payloads, and a D-Bus message
/// (Secret Service) is bounded by the bus. The keychain takes the kernel's
/// 1 MiB for data — a certificate chain, a private key or a token fits many
/// times over — and 16 KiB for any one attribute value, so that an item can
/// always cross every backend (a Secret Service item's attributes and secret
/// travel in one D-Bus message) and a mistaken 20 MB label is refused at the
/// door, with `errSecParam`, instead of bloating every search.
///
/// The core checks every `SecItemAdd` and `SecItemUpdate`; operator tools
/// (import, migrate) check every item they copy with ``check(_:)``.
public enum ItemLimits {
    /// The largest `kSecValueData`, in bytes: 1 MiB.
    public static let maxDataLength = 1 << 20
    /// The largest attribute value (UTF-8 bytes of a string, bytes of data), in bytes: 16 KiB.
    public static let maxAttributeLength = 16 << 10

    /// Throws `errSecParam` when `data` is larger than ``maxDataLength``.
    public static func checkData(_ data: Data) throws(SecItemError) {
        guard data.count <= maxDataLength else {
            throw SecItemError(
                errSecParam,
                "kSecValueData is \(data.count) bytes; the limit is \(maxDataLength) bytes (1 MiB)")
        }
    }

    /// Throws `errSecParam` when `value` is longer than ``maxAttributeLength``.
    public static func checkAttribute(_ key: String, _ value: AttributeValue) throws(SecItemError) {
        let length: Int
        switch value {
        case .string(let s): length = s.utf8.count
        case .data(let d): length = d.count
        case .number, .date: return
        }
        guard length <= maxAttributeLength else {
            throw SecItemError(
                errSecParam,
                "attribute '\(key)' is \(length) bytes; the limit for an attribute value is \(maxAttributeLength) bytes (16 KiB)")
        }
    }

    /// Checks every attribute and the data of a whole item.
    public static func check(_ item: StoredItem) throws(SecItemError) {
        if let data = item.data { try checkData(data) }
        for (key, value) in item.attributes { try checkAttribute(key, value) }
    }
}
