import Foundation
import SecItemCore

/// The embedded default: a random key file generated on first use at the
/// context's `generatedKeyFilePath` (`automatic`, and what is used when nothing
/// else is set). It protects a copy of the store alone, not against someone who
/// can read the user's files.
struct GeneratedKeyFileSource: KeySource {
    static let name = "automatic"
    static let missingSetting = "neither XDG_CONFIG_HOME nor HOME is set"
    static var settings: [SecItemSettingDeclaration] { [] }

    var protection: KeyProtection { .key }
    var description: String { "automatic key file" }
    var released: any KeySource { self }
    var protects: String {
        "stops a copy of the database alone and other local users; not disk theft, a backup of your home "
            + "directory (the key file is in it) or malware running as you"
    }

    static func fromSettings(_ settings: SecItemConfiguration, _ context: KeySourceContext) -> (any KeySource)? {
        GeneratedKeyFileSource()
    }

    func newKey(_ context: KeySourceContext) throws(SecItemError) -> KeyEncryptionKey {
        guard !context.generatedKeyFilePath.isEmpty else {
            throw SecItemError(errSecNotAvailable, "no place for the generated key file: set XDG_CONFIG_HOME or HOME")
        }
        return KeyEncryptionKey(kek: try KeyFile.readOrGenerate(context.generatedKeyFilePath), protection: .key)
    }

    func existingKey(_ header: KeychainHeader?, _ context: KeySourceContext) throws(SecItemError) -> KeyEncryptionKey {
        let path = context.generatedKeyFilePath
        guard !path.isEmpty, FileSystem.exists(path) else {
            throw SecItemError(
                errSecNotAvailable,
                "the keychain \(context.store) exists but its generated key file "
                    + "\(path.isEmpty ? "(no XDG_CONFIG_HOME or HOME)" : path) is missing")
        }
        let kek = try KeyFile.read(path)
        try expect(header, context, "the generated key file")
        return KeyEncryptionKey(kek: kek, protection: .key)
    }

    func diagnosis(_ settings: SecItemConfiguration, _ context: KeySourceContext) -> (note: String, keyFile: String?) {
        let path = context.generatedKeyFilePath
        if FileManager.default.fileExists(atPath: path) {
            return ("key: the generated key file \(path) (protects a copy of the database alone, not against someone who can read your files)", path)
        }
        return ("key: a key file is generated at \(path) on first use", nil)
    }
}
