import Foundation
import SecItemCore
import SecItemMemory

/// The query dictionary parser, with structured input: the bytes are decoded into a few
/// `[String: Any]` dictionaries of plausible keys (every `kSec…` name, sometimes any
/// text) and values (strings, constants, numbers of every bridged type, data, dates,
/// arrays, nested dictionaries, `NSNull`, access controls, persistent references of
/// stored items), then run through `SecItemAdd`/`CopyMatching`/`Update`/`Delete` on a
/// memory backend (which parses them with `ClientRequest.parse`), and through the parser
/// alone in every role.
///
/// Invariants: no crash, whatever the dictionary; a call that fails changes nothing
/// in the store.
enum QueryDictionaryTarget {
    static let target = FuzzTarget(
        name: "query-dictionary",
        summary: "[String: Any] query dictionaries through SecItemAdd/CopyMatching/Update/Delete (memory backend)",
        run: run, seeds: seeds)

    static let groups = ["app.fuzz", "shared.fuzz"]

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        var input = FuzzInput(bytes)
        let backend = MemoryBackend()
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(groups), accessAuthority: HeadlessAccessAuthority())
        var references: [Data] = []
        // Two items to find, change and delete.
        for (service, account) in [("svc", "acct"), ("web", "user")] {
            let added = try? client.addItem([
                SecConstant.kSecClass: SecConstant.kSecClassGenericPassword, SecConstant.kSecAttrService: service,
                SecConstant.kSecAttrAccount: account, SecConstant.kSecValueData: Data("secret".utf8),
                SecConstant.kSecReturnPersistentRef: true,
            ])
            if let reference = added as? Data { references.append(reference) }
        }
        let builder = DictionaryBuilder(references: references)
        for _ in 0..<(1 + input.int(below: 4)) {
            guard !input.isExhausted else { break }
            let operation = input.byte() % 5
            let query = builder.dictionary(&input, depth: 0)
            let before = snapshot(backend)
            var failed = false
            switch operation {
            case 0:
                do { _ = try client.addItem(query) } catch { failed = true }
            case 1:
                do { _ = try client.copyMatchingItems(query) } catch { failed = true }
            case 2:
                let changes = builder.dictionary(&input, depth: 0)
                do { _ = try client.updateItems(query, changes) } catch { failed = true }
            case 3:
                do { _ = try client.deleteItems(query) } catch { failed = true }
            default:
                for role in [Role.add, .search, .modifyQuery, .changes] {
                    _ = try? ClientRequest.parse(query, role: role, itemClass: role == .changes ? .genericPassword : nil)
                }
            }
            if failed {
                FuzzCheck.expect(snapshot(backend) == before, "a failed call changed the store")
            }
        }
    }

    /// Every item in the store, in every group the client may use.
    static func snapshot(_ backend: MemoryBackend) -> Set<StoredItem> {
        var items = Set<StoredItem>()
        for itemClass in ItemClass.allCases {
            let query = ItemQuery(itemClass: itemClass, accessGroups: Set(groups), synchronizable: .any)
            guard let found = try? backend.fetch(matching: query, limit: nil) else { FuzzCheck.fail("the memory backend failed a fetch") }
            items.formUnion(found)
        }
        return items
    }

    /// Builds dictionaries and values from the input.
    struct DictionaryBuilder {
        let references: [Data]

        func dictionary(_ input: inout FuzzInput, depth: Int) -> [String: Any] {
            var out: [String: Any] = [:]
            // Most queries name a class; the fuzzer may still drop or change it.
            if input.byte() % 4 != 0 {
                out[SecConstant.kSecClass] = input.pick([
                    SecConstant.kSecClassGenericPassword, SecConstant.kSecClassInternetPassword, SecConstant.kSecClassCertificate,
                    SecConstant.kSecClassKey, SecConstant.kSecClassIdentity,
                ])
            }
            for _ in 0..<input.int(below: 10) {
                guard !input.isExhausted else { break }
                out[key(&input)] = value(&input, depth: depth)
            }
            return out
        }

        func key(_ input: inout FuzzInput) -> String {
            input.byte() % 16 == 0 ? input.string(max: 12) : input.pick(SecConstantNames.all)
        }

        func value(_ input: inout FuzzInput, depth: Int) -> Any {
            switch input.byte() % 24 {
            case 0, 1, 2: return input.pick(SecConstantNames.all)
            case 3: return NSString(string: input.pick(SecConstantNames.all))
            case 4, 5: return input.string()
            case 6: return Data(input.bytes())
            case 7: return NSData(data: Data(input.bytes()))
            case 8: return input.bool()
            case 9: return Int(truncatingIfNeeded: input.interestingInt64())
            case 10: return input.interestingInt64()
            case 11: return UInt64(bitPattern: input.interestingInt64())
            case 12: return NSNumber(value: input.interestingInt64())
            case 13: return NSNumber(value: input.bool())
            case 14: return Double(bitPattern: input.uint64())
            case 15: return Int32(truncatingIfNeeded: input.interestingInt64())
            case 16: return Date(timeIntervalSinceReferenceDate: Double(input.interestingInt64()))
            case 17: return NSNull()
            case 18:
                let flags = SecAccessControlCreateFlags(rawValue: CFOptionFlags(input.uint64() & 0xC000_C03B))
                let protection = input.pick(SecConstantNames.all)
                return SecAccessControlCreateWithFlags(nil, NSString(string: protection), flags, nil) ?? NSNull()
            case 19:
                return references.isEmpty ? Data() : input.pick(references)
            case 20:
                guard depth < 2 else { return input.string() }
                return (0..<input.int(below: 4)).map { _ in value(&input, depth: depth + 1) }
            case 21:
                guard depth < 2 else { return input.bool() }
                return dictionary(&input, depth: depth + 1)
            case 22: return Optional<String>.none as Any
            default: return Optional(input.pick(SecConstantNames.all)) as Any
            }
        }
    }

    static func seeds() -> [(name: String, bytes: [UInt8])] {
        // Hand-written byte programs: operation, class switch, entries (key index,
        // value kind, value bytes); the fuzzer grows these into real queries.
        func program(_ bytes: [UInt8]) -> [UInt8] { bytes }
        let index = { (name: String) -> UInt8 in UInt8(SecConstantNames.all.firstIndex(of: name)!) }
        return [
            ("add-generic", program([0, 0, 1, 3, index(SecConstant.kSecAttrService), 4, 3, 0x61, 0x62, 0x63,
                index(SecConstant.kSecValueData), 6, 4, 1, 2, 3, 4, index(SecConstant.kSecAttrAccount), 0, 0])),
            ("find-all", program([0, 1, 1, 3, index(SecConstant.kSecMatchLimit), 0, index(SecConstant.kSecMatchLimitAll),
                index(SecConstant.kSecReturnAttributes), 8, 1, index(SecConstant.kSecReturnData), 8, 1])),
            ("update", program([0, 2, 1, 1, index(SecConstant.kSecAttrService), 4, 3, 0x73, 0x76, 0x63,
                1, 1, index(SecConstant.kSecAttrLabel), 4, 2, 0x6C, 0x62])),
            ("delete-ref", program([0, 3, 0, 1, index(SecConstant.kSecValuePersistentRef), 19, 0])),
            ("parse-access-control", program([0, 4, 1, 2, index(SecConstant.kSecAttrAccessControl), 18, 0, 0, 0, 0, 0, 0, 0, 1,
                index(SecConstant.kSecAttrAccessibleWhenUnlocked), index(SecConstant.kSecAttrPort), 12, 1, 80])),
        ]
    }
}
