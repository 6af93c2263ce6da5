// Keychain code in the usual iOS style that leans on Core Foundation bridging (issue 26):
// `noErr` as an `OSStatus`, CF ⇄ NS ⇄ Swift conversions with as/as?/as!, and result
// dictionaries read with a kSec constant as the key. On an Apple platform this file compiles
// with `import Security` in place of `import SecItem`. `AppleStyleBridgingTests` runs it.
import Foundation
import SecItem

// MARK: noErr is an OSStatus

/// The KeychainSwift shape: the last status kept in a property that starts at `noErr`.
open class StatusKeepingKeychain {
    open var lastResultCode: OSStatus = noErr
    public let service: String

    public init(service: String) {
        self.service = service
    }

    @discardableResult
    open func set(_ value: Data, forKey key: String) -> Bool {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecAttrAccount as String: key, kSecValueData as String: value,
        ]
        SecItemDelete(query as CFDictionary)
        lastResultCode = SecItemAdd(query as CFDictionary, nil)
        return lastResultCode == noErr
    }

    /// KeychainSwift's `allKeys()`: the results read as `[[AnyHashable: Any]]`, keyed by the constant.
    open func allKeys() -> [String] {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecReturnData as String: true, kSecReturnAttributes as String: true,
            kSecMatchLimit as String: kSecMatchLimitAll,
        ]
        var result: AnyObject?
        lastResultCode = withUnsafeMutablePointer(to: &result) { SecItemCopyMatching(query as CFDictionary, UnsafeMutablePointer($0)) }
        guard lastResultCode == noErr, let results = result as? [[AnyHashable: Any]] else { return [] }
        return results.compactMap { $0[kSecAttrAccount] as? String }.sorted()
    }

    /// The same read with `as String` keys.
    open func allKeysByString() -> [String] {
        var result: AnyObject?
        let status = SecItemCopyMatching(
            [kSecClass: kSecClassGenericPassword, kSecAttrService: service, kSecReturnAttributes: true,
             kSecMatchLimit: kSecMatchLimitAll] as CFDictionary, &result)
        guard status == errSecSuccess, let results = result as? [[AnyHashable: Any]] else { return [] }
        return results.compactMap { $0[kSecAttrAccount as String] as? String }.sorted()
    }
}

/// `OSStatus(noErr)`, as code written when `noErr` was an `Int` spells it.
func isSuccess(_ status: OSStatus) -> Bool {
    status == OSStatus(noErr)
}

// MARK: CF ⇄ NS ⇄ Swift

/// The shape of a test double that receives the query as `CFDictionary` and reads it
/// through `NSDictionary` (a mocked `SecItemAdd` in a wrapper's tests).
func serviceOf(_ query: CFDictionary) -> String? {
    (query as NSDictionary).value(forKey: kSecAttrService as String) as? String
}

/// The same query read back as a Swift dictionary, conditionally and by force.
func swiftView(of query: CFDictionary) -> (conditional: [String: Any]?, forced: [String: Any]) {
    (query as? [String: Any], query as! [String: Any])
}

/// NSDictionary → CFDictionary without a cast; NSArray and NSData likewise.
func foundationToCoreFoundation(_ dictionary: NSDictionary, _ array: NSArray, _ data: NSData) -> (CFDictionary, CFArray, CFData) {
    (dictionary as CFDictionary, array as CFArray, data as CFData)
}

/// Swift → CF → Swift for arrays and data.
func roundTrips(_ groups: [String], _ bytes: Data) -> (groups: [String]?, anyGroups: [Any], bytes: Data, nsBytes: NSData) {
    let cfArray = groups as CFArray
    let cfData = bytes as CFData
    return (cfArray as? [String], cfArray as! [Any], cfData as Data, cfData as NSData)
}

/// A search result read through `NSDictionary` subscripts, with the constant and with its string.
func account(inResultOf query: [String: Any]) -> (byConstant: String?, byString: String?, viaCFDictionary: String?) {
    var result: CFTypeRef?
    guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess, let dictionary = result as? NSDictionary else {
        return (nil, nil, nil)
    }
    let cf = dictionary as CFDictionary
    return (
        dictionary[kSecAttrAccount] as? String, dictionary[kSecAttrAccount as String] as? String,
        (cf as NSDictionary).object(forKey: kSecAttrAccount) as? String
    )
}
