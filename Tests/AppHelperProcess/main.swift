// A program as a user writes one: `import SecItem`, the global SecItem functions,
// nothing configured in code. The tests copy this executable under several names,
// so each copy is a different application (its identifier derives from its name),
// and run the copies against one store.
//
//   SecItemAppHelper whoami          the application identifier, its source, the groups
//   SecItemAppHelper store TAG       one item of every class, default settings, data from TAG
//   SecItemAppHelper wipe            the iOS sign-out idiom: SecItemDelete([kSecClass: c]) per class
//   SecItemAppHelper dump            every visible item, canonical text (attributes, data, ref in hex)
//   SecItemAppHelper read SVC ACCT   the data of a generic password, hex (exit 44 when not found)
//   SecItemAppHelper bootstrap ID    the documented start-up (bootstrap(applicationIdentifier:)), then whoami
//   SecItemAppHelper problem         before anything else, the process configuration's problem ("none")
import Foundation
import SecItem

func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

func describe(_ value: Any) -> String {
    switch value {
    case let data as Data: return "data:" + hex(data)
    case let string as String: return "string:" + hex(Data(string.utf8))
    case let date as Date: return "date:\(date.timeIntervalSinceReferenceDate.bitPattern)"
    case let number as Int: return "number:\(number)"
    case let number as Int64: return "number:\(number)"
    case let flag as Bool: return "number:\(flag ? 1 : 0)"
    default: return "other:\(value)"
    }
}

let classes = [kSecClassGenericPassword, kSecClassInternetPassword, kSecClassCertificate, kSecClassKey]
let args = Array(CommandLine.arguments.dropFirst())
func fail(_ message: String, _ code: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("SecItemAppHelper: \(message)\n".utf8))
    exit(code)
}

switch args.first {
case "problem":
    // The first thing the program does: no keychain call, no registry, no bootstrap.
    print(SecItemConfiguration.process.problem.map { "\($0)" } ?? "none")
case "bootstrap" where args.count == 2, "whoami":
    do {
        if args.first == "bootstrap" { try SecItemSystem.bootstrap(applicationIdentifier: args[1]) }
        let id = try SecItemSystem.applicationIdentifier()
        let groups = try SecItemSystem.defaultClient().accessGroups.groups
        print("\(id.value)\n\(id.source.rawValue)\n\(groups.joined(separator: ","))")
    } catch {
        fail("\(error)", 2)
    }
case "store" where args.count == 2:
    let tag = args[1]
    let items: [[String: Any]] = [
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "api", kSecAttrAccount as String: "user"],
        [kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "example.com", kSecAttrAccount as String: "user"],
        [kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: "cert", kSecAttrSerialNumber as String: Data([1, 2])],
        [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data("tag".utf8)],
    ]
    for var item in items {
        // Binary data, different per program and class: all byte values, then the tag.
        item[kSecValueData as String] = Data((0...255).map { UInt8($0) }) + Data("\(tag)/\(item[kSecClass as String]!)".utf8)
        let status = SecItemAdd(item as CFDictionary, nil)
        guard status == errSecSuccess else { fail("add \(item[kSecClass as String]!): \(status)") }
    }
case "wipe":
    for itemClass in classes {
        let status = SecItemDelete([kSecClass as String: itemClass] as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { fail("delete \(itemClass): \(status)") }
        print("\(itemClass) \(status)")
    }
case "dump":
    var lines: [String] = []
    for itemClass in classes {
        let query: [String: Any] = [
            kSecClass as String: itemClass, kSecMatchLimit as String: kSecMatchLimitAll,
            kSecAttrSynchronizable as String: kSecAttrSynchronizableAny, kSecReturnAttributes as String: true,
            kSecReturnData as String: true, kSecReturnPersistentRef as String: true,
        ]
        var result: AnyObject?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { continue }
        guard status == errSecSuccess, let items = result as? [[String: Any]] else { fail("search \(itemClass): \(status)") }
        for item in items {
            let fields = item.keys.sorted().map { "\($0)=\(describe(item[$0]!))" }
            lines.append("\(itemClass) " + fields.joined(separator: " "))
        }
    }
    for line in lines.sorted() { print(line) }
case "read" where args.count == 3:
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: args[1],
        kSecAttrAccount as String: args[2], kSecReturnData as String: true,
    ]
    var result: AnyObject?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    if status == errSecItemNotFound { exit(44) }
    guard status == errSecSuccess, let data = result as? Data else { fail("read: \(status)") }
    print(hex(data))
default:
    fail("usage: SecItemAppHelper whoami | store TAG | wipe | dump | read SERVICE ACCOUNT", 2)
}
