import Foundation
import SecItemCore

/// A 256-bit key that systemd hands a service: the credential `secitem.key` (or the name
/// in `SECITEM_CREDENTIAL`) in `$CREDENTIALS_DIRECTORY`, from `LoadCredential=` or
/// `LoadCredentialEncrypted=` (`systemd-creds encrypt --with-key=tpm2 …`): the service's
/// environment holds no secret, and an encrypted credential is only decrypted by systemd
/// on the machine (and TPM) it was encrypted for.
///
/// Chosen when named (`systemd-credential`), or when no key file is set and the
/// credential is there. systemd writes the file read-only and, for a unit with `User=`,
/// owned by root with an ACL granting the user read access (so its mode shows group
/// bits): the file may be owned by this user or by root, and must grant others nothing.
struct SystemdCredentialKeySource: KeySource {
    static let name = "systemd-credential"
    static let missingSetting = "CREDENTIALS_DIRECTORY is not set (the service unit has no LoadCredential= or LoadCredentialEncrypted= line)"
    static let defaultCredential = "secitem.key"
    /// `credential`, `SECITEM_CREDENTIAL`: the credential's name in `$CREDENTIALS_DIRECTORY`.
    static let credentialSetting = SecItemSetting<String>.text(
        "credential", scope: "key-sources",
        help: "The systemd credential holding the key, in $CREDENTIALS_DIRECTORY (LoadCredential=, LoadCredentialEncrypted=).",
        expected: "a credential name (no slash)", default: defaultCredential)
    static var settings: [SecItemSettingDeclaration] { [credentialSetting.declaration] }
    static var credentialVariable: String { credentialSetting.variable }

    var path: String
    var protection: KeyProtection { .key }
    var description: String { "systemd credential \(path)" }
    var released: any KeySource { self }
    var protects: String {
        "keeps the key out of the service's environment and unit; encrypted to the TPM (LoadCredentialEncrypted=, "
            + "systemd-creds --with-key=tpm2) it stops disk theft and a leaked backup; not root, nor anything running "
            + "as the service's user while it runs"
    }

    static func fromSettings(_ settings: SecItemConfiguration, _ context: KeySourceContext) throws(SecItemError) -> (any KeySource)? {
        let env = settings.environment
        guard let dir = env["CREDENTIALS_DIRECTORY"], !dir.isEmpty else { return nil }
        let credential = try settings.value(credentialSetting) ?? defaultCredential
        guard !credential.contains("/"), credential != ".", credential != ".." else {
            throw SecItemError(errSecParam, "\(credentialVariable) is \"\(credential)\"; a credential name has no slash")
        }
        let path = dir + "/" + credential
        // Picked without being named only when systemd gave that credential.
        guard settings.keySource == name || FileManager.default.fileExists(atPath: path) else { return nil }
        return SystemdCredentialKeySource(path: path)
    }

    func newKey(_ context: KeySourceContext) throws(SecItemError) -> KeyEncryptionKey {
        try existingKey(nil, context)
    }

    func existingKey(_ header: KeychainHeader?, _ context: KeySourceContext) throws(SecItemError) -> KeyEncryptionKey {
        var buffer: [UInt8]
        do throws(PrivateFile.Refusal) {
            buffer = try PrivateFile.read(path, maxBytes: 4096, allowRootOwnerAndGroup: true)
        } catch {
            switch error {
            case .missing:
                throw SecItemError(
                    errSecNotAvailable, "the systemd credential \(path) does not exist (is it named in LoadCredentialEncrypted=?)")
            case .io: throw SecItemError(errSecIO, "the systemd credential: \(error.describe(path))")
            default: throw SecItemError(errSecParam, "the systemd credential is refused: \(error.describe(path))")
            }
        }
        defer { wipe(&buffer) }
        guard let kek = KeyFile.parse(buffer[...]) else {
            throw SecItemError(
                errSecParam, "the systemd credential \(path) does not hold a 256-bit key (32 raw bytes, 64 hex digits or base64)")
        }
        try expect(header, context, "a systemd credential")
        return KeyEncryptionKey(kek: kek, protection: .key)
    }

    func diagnosis(_ settings: SecItemConfiguration, _ context: KeySourceContext) -> (note: String, keyFile: String?) {
        ("key: systemd credential \(path) (from LoadCredential= or LoadCredentialEncrypted=)", nil)
    }
}
