// Issue 25: the typed layer's keys, certificates and identities.
import Foundation
import SecItemCore
import SecItemKeychain
import SecItemMemory
import Testing

@Suite("KeychainKeys")
struct KeychainKeysTests {
    @Test("a device key made once, found again by tag, signs; PKCS #12 identities stored and listed")
    func keysAndIdentities() throws {
        let client = SecItemClient(backend: MemoryBackend(), accessGroups: AccessGroups(["app"]))
        let keys = KeychainKeys(client: client)
        #expect(try keys.privateKey(tag: "device") == nil)
        let made = try keys.privateKey(tag: "device", orMake: .p256)
        #expect(try keys.privateKey(tag: "device", orMake: .p256) == made, "found, not made again")
        let signature = try keys.sign(Data("m".utf8), with: made)
        #expect(SecKeyVerifySignature(SecKeyCopyPublicKey(made)!, .ecdsaSignatureMessageX962SHA256, Data("m".utf8) as CFData, signature as CFData, nil))

        let pki = try TestPKI()
        let identity = try keys.importPKCS12(try pki.dir.read("modern.p12"), passphrase: pki.passphrase, label: "mTLS")
        #expect(try keys.identities(label: "mTLS") == [identity])
        #expect(try keys.certificates(label: "mTLS").count == 1)
        #expect(throws: SecItemError.authFailed) { try keys.importPKCS12(try pki.dir.read("modern.p12"), passphrase: "wrong") }
        #expect(throws: SecItemError.duplicateItem) { try keys.importPKCS12(try pki.dir.read("modern.p12"), passphrase: pki.passphrase) }
        #expect(try keys.removeKeys(tag: "device"))
        #expect(try keys.privateKey(tag: "device") == nil)
        #expect(try !keys.removeKeys(tag: "device"))
    }
}
