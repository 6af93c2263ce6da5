// Keychain code written as Apple developers write it, for iOS and macOS: the idioms of the
// most-used open-source keychain wrappers. On an Apple platform this file compiles with
// `import Security` in place of `import SecItem`; that line is its only difference. The
// target builds with warnings as errors, so "compiles" means zero errors and zero warnings.
// `AppleStyleTests` runs it.
import Foundation
import SecItem

// MARK: Point 5: CFString is a class; String! constants; [String: AnyObject] dictionaries

// The SwiftKeychainWrapper style: the constants kept as String!.
private let SecClass: String! = kSecClass as String
private let SecAttrService: String! = kSecAttrService as String
private let SecAttrAccount: String! = kSecAttrAccount as String
private let SecValueData: String! = kSecValueData as String
private let SecReturnData: String! = kSecReturnData as String
private let SecMatchLimit: String! = kSecMatchLimit as String

/// A wrapper library's public API: its initializer keeps `SecAccessControlCreateFlags?`.
public final class AppleStyleKeychain {
    public enum KeychainError: Error {
        case unhandled(OSStatus)
        case accessControl(Error)
    }

    public let service: String
    public let accessGroup: String?
    public let accessControlFlags: SecAccessControlCreateFlags?

    public init(service: String, accessGroup: String? = nil, accessControlFlags: SecAccessControlCreateFlags? = nil) {
        self.service = service
        self.accessGroup = accessGroup
        self.accessControlFlags = accessControlFlags
    }

    // MARK: The query shapes

    /// `[String: Any]` with `as String` keys, the most common shape.
    func baseQuery(account: String) -> [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
        ]
        if let accessGroup {
            query[kSecAttrAccessGroup as String] = accessGroup
        }
        return query
    }

    /// `[String: AnyObject]`, the older shape: the constants go in without `as AnyObject`.
    func legacyQuery(account: String) -> [String: AnyObject] {
        var query = [String: AnyObject]()
        query[kSecClass as String] = kSecClassGenericPassword
        query[kSecAttrService as String] = service as AnyObject
        query[kSecAttrAccount as String] = account as AnyObject
        query[kSecReturnData as String] = kCFBooleanTrue
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        return query
    }

    /// SwiftKeychainWrapper's shape: a `[String: Any]` keyed by `String!` constants, then
    /// `as CFDictionary`. (A literal of `String!` keys written straight `as CFDictionary` is an
    /// `NSDictionary` literal here, where Swift warns that the keys stay optional; see
    /// docs/secitem-semantics.md, "Core Foundation on Linux".)
    func wrapperStyleSet(_ data: Data, account: String) -> OSStatus {
        let query: [String: Any] = [SecClass: kSecClassGenericPassword, SecAttrService: service, SecAttrAccount: account,
                                    SecValueData: data]
        return SecItemAdd(query as CFDictionary, nil)
    }

    func wrapperStyleGet(account: String) -> Data? {
        let keys: [String: Any] = [SecClass: kSecClassGenericPassword, SecAttrService: service, SecAttrAccount: account,
                                   SecReturnData: kCFBooleanTrue as Any, SecMatchLimit: kSecMatchLimitOne]
        let query = keys as CFDictionary
        var result: AnyObject?
        let status = SecItemCopyMatching(query, &result)
        return status == noErr ? result as? Data : nil
    }

    // MARK: Point 1 and the common calls

    public func set(_ value: String, forKey account: String) throws {
        var query = baseQuery(account: account)
        query[kSecValueData as String] = Data(value.utf8)
        if let accessControlFlags {
            var error: Unmanaged<CFError>?
            guard let access = SecAccessControlCreateWithFlags(
                kCFAllocatorDefault, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, accessControlFlags, &error)
            else {
                throw KeychainError.accessControl(error!.takeRetainedValue() as Error)
            }
            query[kSecAttrAccessControl as String] = access
        } else {
            query[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlock
        }
        var status = SecItemAdd(query as CFDictionary, nil)
        if status == errSecDuplicateItem {
            let update = [kSecValueData as String: Data(value.utf8)]
            status = SecItemUpdate(baseQuery(account: account) as CFDictionary, update as CFDictionary)
        }
        guard status == noErr else { throw KeychainError.unhandled(status) }
    }

    public func string(forKey account: String) throws -> String? {
        var query = baseQuery(account: account)
        query[kSecReturnData as String] = kCFBooleanTrue
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        query[kSecUseNoAuthenticationUI as String] = true
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        switch status {
        case errSecSuccess:
            guard let data = item as? Data else { return nil }
            return String(data: data, encoding: .utf8)
        case errSecItemNotFound:
            return nil
        case errSecInteractionNotAllowed, errSecAuthFailed, errSecInternalComponent, errSecNotAvailable:
            throw KeychainError.unhandled(status)
        default:
            throw KeychainError.unhandled(status)
        }
    }

    /// `kSecReturnAttributes` read back with `as! [String: Any]`.
    public func attributes(forKey account: String) -> [String: Any]? {
        var query = baseQuery(account: account)
        query[kSecReturnAttributes as String] = true
        var result: AnyObject?
        guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess else { return nil }
        return (result as! [String: Any])
    }

    public func legacyData(forKey account: String) -> Data? {
        var result: AnyObject?
        let status = SecItemCopyMatching(legacyQuery(account: account) as CFDictionary, &result)
        return status == noErr ? result as? Data : nil
    }

    /// The CFString-keyed literal.
    public func count() -> Int {
        var result: CFTypeRef?
        let status = SecItemCopyMatching(
            [kSecClass: kSecClassGenericPassword, kSecAttrService: service, kSecMatchLimit: kSecMatchLimitAll,
             kSecReturnAttributes: true] as CFDictionary, &result)
        guard status == errSecSuccess, let items = result as? [[String: Any]] else { return 0 }
        return items.count
    }

    /// A class passed where an `AnyObject` is expected.
    @discardableResult
    public func deleteAll(_ secClass: AnyObject) -> OSStatus {
        let query: [String: AnyObject] = [kSecClass as String: secClass, kSecAttrService as String: service as AnyObject]
        return SecItemDelete(query as CFDictionary)
    }

    public func clear() -> Bool {
        let status = deleteAll(kSecClassGenericPassword)
        return status == noErr || status == errSecItemNotFound
    }

    // MARK: Point 4: messages and random bytes

    public static func message(for status: OSStatus) -> String {
        (SecCopyErrorMessageString(status, nil) as String?) ?? "OSStatus \(status)"
    }

    public static func randomNonce(count: Int = 32) throws -> Data {
        var bytes = [UInt8](repeating: 0, count: count)
        let status = SecRandomCopyBytes(kSecRandomDefault, bytes.count, &bytes)
        guard status == errSecSuccess else { throw KeychainError.unhandled(status) }
        return Data(bytes)
    }
}

// MARK: Point 3: CFError and friends

extension CFError {
    /// The OSStatus a Security error carries.
    var osStatus: OSStatus { OSStatus(CFErrorGetCode(self)) }
}

/// Apple-style error inspection: code, domain and user info through the CF functions.
func describe(_ error: CFError) -> (code: CFIndex, domain: String, description: String?) {
    let code: CFIndex = CFErrorGetCode(error)
    let domain = CFErrorGetDomain(error) as String
    let userInfo = CFErrorCopyUserInfo(error) as? [String: Any]
    return (code, domain, userInfo?[NSLocalizedDescriptionKey] as? String)
}

/// Flags kept as their raw `CFOptionFlags`, as some wrappers persist them.
func storedFlags(_ flags: SecAccessControlCreateFlags) -> CFOptionFlags {
    flags.rawValue
}

/// An allocator parameter, passed through as Apple code does.
func makeAccessControl(
    _ allocator: CFAllocator?, _ flags: SecAccessControlCreateFlags
) -> (SecAccessControl?, Unmanaged<CFError>?) {
    var error: Unmanaged<CFError>?
    let access = SecAccessControlCreateWithFlags(allocator, kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, flags, &error)
    return (access, error)
}
