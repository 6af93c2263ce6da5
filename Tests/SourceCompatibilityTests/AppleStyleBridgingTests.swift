// Runs AppleStyleBridging.swift: it compiles (issue 26) and behaves as on Apple platforms.
import Foundation
import SecItem
import Testing

@Suite("Core Foundation bridging in Apple-style code")
struct AppleStyleBridgingTests {

    @Test("noErr is an OSStatus: a property starts at it, statuses compare with it", arguments: AppleStyleStore.available)
    func noErrIsOSStatus(store: AppleStyleStore) throws {
        try store.with {
            let keychain = StatusKeepingKeychain(service: "com.example.bridging")
            #expect(keychain.lastResultCode == errSecSuccess)
            #expect(keychain.set(Data("one".utf8), forKey: "alice"))
            #expect(keychain.lastResultCode == noErr)
            #expect(isSuccess(keychain.lastResultCode))
            #expect(!isSuccess(errSecItemNotFound))
            let zero: OSStatus = noErr
            #expect(zero == 0)
        }
    }

    @Test("results read as [[AnyHashable: Any]] find kSecAttrAccount by the constant and by its string", arguments: AppleStyleStore.available)
    func anyHashableKeys(store: AppleStyleStore) throws {
        try store.with {
            let keychain = StatusKeepingKeychain(service: "com.example.keys")
            #expect(keychain.set(Data("1".utf8), forKey: "bob"))
            #expect(keychain.set(Data("2".utf8), forKey: "alice"))
            #expect(keychain.allKeys() == ["alice", "bob"])
            #expect(keychain.lastResultCode == noErr)
            #expect(keychain.allKeysByString() == ["alice", "bob"])
            // The equality underneath, both ways, and in a Set.
            #expect(AnyHashable(kSecAttrAccount) == AnyHashable("acct"))
            #expect(AnyHashable("acct") == AnyHashable(kSecAttrAccount))
            #expect(Set<AnyHashable>([kSecAttrAccount, "acct"]).count == 1)
            let literal: [AnyHashable: Any] = [kSecAttrService: "s"]
            #expect(literal["svce"] as? String == "s")
        }
    }

    @Test("an NSDictionary result finds the entry by the constant, by its string, and through CFDictionary", arguments: AppleStyleStore.available)
    func nsDictionaryResult(store: AppleStyleStore) throws {
        try store.with {
            let keychain = StatusKeepingKeychain(service: "com.example.ns")
            #expect(keychain.set(Data("x".utf8), forKey: "carol"))
            let found = account(inResultOf: [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "com.example.ns",
                kSecReturnAttributes as String: true,
            ])
            #expect(found.byConstant == "carol")
            #expect(found.byString == "carol")
            #expect(found.viaCFDictionary == "carol")
        }
    }

    @Test("CFDictionary, NSDictionary and [String: Any] convert into each other")
    func dictionaries() throws {
        let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc", kSecReturnData as String: true]
        let cf = query as CFDictionary
        #expect(serviceOf(cf) == "svc")
        let (conditional, forced) = swiftView(of: cf)
        #expect(conditional?[kSecAttrService as String] as? String == "svc")
        #expect(forced[kSecReturnData as String] as? Bool == true)
        let ns: NSDictionary = ["k": "v"]
        let (cfDictionary, cfArray, cfData) = foundationToCoreFoundation(ns, ["a"], NSData(data: Data([1, 2])))
        #expect(serviceOf(cfDictionary) == nil)
        #expect((cfDictionary as NSDictionary)["k"] as? String == "v")
        #expect((cfArray as NSArray).count == 1)
        #expect((cfData as Data) == Data([1, 2]))
        // A literal keyed by the constants, as a CFDictionary, is read by the same functions.
        #expect(serviceOf([kSecClass: kSecClassGenericPassword, kSecAttrService: "lit"] as CFDictionary) == "lit")
    }

    @Test("CFArray and CFData convert to and from [Any], [String], Data and NSData")
    func arraysAndData() {
        let converted = roundTrips(["group.a", "group.b"], Data([0, 0xFF]))
        #expect(converted.groups == ["group.a", "group.b"])
        #expect(converted.anyGroups.count == 2)
        #expect(converted.bytes == Data([0, 0xFF]))
        #expect(converted.nsBytes.length == 2)
    }

    @Test("a query passed as NSDictionary or CFDictionary is the same query to the keychain", arguments: AppleStyleStore.available)
    func sameQueryEverySpelling(store: AppleStyleStore) throws {
        try store.with {
            let add: NSDictionary = [
                kSecClass: kSecClassGenericPassword, kSecAttrService: "ns", kSecAttrAccount: "dave",
                kSecValueData: Data("pw".utf8),
            ]
            #expect(SecItemAdd(add as CFDictionary, nil) == errSecSuccess)
            #expect(SecItemAdd(add, nil) == errSecDuplicateItem)
            var result: CFTypeRef?
            let search: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "ns",
                kSecReturnData as String: kCFBooleanTrue as Any, kSecMatchLimit as String: kSecMatchLimitOne,
            ]
            #expect(SecItemCopyMatching(search as CFDictionary, &result) == noErr)
            #expect(result as? Data == Data("pw".utf8))
            #expect((result as! CFData) as Data == Data("pw".utf8))
            let which: NSDictionary = [kSecClass: kSecClassGenericPassword, kSecAttrService: "ns"]
            #expect(SecItemUpdate(which, [kSecValueData: Data("new".utf8)] as CFDictionary) == errSecSuccess)
            #expect(SecItemCopyMatching(search as CFDictionary, &result) == noErr)
            #expect(result as? Data == Data("new".utf8))
            #expect(SecItemDelete([kSecClass: kSecClassGenericPassword, kSecAttrService: "ns"] as CFDictionary) == noErr)
        }
    }
}
