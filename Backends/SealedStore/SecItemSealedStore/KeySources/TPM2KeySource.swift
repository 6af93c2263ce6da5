internal import CSecItemTSS2
import Foundation
public import SecItemCore

/// The key-encryption key sealed to a TPM 2.0 (`SECITEM_KEY_SOURCE=tpm2`).
///
/// A new store gets a random 256-bit key, sealed as a keyed-hash object under the
/// TPM's storage primary key (the TCG SRK template under the owner hierarchy, which
/// every process on the same TPM re-creates identically, so nothing is kept in the
/// TPM). The sealed blob, which only that TPM can load, is kept in the store's header
/// (`kek_tpm2_sealed`); with PCRs (`SECITEM_TPM2_PCRS`, `kek_tpm2_pcrs`) the TPM
/// unseals it only while they hold the values they held when it was sealed. The key
/// travels to and from the TPM encrypted (sessions salted with the primary key).
///
/// The TPM is `/dev/tpmrm0`, or any TSS2 TCTI string in `SECITEM_TPM2_TCTI`
/// (`swtpm:host=127.0.0.1,port=2321`). tpm2-tss is loaded on first use; nothing links it.
/// Another TPM (another machine, a cleared TPM, a fresh swtpm state) or changed PCRs
/// give `errSecAuthFailed`; no TPM, or no tpm2-tss, `errSecNotAvailable`. Nothing is rewritten.
struct TPM2KeySource: KeySource {
    static let name = "tpm2"
    static let missingSetting = "no TPM is configured"
    static let defaultTCTI = "device:/dev/tpmrm0"
    /// `tpm2-tcti`, `SECITEM_TPM2_TCTI`.
    static let tctiSetting = SecItemSetting<String>.text(
        "tpm2-tcti", scope: "key-sources", help: "The TPM of the tpm2 key source, as a TSS2 TCTI string.",
        expected: "TCTI string (swtpm:host=127.0.0.1,port=2321)", default: defaultTCTI)
    /// `tpm2-pcrs`, `SECITEM_TPM2_PCRS`.
    static let pcrsSetting = SecItemSetting<String>.text(
        "tpm2-pcrs", scope: "key-sources",
        help: "The PCRs a new tpm2 sealing binds to (the store's header keeps those of an existing one); unset: none.",
        expected: "PCR numbers (7 or 0,7)")
    static var settings: [SecItemSettingDeclaration] { [tctiSetting.declaration, pcrsSetting.declaration] }
    static var tctiVariable: String { tctiSetting.variable }
    static var pcrsVariable: String { pcrsSetting.variable }
    static let sealedKey = KeychainHeader.parameterPrefix + "tpm2_sealed"
    static let pcrsKey = KeychainHeader.parameterPrefix + "tpm2_pcrs"

    /// The TSS2 TCTI configuration string.
    var tcti: String
    /// The PCRs a new sealing binds to (the store's header says which an existing one has).
    var pcrs: PCRSelection?

    var protection: KeyProtection { .tpm2 }
    var description: String { "TPM 2.0 (\(tcti))" + (pcrs.map { ", PCRs \($0)" } ?? "") }
    var released: any KeySource { self }
    var protects: String {
        "stops disk theft and a leaked backup (only this machine's TPM unseals the key)"
            + (pcrs.map { ", and a changed boot chain (PCRs \($0))" } ?? "")
            + "; other local users by file permissions only; not malware running as you on this machine, nor root"
    }

    static func fromSettings(_ settings: SecItemConfiguration, _ context: KeySourceContext) throws(SecItemError) -> (any KeySource)? {
        guard settings.keySource == name else { return nil }
        let tcti = try settings.value(tctiSetting) ?? defaultTCTI
        let pcrs = try settings.value(pcrsSetting).map { (text) throws(SecItemError) in
            try PCRSelection(parsing: text, setting: pcrsVariable)
        }
        return TPM2KeySource(tcti: tcti, pcrs: pcrs)
    }

    func newKey(_ context: KeySourceContext) throws(SecItemError) -> KeyEncryptionKey {
        let kek = try SecretBytes(random: Crypto.keyLength)
        let blob = try TPM2Connection.with(tcti, context) { (tpm) throws(SecItemError) in try tpm.seal(kek, pcrs: pcrs, context) }
        var values: [String: KeychainHeader.MetaValue] = [Self.sealedKey: .bytes(blob)]
        if let pcrs { values[Self.pcrsKey] = .text(pcrs.description) }
        return KeyEncryptionKey(kek: kek, protection: .tpm2, parameters: values)
    }

    func existingKey(_ header: KeychainHeader?, _ context: KeySourceContext) throws(SecItemError) -> KeyEncryptionKey {
        guard let header else {
            throw SecItemError(errSecParam, "the tpm2 key source seals a key for a store; it has no key without one")
        }
        try expect(header, context, "the TPM (SECITEM_KEY_SOURCE=tpm2)")
        let (blob, pcrs) = try Self.sealed(header.parameters, store: context.store)
        let kek = try TPM2Connection.with(tcti, context) { (tpm) throws(SecItemError) in try tpm.unseal(blob, pcrs: pcrs, context) }
        return KeyEncryptionKey(kek: kek, protection: .tpm2, parameters: header.parameters)
    }

    /// The sealed blob and the PCRs a store's header records (the parse step of
    /// ``existingKey(_:_:)``, before the TPM is asked).
    static func sealed(_ parameters: [String: KeychainHeader.MetaValue], store: String) throws(SecItemError)
        -> (blob: [UInt8], pcrs: PCRSelection?)
    {
        guard let blob = parameters[Self.sealedKey]?.bytes else {
            throw SecItemError(errSecInvalidKeychain, "the keychain \(store) lacks its TPM-sealed key (\(Self.sealedKey))")
        }
        let pcrs = try parameters[Self.pcrsKey].map { (value) throws(SecItemError) in
            guard let text = value.text else {
                throw SecItemError(errSecInvalidKeychain, "the keychain \(store) has a malformed \(Self.pcrsKey)")
            }
            return try PCRSelection(parsing: text, setting: "the keychain's \(Self.pcrsKey)")
        }
        return (blob, pcrs)
    }

    func diagnosis(_ settings: SecItemConfiguration, _ context: KeySourceContext) -> (note: String, keyFile: String?) {
        ("key: sealed to the TPM 2.0 at \(tcti)\(pcrs.map { ", new sealings bound to PCRs \($0)" } ?? "")", nil)
    }
}

extension KeyProtection {
    /// A key sealed to a TPM 2.0 (the header keeps the sealed blob).
    package static let tpm2 = KeyProtection(rawValue: "tpm2")
}

/// What a tpm2 store's header holds, read without a TPM: the parse steps of opening
/// one, for the fuzz target `tpm2-sealed-blob` (docs/fuzzing.md) and tests.
package enum TPM2SealedKey {
    /// The sealed blob and the PCR selection (in its canonical text) of a header's
    /// `kek_tpm2_*` rows, as opening the store reads them.
    /// - Throws: `errSecInvalidKeychain` for a missing blob or a PCR row that is not
    ///   text, `errSecParam` for a PCR list that does not parse.
    package static func parameters(_ parameters: [String: KeychainHeader.MetaValue], store: String) throws(SecItemError)
        -> (blob: [UInt8], pcrs: String?)
    {
        let (blob, pcrs) = try TPM2KeySource.sealed(parameters, store: store)
        return (blob, pcrs?.description)
    }

    /// The blob unmarshalled as unsealing does before it talks to the TPM (libtss2-mu:
    /// TPM2B_PRIVATE then TPM2B_PUBLIC, nothing after), and marshalled back.
    /// - Throws: `errSecInvalidKeychain` for a malformed blob; `errSecNotAvailable`
    ///   without tpm2-tss.
    package static func canonical(_ blob: [UInt8]) throws(SecItemError) -> [UInt8] {
        var error = csecitem_tpm2_error()
        var out = [UInt8](repeating: 0, count: Int(CSECITEM_TPM2_BLOB_MAX))
        var size = 0
        let ok = blob.withUnsafeBufferPointer { b in
            out.withUnsafeMutableBufferPointer { o in
                csecitem_tpm2_parse_blob(b.baseAddress, b.count, o.baseAddress, o.count, &size, &error)
            }
        }
        guard ok == 1 else {
            let reason = withUnsafeBytes(of: error.message) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            let loaded = csecitem_tpm2_load(&error) == 1
            throw SecItemError(loaded ? errSecInvalidKeychain : errSecNotAvailable, "the TPM-sealed key: \(reason)")
        }
        return Array(out[..<size])
    }
}

/// TPM PCRs of one bank, as `SECITEM_TPM2_PCRS` writes them: `sha256:7,11`, or `7,11` (SHA-256).
struct PCRSelection: Sendable, CustomStringConvertible, Equatable {
    static let banks: [(name: String, algorithm: UInt16)] = [("sha1", 0x0004), ("sha256", 0x000B), ("sha384", 0x000C), ("sha512", 0x000D)]

    var bank: String
    var algorithm: UInt16
    /// Bit i: PCR i (0...23).
    var mask: UInt32

    init(parsing text: String, setting: String) throws(SecItemError) {
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let bankName = parts.count == 2 ? parts[0].lowercased() : "sha256"
        guard let found = Self.banks.first(where: { $0.name == bankName }) else {
            throw SecItemError(
                errSecParam, "\(setting) names the PCR bank \"\(bankName)\"; expected \(Self.banks.map(\.name).joined(separator: ", "))")
        }
        var mask: UInt32 = 0
        for item in (parts.last ?? "").split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = item.trimmingCharacters(in: .whitespaces)
            guard let index = Int(trimmed), (0...23).contains(index) else {
                throw SecItemError(errSecParam, "\(setting) is \"\(text)\"; expected PCR numbers 0 to 23, as in sha256:7,11")
            }
            mask |= 1 << UInt32(index)
        }
        guard mask != 0 else { throw SecItemError(errSecParam, "\(setting) names no PCR") }
        (bank, algorithm, self.mask) = (found.name, found.algorithm, mask)
    }

    var description: String {
        "\(bank):" + (0..<24).filter { mask & (1 << UInt32($0)) != 0 }.map(String.init).joined(separator: ",")
    }
}

/// One connection to a TPM through tpm2-tss, for one operation (``with(_:_:_:)``).
final class TPM2Connection {
    /// One TPM operation at a time in this process. A TPM runs one command at a time
    /// anyway; and without a resource manager between it and its clients (swtpm's
    /// socket, `device:/dev/tpm0`), a second connection would cut the first one off
    /// and leave its primary key and sessions loaded in the TPM's few object slots
    /// (TPM_RC_OBJECT_MEMORY for everyone after). The kernel's /dev/tpmrm0 flushes a
    /// client's objects itself; other processes on a raw TPM need tpm2-abrmd.
    private static let lock = NSLock()

    private var handle: OpaquePointer?
    let tcti: String

    private init(handle: OpaquePointer, tcti: String) {
        self.handle = handle
        self.tcti = tcti
    }

    deinit { close() }

    /// Connects, creates the storage primary key, runs `body`, and flushes and closes,
    /// holding the process's TPM lock throughout.
    /// - Throws: `errSecNotAvailable` without tpm2-tss or without a TPM at `tcti`; what `body` throws.
    /// - Parameter primary: Whether `body` needs the storage primary key (sealing and
    ///   unsealing do; the NV calls of ``TPM2CounterWitness`` do not, and skip its creation).
    static func with<R>(
        _ tcti: String, _ context: KeySourceContext, primary: Bool = true, _ body: (TPM2Connection) throws(SecItemError) -> R
    ) throws(SecItemError) -> R {
        lock.lock()
        defer { lock.unlock() }
        let connection = try open(tcti, context, primary: primary)
        defer { connection.close() }
        return try body(connection)
    }

    /// Flushes the primary key and closes the connection (once).
    private func close() {
        if let handle {
            csecitem_tpm2_disconnect(handle)
            self.handle = nil
        }
    }

    /// Connects and creates the storage primary key.
    private static func open(_ tcti: String, _ context: KeySourceContext, primary: Bool) throws(SecItemError) -> TPM2Connection {
        var error = csecitem_tpm2_error()
        var handle: OpaquePointer?
        let connected = primary ? csecitem_tpm2_connect(tcti, &handle, &error) : csecitem_tpm2_connect_nv(tcti, &handle, &error)
        guard connected == 1, let handle else {
            let reason = Self.message(error)
            if error.rc == 0 || error.rc & 0xFFFF_0000 != 0 {
                throw SecItemError(
                    errSecNotAvailable,
                    "the key source tpm2 needs a TPM for the keychain \(context.store), but \(reason) (\(TPM2KeySource.tctiVariable))")
            }
            throw SecItemError(errSecNotAvailable, "the TPM at \(tcti) refused the key source tpm2: \(reason)")
        }
        return TPM2Connection(handle: handle, tcti: tcti)
    }

    /// Seals `secret`, bound to `pcrs`' current values when given; returns the blob.
    func seal(_ secret: SecretBytes, pcrs: PCRSelection?, _ context: KeySourceContext) throws(SecItemError) -> [UInt8] {
        var error = csecitem_tpm2_error()
        var blob = [UInt8](repeating: 0, count: Int(CSECITEM_TPM2_BLOB_MAX))
        var size = 0
        let ok = secret.withBytes { (p, n) in
            csecitem_tpm2_seal(handle, p, n, pcrs?.algorithm ?? 0, pcrs?.mask ?? 0, &blob, blob.count, &size, &error)
        }
        guard ok == 1 else {
            throw SecItemError(
                error.rc & 0xFFFF_0000 == 0 && error.rc != 0 ? errSecAuthFailed : errSecNotAvailable,
                "the TPM at \(tcti) did not seal a key for the keychain \(context.store): \(Self.message(error))")
        }
        return Array(blob[..<size])
    }

    /// Unseals a blob ``seal(_:pcrs:_:)`` made.
    /// - Throws: `errSecAuthFailed` when this TPM refuses it (another TPM's blob, changed PCRs).
    func unseal(_ blob: [UInt8], pcrs: PCRSelection?, _ context: KeySourceContext) throws(SecItemError) -> SecretBytes {
        var error = csecitem_tpm2_error()
        var size = 0
        var ok: Int32 = 0
        let capacity = Int(CSECITEM_TPM2_SECRET_MAX)
        let key = SecretBytes(count: capacity) { out in
            ok = csecitem_tpm2_unseal(handle, blob, blob.count, pcrs?.algorithm ?? 0, pcrs?.mask ?? 0, out, capacity, &size, &error)
        }
        guard ok == 1 else { throw Self.refusal(error, tcti: tcti, pcrs: pcrs, context) }
        guard size == Crypto.keyLength else {
            throw SecItemError(errSecAuthFailed, "the TPM at \(tcti) unsealed a key of \(size) bytes for the keychain \(context.store), not 32")
        }
        return key.withBytes { (p, _) in SecretBytes(copying: UnsafeBufferPointer(start: p, count: size)) }
    }

    /// The status and message for a refused unseal (never the key: the TPM returned none).
    static func refusal(_ error: csecitem_tpm2_error, tcti: String, pcrs: PCRSelection?, _ context: KeySourceContext) -> SecItemError {
        let reason = message(error)
        let rc = error.rc
        guard rc != 0, rc & 0xFFFF_0000 == 0 else {
            return SecItemError(errSecNotAvailable, "the TPM at \(tcti) could not unseal the key of the keychain \(context.store): \(reason)")
        }
        // A format-1 response code: bit 7 set, the error in bits 0-5 (the rest names the parameter, handle or session).
        let code = rc & 0x80 != 0 ? rc & 0xBF : rc
        switch code {
        case 0x09D, 0x128, 0x127:  // TPM_RC_POLICY_FAIL, TPM_RC_PCR_CHANGED, TPM_RC_PCR
            return SecItemError(
                errSecAuthFailed,
                "the TPM at \(tcti) refuses to unseal the key of the keychain \(context.store): its PCRs "
                    + "\(pcrs.map { "(\($0)) " } ?? "")no longer hold the values the key was sealed to "
                    + "(firmware, boot loader, Secure Boot state or kernel changed, or a PCR was extended); \(reason)")
        case 0x921, 0x922:  // TPM_RC_LOCKOUT, TPM_RC_RETRY (warnings: bit 11, not format 1)
            return SecItemError(errSecNotAvailable, "the TPM at \(tcti) is not answering now (\(reason)); nothing was changed")
        default:
            return SecItemError(
                errSecAuthFailed,
                "the keychain \(context.store) was sealed by a different TPM (another machine, or this TPM was cleared "
                    + "or its state reset): the TPM at \(tcti) cannot unseal its key; \(reason)")
        }
    }

    // MARK: NV indices (TPM2CounterWitness)

    /// An NV index as ``nvRead(_:capacity:)`` finds it.
    struct NVIndex {
        /// TPMA_NV, TPMA_NV_WRITTEN included.
        var attributes: UInt32
        /// Its declared size.
        var size: Int
        /// Its first bytes, once written (empty before).
        var data: [UInt8]
        var written: Bool { attributes & 0x2000_0000 != 0 }
    }

    /// The index at `handle`, or `nil` when none is defined there.
    func nvRead(_ handle: UInt32, capacity: Int) throws(SecItemError) -> NVIndex? {
        var error = csecitem_tpm2_error()
        var attributes: UInt32 = 0
        var declared: UInt16 = 0
        var data = [UInt8](repeating: 0, count: capacity)
        var size = 0
        let found = csecitem_tpm2_nv_read(self.handle, handle, &attributes, &declared, &data, capacity, &size, &error)
        if found == 2 { return nil }
        guard found == 1 else { throw nvFailure(error) }
        return NVIndex(attributes: attributes, size: Int(declared), data: Array(data[..<size]))
    }

    /// Defines an index; `false` when one already is there.
    func nvDefine(_ handle: UInt32, attributes: UInt32, size: Int) throws(SecItemError) -> Bool {
        var error = csecitem_tpm2_error()
        let done = csecitem_tpm2_nv_define(self.handle, handle, attributes, UInt16(size), &error)
        guard done != 0 else { throw nvFailure(error) }
        return done == 1
    }

    func nvIncrement(_ handle: UInt32, times: Int) throws(SecItemError) {
        var error = csecitem_tpm2_error()
        guard csecitem_tpm2_nv_increment(self.handle, handle, UInt32(times), &error) == 1 else { throw nvFailure(error) }
    }

    func nvWrite(_ handle: UInt32, _ data: [UInt8]) throws(SecItemError) {
        var error = csecitem_tpm2_error()
        guard csecitem_tpm2_nv_write(self.handle, handle, data, data.count, &error) == 1 else { throw nvFailure(error) }
    }

    func nvWriteLock(_ handle: UInt32) throws(SecItemError) {
        var error = csecitem_tpm2_error()
        guard csecitem_tpm2_nv_write_lock(self.handle, handle, &error) == 1 else { throw nvFailure(error) }
    }

    /// Undefines an index (none there is no error).
    func nvUndefine(_ handle: UInt32) throws(SecItemError) {
        var error = csecitem_tpm2_error()
        guard csecitem_tpm2_nv_undefine(self.handle, handle, &error) != 0 else { throw nvFailure(error) }
    }

    private func nvFailure(_ error: csecitem_tpm2_error) -> SecItemError {
        SecItemError(errSecIO, "the TPM at \(tcti) could not keep the keychain's rollback counter: \(Self.message(error))")
    }

    private static func message(_ error: csecitem_tpm2_error) -> String {
        withUnsafeBytes(of: error.message) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }
}

extension SealedStoreKeySource {
    /// The key-encryption key sealed to a TPM 2.0 (`SECITEM_KEY_SOURCE=tpm2`).
    ///
    /// A new store seals a random key to the TPM and keeps the sealed blob in its
    /// header; only the same TPM unseals it (another machine, a cleared TPM: `errSecAuthFailed`).
    /// - Parameters:
    ///   - tcti: the TSS2 TCTI string naming the TPM; `nil` is `device:/dev/tpmrm0`.
    ///   - pcrs: for a new sealing, the PCRs whose current values the key is bound to,
    ///     as `sha256:7,11` or `7,11`; `nil` binds to none. Opening a store uses the PCRs
    ///     its header records.
    /// - Throws: `errSecParam` for an unusable PCR selection.
    public static func tpm2(tcti: String? = nil, pcrs: String? = nil) throws(SecItemError) -> SealedStoreKeySource {
        let selection = try pcrs.map { (text) throws(SecItemError) in try PCRSelection(parsing: text, setting: "the PCR selection") }
        return SealedStoreKeySource(TPM2KeySource(tcti: tcti ?? TPM2KeySource.defaultTCTI, pcrs: selection))
    }
}
