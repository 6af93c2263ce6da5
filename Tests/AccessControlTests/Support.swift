import Testing
import SecItem
import SecItemCore
import SecItemPolkit
import SecItemMemory
import SecItemSQLite
import SecItemSecretService
import SecItemTestSupport
import Foundation
import SecItemSealedStore

/// The stores the access-control tests run on: the check lives in the core, so
/// each must behave the same.
enum Store: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory
    case file
    /// The real gnome-keyring-daemon of scripts/with-secret-service; a fresh namespace per test.
    case secretService = "secret-service"

    var testDescription: String { rawValue }

    func makeBackend() throws -> any SecItemBackend {
        switch self {
        case .memory:
            return MemoryBackend()
        case .file:
            let dir = Bus.temporaryRoot + "/" + UUID().uuidString
            let key = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
            return try SQLiteBackend(configuration: .init(path: dir + "/keychain.db", keySource: .rawKey(key)))
        case .secretService:
            return try SecretServiceBackend(
                configuration: .init(namespace: "access-\(UUID().uuidString)", timeout: .seconds(20)))
        }
    }
}

/// The private system bus of scripts/with-system-bus and its mocks.
enum Bus {
    static let temporaryRoot: String = {
        let path = NSTemporaryDirectory() + "secitem-access-\(getpid())"
        atexit { try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "secitem-access-\(getpid())") }
        return path
    }()

    /// Skips the test when the mocks are not there (fails under `SECITEM_REQUIRE_SERVICES=1`).
    static func require() throws {
        try TestService.systemBus.require()
    }

    /// A bus where neither polkit nor logind runs.
    static var emptyBusAddress: String {
        get throws {
            try #require(ProcessInfo.processInfo.environment["SECITEM_TEST_EMPTY_BUS_ADDRESS"], "no empty bus")
        }
    }

    /// A mock polkit action answered as `outcome` (see scripts/with-system-bus), unique to one test.
    static func action(_ outcome: String) -> String { "org.secitem.test.\(outcome).\(UUID().uuidString.lowercased())" }

    /// The CheckAuthorization calls the mock polkit received for `action`, as gdbus prints them.
    static func checks(of action: String) throws -> [String] {
        let output = try gdbus([
            "--dest", "org.freedesktop.PolicyKit1", "--object-path", "/org/freedesktop/PolicyKit1/Authority",
            "--method", "org.freedesktop.DBus.Mock.GetMethodCalls", "CheckAuthorization",
        ])
        // Each call's arguments follow its action id (gdbus prints `[(t, [subject, 'action', details, …]), …]`).
        return output.components(separatedBy: "'\(action)'").dropFirst().map { String($0.prefix(while: { $0 != "]" })) }
    }

    /// Sets the LockedHint of a mock logind session.
    static func setLocked(_ locked: Bool, session: String) throws {
        _ = try gdbus([
            "--dest", "org.freedesktop.login1", "--object-path", "/org/freedesktop/login1/session/\(session)",
            "--method", "org.freedesktop.login1.Session.SetLockedHint", locked ? "true" : "false",
        ])
    }

    static func gdbus(_ arguments: [String]) throws -> String {
        let result = try ChildProcess.run(try Executables.which("gdbus"), ["call", "--system"] + arguments)
        try #require(result.status == 0, "gdbus \(arguments.joined(separator: " ")): \(result.stdout)\(result.stderr)")
        return result.stdout
    }
}

/// A client over `store` whose authority asks the mocks.
func client(
    _ backend: any SecItemBackend, action: String = Bus.action("allow"), session: String = "unlocked",
    busAddress: String? = nil
) -> SecItemClient {
    SecItemClient(
        backend: backend, accessGroups: AccessGroups(["test"]),
        accessAuthority: PolkitAccessAuthority(action: action, sessionID: session, busAddress: busAddress))
}

/// A generic password, protected by access-control `flags` when given.
func password(
    _ account: String, service: String = "svc", data: String = "secret", accessible: CFString? = nil,
    flags: AccessControlFlags? = nil
) -> [String: Any] {
    var item: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
        kSecAttrAccount as String: account, kSecValueData as String: Data(data.utf8),
    ]
    if let flags {
        // kSecAttrAccessControl takes only the object; its protection is the item's accessibility.
        item[kSecAttrAccessControl as String] = SecAccessControlCreateWithFlags(
            nil, accessible ?? kSecAttrAccessibleWhenUnlocked, flags, nil)!
    } else if let accessible {
        item[kSecAttrAccessible as String] = accessible
    }
    return item
}

/// A query for one item's data.
func dataQuery(_ account: String, service: String = "svc", extra: [String: Any] = [:]) -> [String: Any] {
    var query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
        kSecAttrAccount as String: account, kSecReturnData as String: true,
    ]
    query.merge(extra) { _, new in new }
    return query
}

/// The status of a throwing call (errSecSuccess when it did not throw).
func status(_ body: () throws(SecItemError) -> Any?) -> OSStatus {
    do {
        _ = try body()
        return errSecSuccess
    } catch {
        return error.status
    }
}
