import Foundation
import SecItemCore
import SecItemSealedStore
import SecItemTestSupport
import Testing

/// The tpm2 key source against a real TPM (swtpm), with neither SQLite nor PostgreSQL:
/// the sealed key round-trips through the header's meta values, and every refusal is a
/// clear status naming the source.
@Suite(.requires(.softwareTPM), .serialized) struct TPM2KeySourceTests {
    private let context = KeySourceContext(store: "/nowhere/keychain.db")

    /// A header whose data key is wrapped under a new TPM-sealed key, as a store keeps it.
    private func sealedHeader(_ source: SealedStoreKeySource, dataKey: SecretBytes) throws -> KeychainHeader {
        let kek = try KeyEncryptionKey.forNewWrapping(source, context)
        var header = KeychainHeader(
            protection: kek.protection, scrypt: kek.scrypt, salt: kek.salt, wrappedDataKey: [], epoch: 1)
        header.protect(with: kek)
        try header.wrap(dataKey, kek: kek.kek)
        return try KeychainHeader.parse(Dictionary(uniqueKeysWithValues: header.metaValues.map { ($0.key, $0.value) }), source: "test")
    }

    private func failure(_ body: () throws -> Void) -> SecItemError? { thrownSecItemError(body) }

    @Test("a key sealed to the TPM unwraps the data key after a round trip through the header; the header holds no key")
    func roundTrip() throws {
        let tpm = try SoftwareTPM()
        defer { tpm.stop() }
        let dataKey = try SecretBytes(random: 32)
        let source = try SealedStoreKeySource.tpm2(tcti: tpm.tcti)
        let header = try sealedHeader(source, dataKey: dataKey)
        #expect(header.protection.rawValue == "tpm2")
        let blob = try #require(header.parameters["kek_tpm2_sealed"]?.bytes)
        #expect(blob.count > 100)
        let kek = try KeyEncryptionKey.forExisting(source, context, header: header)
        #expect(try header.unwrap(kek: kek.kek)?.equals(dataKey) == true)
        // The unsealed key appears nowhere in what the store keeps.
        let stored = header.metaValues.compactMap { $0.value.bytes }
        let kekBytes = kek.kek.withBytes { (p, n) in Array(UnsafeBufferPointer(start: p, count: n)) }
        #expect(!stored.contains { Data($0).range(of: Data(kekBytes)) != nil })
        // A key source's header rows are bound into the wrapping: one more, and the key no longer unwraps it.
        var tampered = header
        tampered.parameters["kek_tpm2_extra"] = .text("x")
        #expect(try tampered.unwrap(kek: kek.kek) == nil)
        #expect("\(source)" == "TPM 2.0 (\(tpm.tcti))")
    }

    @Test("another TPM (a fresh swtpm state) cannot unseal: errSecAuthFailed naming the source")
    func anotherTPM() throws {
        let first = try SoftwareTPM()
        defer { first.stop() }
        let header = try sealedHeader(try .tpm2(tcti: first.tcti), dataKey: try SecretBytes(random: 32))
        let second = try SoftwareTPM()
        defer { second.stop() }
        let error = failure { _ = try KeyEncryptionKey.forExisting(try .tpm2(tcti: second.tcti), context, header: header) }
        #expect(error?.status == errSecAuthFailed)
        #expect(error?.detail?.contains("sealed by a different TPM") == true, "\(String(describing: error))")
        #expect(error?.detail?.contains("/nowhere/keychain.db") == true)
    }

    @Test("a key bound to PCR 7 unseals until the PCR is extended, then errSecAuthFailed saying so")
    func pcrPolicy() throws {
        let tpm = try SoftwareTPM()
        defer { tpm.stop() }
        let dataKey = try SecretBytes(random: 32)
        let source = try SealedStoreKeySource.tpm2(tcti: tpm.tcti, pcrs: "sha256:7")
        let header = try sealedHeader(source, dataKey: dataKey)
        #expect(header.parameters["kek_tpm2_pcrs"] == .text("sha256:7"))
        // Opening reads the PCRs from the header, whatever the source was given.
        let plain = try SealedStoreKeySource.tpm2(tcti: tpm.tcti)
        #expect(try header.unwrap(kek: KeyEncryptionKey.forExisting(plain, context, header: header).kek)?.equals(dataKey) == true)
        try tpm.extendPCR(7)
        let error = failure { _ = try KeyEncryptionKey.forExisting(plain, context, header: header) }
        #expect(error?.status == errSecAuthFailed)
        #expect(error?.detail?.contains("PCRs (sha256:7) no longer hold") == true, "\(String(describing: error))")
    }

    @Test("no TPM at the TCTI: errSecNotAvailable naming the source and the setting")
    func noTPM() throws {
        let port = try #require(SoftwareTPM.freePortPair())
        let source = try SealedStoreKeySource.tpm2(tcti: "swtpm:host=127.0.0.1,port=\(port)")
        for body: () throws -> Void in [
            { _ = try KeyEncryptionKey.forNewWrapping(source, context) },
            {
                let header = KeychainHeader(
                    protection: KeyProtection(rawValue: "tpm2"), wrappedDataKey: [1], epoch: 1)
                var withBlob = header
                withBlob.parameters["kek_tpm2_sealed"] = .bytes([0, 1, 2])
                _ = try KeyEncryptionKey.forExisting(source, context, header: withBlob)
            },
        ] {
            let error = failure(body)
            #expect(error?.status == errSecNotAvailable)
            #expect(error?.detail?.contains("key source tpm2") == true, "\(String(describing: error))")
            #expect(error?.detail?.contains("SECITEM_TPM2_TCTI") == true)
        }
    }

    @Test("settings: SECITEM_KEY_SOURCE=tpm2 with its TCTI and PCRs; a bad PCR list is errSecParam; another source is refused on a TPM store")
    func settings() throws {
        let env = ["SECITEM_KEY_SOURCE": "tpm2", "SECITEM_TPM2_TCTI": "swtpm:host=127.0.0.1,port=1", "SECITEM_TPM2_PCRS": "7,11"]
        let resolved = try KeySources.resolve(SecItemConfiguration.environmentOnly(env), context)
        #expect(resolved.kind == "tpm2")
        #expect("\(resolved)" == "TPM 2.0 (swtpm:host=127.0.0.1,port=1), PCRs sha256:7,11")
        let byDefault = try KeySources.resolve(SecItemConfiguration.environmentOnly(["SECITEM_KEY_SOURCE": "tpm2"]), context)
        #expect("\(byDefault)" == "TPM 2.0 (device:/dev/tpmrm0)")
        // Named only: a TCTI alone does not pick the TPM.
        #expect(try KeySources.resolve(SecItemConfiguration.environmentOnly(["SECITEM_TPM2_TCTI": "x"]), context).kind == "automatic")
        for bad in ["md5:7", "24", "7,,8", "sha256:", "seven"] {
            var badEnv = env
            badEnv["SECITEM_TPM2_PCRS"] = bad
            let error = failure { _ = try KeySources.resolve(SecItemConfiguration.environmentOnly(badEnv), context) }
            #expect(error?.status == errSecParam, "\(bad)")
            #expect(error?.detail?.contains("SECITEM_TPM2_PCRS") == true || error?.detail?.contains("no PCR") == true, "\(bad)")
        }
        let header = KeychainHeader(protection: KeyProtection(rawValue: "tpm2"), wrappedDataKey: [1], epoch: 1)
        let error = failure { _ = try KeyEncryptionKey.forExisting(.rawKey(Data(repeating: 1, count: 32)), context, header: header) }
        #expect(error?.status == errSecAuthFailed)
        #expect(error?.detail?.contains("protected by a key sealed to a TPM") == true)
    }
}
