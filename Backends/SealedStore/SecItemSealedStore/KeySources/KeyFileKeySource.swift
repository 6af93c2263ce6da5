import Foundation
import SecItemCore

/// A file holding a 256-bit key: 32 raw bytes, 64 hex digits or base64; refused
/// when others could read it or another user owns it. Selected by `SECITEM_KEY_FILE`
/// (`key-file`). (A key systemd hands over is ``SystemdCredentialKeySource``.)
struct KeyFileKeySource: KeySource {
    static let name = "key-file"
    static let missingSetting = "\(keyFile.variable) is not set"

    /// `key-file`, `SECITEM_KEY_FILE`.
    static let keyFile = SecItemSetting<String>.text(
        "key-file", scope: "key-sources",
        help: "A key file (32 bytes, 64 hex digits or base64; mode 0600, yours): the key of the file and PostgreSQL stores. Else secitem.key in $CREDENTIALS_DIRECTORY when present.", expected: "path")
    static var settings: [SecItemSettingDeclaration] { [keyFile.declaration] }

    var path: String
    var protection: KeyProtection { .key }
    var description: String { "key file \(path)" }
    var released: any KeySource { self }
    var protects: String {
        "stops disk theft and a leaked backup only when the key file is not on that disk or in that backup, "
            + "and other local users (it must be 0600 and yours); not malware running as you"
    }

    static func fromSettings(_ settings: SecItemConfiguration, _ context: KeySourceContext) throws(SecItemError) -> (any KeySource)? {
        try settings.value(keyFile).map { KeyFileKeySource(path: $0) }
    }

    func newKey(_ context: KeySourceContext) throws(SecItemError) -> KeyEncryptionKey {
        try existingKey(nil, context)
    }

    func existingKey(_ header: KeychainHeader?, _ context: KeySourceContext) throws(SecItemError) -> KeyEncryptionKey {
        let kek = try KeyFile.read(path)
        try expect(header, context, "a key file")
        return KeyEncryptionKey(kek: kek, protection: .key)
    }

    func diagnosis(_ settings: SecItemConfiguration, _ context: KeySourceContext) -> (note: String, keyFile: String?) {
        ("key: key file \(path)", path)
    }
}
