import Foundation
import SecItemCore

/// A 256-bit key given in code (exactly 32 bytes); no setting selects it.
struct RawKeySource: KeySource {
    static let name = "raw-key"
    static let missingSetting = "a raw key is given in code only"
    static var settings: [SecItemSettingDeclaration] { [] }

    var key: Data
    var protection: KeyProtection { .key }
    var description: String { "raw key (redacted)" }
    var released: any KeySource { RawKeySource(key: Data()) }
    var protects: String {
        "stops what the program's own keeping of the key stops, and other local users; not malware running as you"
    }

    static func fromSettings(_ settings: SecItemConfiguration, _ context: KeySourceContext) -> (any KeySource)? { nil }

    func newKey(_ context: KeySourceContext) throws(SecItemError) -> KeyEncryptionKey {
        try existingKey(nil, context)
    }

    func existingKey(_ header: KeychainHeader?, _ context: KeySourceContext) throws(SecItemError) -> KeyEncryptionKey {
        guard key.count == Crypto.keyLength else {
            throw SecItemError(errSecParam, "a raw key must be 32 bytes, not \(key.count)")
        }
        try expect(header, context, "a raw key")
        return KeyEncryptionKey(kek: SecretBytes(copying: key), protection: .key)
    }

    func diagnosis(_ settings: SecItemConfiguration, _ context: KeySourceContext) -> (note: String, keyFile: String?) {
        ("key: a raw key given in code", nil)
    }
}
