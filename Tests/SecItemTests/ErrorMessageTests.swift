import Foundation
import SecItem
import SecItemCore
import SecItemMemory
import Testing

/// Errors Apple code can read (issue 26): `SecCopyErrorMessageString` has Apple's message
/// for every status this package returns, the detail of a failed C-style call is one call
/// away (`SecItemCopyLastError`), and a thrown `SecItemError` reads well through
/// `localizedDescription` and as an `NSError`.
@Suite("Error messages")
struct ErrorMessageTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `errSec…` name → value, read from Status.swift's declarations.
    static func declaredStatuses() throws -> [String: OSStatus] {
        let text = try String(contentsOf: root.appendingPathComponent("Sources/SecItemSecurity/Status.swift"), encoding: .utf8)
        let regex = try NSRegularExpression(pattern: #"public let (errSec\w+): OSStatus = (-?\d+)"#)
        var out: [String: OSStatus] = [:]
        for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            out[String(text[Range(match.range(at: 1), in: text)!])] = OSStatus(text[Range(match.range(at: 2), in: text)!])
        }
        return out
    }

    /// Every `errSec…` name the package's sources use.
    static func usedStatusNames() throws -> Set<String> {
        var names = Set<String>()
        let regex = try NSRegularExpression(pattern: #"\berrSec[A-Z]\w*"#)
        for folder in ["Sources", "Backends"] {
            guard let walker = FileManager.default.enumerator(at: root.appendingPathComponent(folder), includingPropertiesForKeys: nil) else { continue }
            for case let url as URL in walker where url.pathExtension == "swift" {
                let text = try String(contentsOf: url, encoding: .utf8)
                for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    names.insert(String(text[Range(match.range, in: text)!]))
                }
            }
        }
        return names
    }

    @Test("SecCopyErrorMessageString gives Apple's message for every status the sources return")
    func everyStatusHasAMessage() throws {
        let declared = try Self.declaredStatuses()
        let used = try Self.usedStatusNames()
        #expect(declared.count >= 40 && used.count >= 15)
        for name in used.sorted() {
            let status = try #require(declared[name], "\(name) is used but not declared in Status.swift")
            let message = SecCopyErrorMessageString(status, nil) as String?
            #expect(message != nil && message != "OSStatus \(status)", "\(name) has no message")
        }
        #expect(SecCopyErrorMessageString(errSecItemNotFound, nil) as String? == "The specified item could not be found in the keychain.")
        #expect(SecCopyErrorMessageString(12345, nil) as String? == "OSStatus 12345")
    }

    @Test("the detail of a failed SecItemAdd is one call away; a later call replaces it")
    func lastErrorDetail() throws {
        let client = SecItemClient(backend: MemoryBackend(), accessGroups: ["app"])
        try SecItemClient.withClient(client) {
            let oversized: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "a",
                kSecAttrLabel as String: String(repeating: "x", count: 20_000),
            ]
            let status = SecItemAdd(oversized as CFDictionary, nil)
            #expect(status == errSecParam)
            let error = try #require(SecItemCopyLastError(status))
            #expect(CFErrorGetCode(error) == CFIndex(errSecParam))
            #expect(CFErrorGetDomain(error) as String == NSOSStatusErrorDomain)
            let text = error.localizedDescription
            #expect(text.hasPrefix("One or more parameters passed to a function were not valid."))
            #expect(text.contains("labl") || text.contains("kSecAttrLabel"), "names the attribute: \(text)")
            #expect(text.contains("20000") || text.contains("20,000") || text.contains("20 000"), "says the size: \(text)")
            #expect(SecItemCopyLastError(errSecItemNotFound) == nil, "another status: not this error")

            let found = SecItemCopyMatching([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "nobody"] as CFDictionary, nil)
            #expect(found == errSecItemNotFound)
            #expect(SecItemCopyLastError(errSecParam) == nil, "the later call replaced it")
            #expect(SecItemCopyLastError(errSecItemNotFound).map { CFErrorGetCode($0) } == CFIndex(errSecItemNotFound))

            #expect(SecItemAdd([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "ok"] as CFDictionary, nil) == errSecSuccess)
            #expect(SecItemCopyLastError(errSecItemNotFound) == nil, "a success clears it")
        }
    }

    @Test("SecItemError's localizedDescription is Apple's message with the detail; as NSError it is NSOSStatusErrorDomain")
    func localizedDescription() {
        let error: any Error = SecItemError(errSecDuplicateItem, "an item with this service and account exists")
        #expect(error.localizedDescription == "The specified item already exists in the keychain. (-25299): an item with this service and account exists")
        let bare: any Error = SecItemError(errSecItemNotFound)
        #expect(bare.localizedDescription == "The specified item could not be found in the keychain. (-25300)")
        let ns = error as NSError
        #expect(ns.domain == NSOSStatusErrorDomain)
        #expect(ns.code == Int(errSecDuplicateItem))
        #expect(!ns.localizedDescription.contains("could not be completed"))
    }
}
