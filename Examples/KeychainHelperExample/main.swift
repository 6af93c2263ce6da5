// Keychain code written the way iOS developers write it. On Apple platforms the
// only difference is the import line: `import Security` instead of `import SecItem`.
// Run it with `SECITEM_BACKEND=memory` (or the file backend) and it exits 0 when
// every step behaves as it does on iOS.
import Foundation
import SecItem

// MARK: The classic helper: save (upsert), read, delete.

final class KeychainHelper: Sendable {
    static let standard = KeychainHelper()
    private init() {}

    @discardableResult
    func save(_ data: Data, service: String, account: String) -> Bool {
        let query = [
            kSecClass: kSecClassGenericPassword,
            kSecAttrService: service,
            kSecAttrAccount: account,
        ] as CFDictionary
        let changes = [kSecValueData: data] as CFDictionary
        let status = SecItemUpdate(query, changes)
        if status == errSecItemNotFound {
            let item = [
                kSecClass: kSecClassGenericPassword,
                kSecAttrService: service,
                kSecAttrAccount: account,
                kSecValueData: data,
                kSecAttrAccessible: kSecAttrAccessibleAfterFirstUnlock,
            ] as CFDictionary
            return SecItemAdd(item, nil) == errSecSuccess
        }
        return status == errSecSuccess
    }

    func read(service: String, account: String) -> Data? {
        let query = [
            kSecClass: kSecClassGenericPassword,
            kSecAttrService: service,
            kSecAttrAccount: account,
            kSecReturnData: true,
            kSecMatchLimit: kSecMatchLimitOne,
        ] as CFDictionary
        var result: AnyObject?
        guard SecItemCopyMatching(query, &result) == errSecSuccess else { return nil }
        return result as? Data
    }

    @discardableResult
    func delete(service: String, account: String) -> Bool {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
        ]
        let status = SecItemDelete(query as CFDictionary)
        return status == errSecSuccess || status == errSecItemNotFound
    }

    func save<T: Codable>(_ value: T, service: String, account: String) -> Bool {
        guard let data = try? JSONEncoder().encode(value) else { return false }
        return save(data, service: service, account: account)
    }

    func read<T: Codable>(_ type: T.Type, service: String, account: String) -> T? {
        guard let data = read(service: service, account: account) else { return nil }
        return try? JSONDecoder().decode(type, from: data)
    }
}

// MARK: A token store that tells "not found" from "failed".

struct AuthToken: Codable, Equatable {
    var accessToken: String
    var refreshToken: String
    var expiresAt: Date
}

enum TokenStoreError: Error {
    case unexpectedStatus(OSStatus)
    case badData
}

final class TokenStore {
    private let service = "com.example.auth"
    private let account = "current-user"

    func store(_ token: AuthToken) throws {
        let data = try JSONEncoder().encode(token)
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
        ]
        let status = SecItemUpdate(query as CFDictionary, [kSecValueData as String: data] as CFDictionary)
        switch status {
        case errSecSuccess:
            return
        case errSecItemNotFound:
            query[kSecValueData as String] = data
            query[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            let addStatus = SecItemAdd(query as CFDictionary, nil)
            guard addStatus == errSecSuccess else { throw TokenStoreError.unexpectedStatus(addStatus) }
        default:
            throw TokenStoreError.unexpectedStatus(status)
        }
    }

    /// `nil` when there is no token; throws when the keychain failed.
    func load() throws -> AuthToken? {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
            kSecReturnData as String: kCFBooleanTrue!,
            kSecMatchLimit as String: kSecMatchLimitOne,
        ]
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess else { throw TokenStoreError.unexpectedStatus(status) }
        guard let data = item as? Data else { throw TokenStoreError.badData }
        return try JSONDecoder().decode(AuthToken.self, from: data)
    }

    func clear() {
        SecItemDelete([kSecClass: kSecClassGenericPassword, kSecAttrService: service] as CFDictionary)
    }
}

// MARK: Listing accounts, the way settings screens do.

func allAccounts(service: String) -> [String] {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecReturnAttributes as String: true,
        kSecMatchLimit as String: kSecMatchLimitAll,
    ]
    var result: AnyObject?
    guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess,
          let items = result as? [[String: Any]] else { return [] }
    return items.compactMap { $0[kSecAttrAccount as String] as? String }.sorted()
}

func allPasswords(service: String) -> [Data] {
    let query = [
        kSecClass: kSecClassGenericPassword,
        kSecAttrService: service,
        kSecReturnData: kCFBooleanTrue as Any,
        kSecMatchLimit: kSecMatchLimitAll,
    ] as CFDictionary
    var result: CFTypeRef?
    guard SecItemCopyMatching(query, &result) == errSecSuccess else { return [] }
    return result as? [Data] ?? []
}

// MARK: Run every step and report.

var failures = 0
@MainActor
func check(_ condition: Bool, _ step: String) {
    print("\(condition ? "ok  " : "FAIL") \(step)")
    if !condition { failures += 1 }
}

let helper = KeychainHelper.standard
let service = "com.example.demo"
helper.delete(service: service, account: "alice")
helper.delete(service: service, account: "bob")

check(helper.save(Data("first".utf8), service: service, account: "alice"), "save a password")
check(helper.read(service: service, account: "alice") == Data("first".utf8), "read it back")
check(helper.save(Data("second".utf8), service: service, account: "alice"), "save again (update)")
check(helper.read(service: service, account: "alice") == Data("second".utf8), "read the updated password")
check(helper.save(Data("bob's".utf8), service: service, account: "bob"), "save a second account")
check(allAccounts(service: service) == ["alice", "bob"], "list accounts as [[String: Any]]")
check(Set(allPasswords(service: service)) == [Data("second".utf8), Data("bob's".utf8)], "list passwords as [Data]")

let duplicate: [String: Any] = [
    kSecClass as String: kSecClassGenericPassword,
    kSecAttrService as String: service,
    kSecAttrAccount as String: "alice",
    kSecValueData as String: Data("x".utf8),
]
let duplicateStatus = SecItemAdd(duplicate as CFDictionary, nil)
check(duplicateStatus == errSecDuplicateItem, "adding an existing item is errSecDuplicateItem")
check(SecCopyErrorMessageString(duplicateStatus, nil) == "The specified item already exists in the keychain.", "the status has Apple's message")

check(helper.delete(service: service, account: "alice"), "delete")
check(helper.read(service: service, account: "alice") == nil, "read after delete is nil")
check(helper.delete(service: service, account: "alice"), "delete again counts as done")

struct Profile: Codable, Equatable { var name: String; var plan: String }
check(helper.save(Profile(name: "Ada", plan: "pro"), service: service, account: "profile"), "save a Codable value")
check(helper.read(Profile.self, service: service, account: "profile") == Profile(name: "Ada", plan: "pro"), "read the Codable value")

let tokens = TokenStore()
tokens.clear()
do {
    check(try tokens.load() == nil, "no token yet is nil, not an error")
    let token = AuthToken(accessToken: "access-1", refreshToken: "refresh-1", expiresAt: Date(timeIntervalSince1970: 2_000_000_000))
    try tokens.store(token)
    check(try tokens.load() == token, "store and load a token")
    var renewed = token
    renewed.accessToken = "access-2"
    try tokens.store(renewed)
    check(try tokens.load() == renewed, "replace the token")
    tokens.clear()
    check(try tokens.load() == nil, "cleared")
} catch {
    check(false, "token store threw \(error)")
}
helper.delete(service: service, account: "bob")
helper.delete(service: service, account: "profile")

print(failures == 0 ? "all steps passed" : "\(failures) step(s) failed")
exit(failures == 0 ? 0 : 1)
