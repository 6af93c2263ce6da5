import Foundation
import SecItemCore
import SecItemSQLite
import SecItemSealedStore
import SecItemTestSupport
import Testing

/// The encrypted file keyed by a TPM (swtpm): create, reopen, refusals that leave the
/// file byte for byte as it was, and rekeys to and from the TPM.
@Suite(.requires(.softwareTPM), .serialized) struct TPM2FileStoreTests {
    private func fileBytes(_ path: String) -> Data { (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data() }

    @Test("a TPM-keyed file opens again with the same TPM; a fresh TPM state and no TPM are refused, the file unchanged")
    func reopenAndRefusals() throws {
        let dir = TempDir()
        let db = dir.file("tpm.db")
        let tpm = try SoftwareTPM()
        defer { tpm.stop() }
        do {
            let client = SecItemClient(backend: try openBackend(db, try .tpm2(tcti: tpm.tcti)), accessGroups: groups)
            try client.addItem(genp("a", data: "data-a"))
        }
        let raw = RawDB(db)
        #expect(raw.strings("SELECT value FROM meta WHERE key = 'kek'") == ["tpm2"])
        #expect((raw.blob("SELECT value FROM meta WHERE key = 'kek_tpm2_sealed'")?.count ?? 0) > 100)
        let client = SecItemClient(backend: try openBackend(db, try .tpm2(tcti: tpm.tcti)), accessGroups: groups)
        #expect(try readData(client, "a") == "data-a")

        let before = fileBytes(db)
        let fresh = try SoftwareTPM()
        defer { fresh.stop() }
        let other = thrownSecItemError { _ = try openBackend(db, try .tpm2(tcti: fresh.tcti)) }
        #expect(other?.status == errSecAuthFailed)
        #expect(other?.detail?.contains("sealed by a different TPM") == true, "\(String(describing: other))")
        #expect(other?.detail?.contains(db) == true)
        fresh.stop()
        let none = thrownSecItemError { _ = try openBackend(db, try .tpm2(tcti: fresh.tcti)) }
        #expect(none?.status == errSecNotAvailable)
        #expect(none?.detail?.contains("key source tpm2") == true, "\(String(describing: none))")
        #expect(fileBytes(db) == before)
    }

    @Test("a file bound to PCR 7 is refused after the PCR is extended, the file unchanged")
    func pcrBound() throws {
        let dir = TempDir()
        let db = dir.file("pcr.db")
        let tpm = try SoftwareTPM()
        defer { tpm.stop() }
        do {
            let client = SecItemClient(backend: try openBackend(db, try .tpm2(tcti: tpm.tcti, pcrs: "7")), accessGroups: groups)
            try client.addItem(genp("a", data: "data-a"))
        }
        #expect(try readData(SecItemClient(backend: try openBackend(db, try .tpm2(tcti: tpm.tcti)), accessGroups: groups), "a") == "data-a")
        let before = fileBytes(db)
        try tpm.extendPCR(7)
        let error = thrownSecItemError { _ = try openBackend(db, try .tpm2(tcti: tpm.tcti)) }
        #expect(error?.status == errSecAuthFailed)
        #expect(error?.detail?.contains("PCRs (sha256:7)") == true, "\(String(describing: error))")
        #expect(fileBytes(db) == before)
    }

    @Test("rekey from a key file to the TPM and on to a passphrase: each opens with its own source only; no TPM rows stay behind")
    func rekeys() throws {
        let dir = TempDir()
        let db = dir.file("rekey.db")
        let key = try makeKeyFile(dir.file("k.key"))
        let tpm = try SoftwareTPM()
        defer { tpm.stop() }
        let backend = try openBackend(db, .keyFile(key))
        try SecItemClient(backend: backend, accessGroups: groups).addItem(genp("a", data: "data-a"))
        try backend.rekey(to: try .tpm2(tcti: tpm.tcti))
        #expect(status { _ = try openBackend(db, .keyFile(key)) } == errSecAuthFailed)
        let viaTPM = try openBackend(db, try .tpm2(tcti: tpm.tcti))
        #expect(try readData(SecItemClient(backend: viaTPM, accessGroups: groups), "a") == "data-a")
        try viaTPM.rekey(to: .passphrase("pw"), rewrapOnly: true)
        #expect(RawDB(db).strings("SELECT key FROM meta WHERE key GLOB 'kek_*'").isEmpty)
        #expect(try readData(SecItemClient(backend: try openBackend(db, .passphrase("pw")), accessGroups: groups), "a") == "data-a")
    }
}
