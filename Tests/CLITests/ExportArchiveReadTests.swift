import Foundation
import SecItemCore
import SecItemTools
import Testing

@Suite("ExportArchive.read: a plaintext export only with an explicit opt-in")
struct ExportArchiveReadTests {
    /// A plaintext export of one generic password, written by the library itself.
    static func plaintextArchive(_ directory: String) throws -> String {
        let path = directory + "/plain.json"
        let now = Date()
        let item = StoredItem(
            itemClass: .genericPassword, id: UUID(),
            attributes: [
                SecConstant.kSecAttrService: .string("api"), SecConstant.kSecAttrAccount: .string("planted"),
                SecConstant.kSecAttrAccessGroup: .string("app"), SecConstant.kSecAttrSynchronizable: .number(0),
                SecConstant.kSecAttrAccessible: .string(SecConstant.kSecAttrAccessibleWhenUnlocked),
                SecConstant.kSecAttrCreationDate: .date(now), SecConstant.kSecAttrModificationDate: .date(now),
            ],
            data: Data("attacker-chosen".utf8))
        try ExportArchive.write([item], to: path, passphrase: nil)
        return path
    }

    static func directory() -> String {
        var template = Array("/tmp/secitem-export-read-XXXXXX".utf8CString)
        return String(cString: template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!)! })
    }

    @Test("read(from:) refuses a plaintext (JSON) export: errSecDecode, the passphrase never asked")
    func plaintextRefusedByDefault() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.plaintextArchive(dir)
        var asked = false
        var status: OSStatus = errSecSuccess
        var message = ""
        do {
            let items = try ExportArchive.read(from: path) { () throws(SecItemError) in
                asked = true
                return Passphrase("export passphrase")
            }
            Issue.record("a plaintext export was read without an opt-in: \(items.count) items")
        } catch {
            status = error.status
            message = error.description
        }
        #expect(status == errSecDecode)
        #expect(message.contains("plaintext"), "\(message)")
        #expect(!asked)
    }

    @Test("read(from:allowPlaintext: true) reads the plaintext export")
    func plaintextWithOptIn() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.plaintextArchive(dir)
        let items = try ExportArchive.read(from: path, allowPlaintext: true) { () throws(SecItemError) in
            Passphrase("export passphrase")
        }
        #expect(items.count == 1)
        #expect(items.first?.data == Data("attacker-chosen".utf8))
    }
}
