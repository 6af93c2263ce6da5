import Foundation
import SecItemCore
import SecItemSealedStore
import Testing

/// The tpm2 key source's parse step of a sealed blob, without a TPM (libtss2-mu only),
/// with the fuzz target's corpus inputs (a shape byte, the PCR text, the blob).
@Suite("TPM2 sealed blob: the parse step")
struct TPM2SealedBlobTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus/tpm2-sealed-blob")

    /// The blob of a corpus input whose shape byte is 1 (a PCR text row, then the blob).
    static func blob(_ name: String) throws -> [UInt8] {
        let bytes = [UInt8](try Data(contentsOf: corpus.appendingPathComponent(name)))
        return Array(bytes[(2 + Int(bytes[1]))...])
    }

    /// tpm2-sealed-blob: libtss2-mu reads a TPM2B_PUBLIC whose size prefix is 0 and writes
    /// the right size back, so a blob damaged there parsed (and only the TPM refused it,
    /// reported as "sealed by a different TPM"). Now the parse step refuses any blob that
    /// is not exactly what sealing wrote: errSecInvalidKeychain.
    @Test("a sealed blob whose TPM2B_PUBLIC size is 0 is malformed; the blob swtpm sealed reads back exactly")
    func publicSizeZero() throws {
        let sealed = try Self.blob("sealed-pcr7")
        #expect(try TPM2SealedKey.canonical(sealed) == sealed)
        let damaged = try Self.blob("public-size-zero")
        #expect(damaged.count == sealed.count && damaged != sealed)
        do {
            let parsed = try TPM2SealedKey.canonical(damaged)
            Issue.record("a damaged blob parsed (\(parsed == damaged ? "as itself" : "as other bytes"))")
        } catch {
            #expect(error.status == errSecInvalidKeychain, "\(error)")
            #expect(error.detail?.contains("malformed") == true, "\(error)")
        }
    }
}
