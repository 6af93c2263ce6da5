import Testing
import Foundation
import SecItem
import SecItemCore
import SecItemMemory

/// The Apple-compatible surface: spellings that must compile and behave as on Apple platforms.
@Suite("Apple surface")
struct AppleSurfaceTests {
    let client = SecItemClient(backend: MemoryBackend(), accessGroups: AccessGroups(["app"]))

    @Test("CFDictionary literal with CFString keys, kCFBooleanTrue, AnyObject and CFTypeRef results")
    func literalStyles() throws {
        try SecItemClient.withClient(client) {
            let add = [kSecClass: kSecClassGenericPassword, kSecAttrService: "s", kSecAttrAccount: "a",
                       kSecValueData: Data("pw".utf8)] as CFDictionary
            #expect(SecItemAdd(add, nil) == errSecSuccess)
            let q: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "s",
                                    kSecReturnData as String: kCFBooleanTrue!, kSecReturnAttributes as String: kCFBooleanTrue as Any]
            var result: AnyObject?
            #expect(SecItemCopyMatching(q as CFDictionary, &result) == errSecSuccess)
            let dict = try #require(result as? [String: Any])
            #expect(dict[kSecValueData as String] as? Data == Data("pw".utf8))
            #expect(dict[kSecAttrAccount as String] as? String == "a")
            var item: CFTypeRef?
            #expect(SecItemCopyMatching([kSecClass: kSecClassGenericPassword, kSecReturnData: true,
                                         kSecMatchLimit: kSecMatchLimitAll] as CFDictionary, &item) == errSecSuccess)
            #expect(item as? [Data] == [Data("pw".utf8)])
            #expect(SecItemUpdate([kSecClass: kSecClassGenericPassword] as CFDictionary,
                                  [kSecAttrLabel: "L"] as CFDictionary) == errSecSuccess)
            #expect(SecItemDelete([kSecClass: kSecClassGenericPassword, kSecAttrLabel: "L"] as CFDictionary) == errSecSuccess)
            #expect(SecItemDelete([kSecClass: kSecClassGenericPassword] as CFDictionary) == errSecItemNotFound)
        }
    }

    @Test("NSDictionary-style values (NSNumber, NSString, NSData) are accepted")
    func foundationValues() throws {
        let q: [String: Any] = [kSecClass as String: NSString(string: "inet"), kSecAttrServer as String: NSString(string: "h"),
                                kSecAttrPort as String: NSNumber(value: 22), kSecValueData as String: NSData(data: Data([1, 2])),
                                kSecReturnAttributes as String: NSNumber(value: true)]
        var result: AnyObject?
        #expect(client.add(q, &result) == errSecSuccess)
        let dict = try #require(result as? [String: Any])
        #expect(dict[kSecAttrPort as String] as? Int == 22)
    }

    @Test("[String: AnyObject] dictionaries (older KeychainWrapper style) work with `as AnyObject`")
    func anyObjectDictionaries() throws {
        var q = [String: AnyObject]()
        q[kSecClass as String] = kSecClassGenericPassword as AnyObject
        q[kSecAttrService as String] = "svc" as AnyObject
        q[kSecAttrAccount as String] = "acct" as AnyObject
        q[kSecValueData as String] = Data("pw".utf8) as AnyObject
        q[kSecAttrPort as String] = 0 as AnyObject
        #expect(client.add(q as CFDictionary, nil) == errSecNoSuchAttr, "port is not a genp attribute")
        q[kSecAttrPort as String] = nil
        #expect(client.add(q as CFDictionary, nil) == errSecSuccess)
        q[kSecValueData as String] = nil
        q[kSecReturnData as String] = kCFBooleanTrue as AnyObject
        q[kSecMatchLimit as String] = kSecMatchLimitOne as AnyObject
        var result: AnyObject?
        #expect(client.copyMatching(q as CFDictionary, &result) == errSecSuccess)
        #expect(result as? Data == Data("pw".utf8))
    }

    @Test("constants have Apple's string values", arguments: [
        (kSecClass as String, "class"), (kSecClassGenericPassword as String, "genp"), (kSecClassInternetPassword as String, "inet"), (kSecClassKey as String, "keys"),
        (kSecAttrAccessGroup as String, "agrp"), (kSecAttrSynchronizableAny as String, "syna"), (kSecValuePersistentRef as String, "v_PersistentRef"),
        (kSecMatchLimitAll as String, "m_LimitAll"), (kSecUseDataProtectionKeychain as String, "nleg"), (kSecAttrProtocolFTP as String, "ftp "),
        (kSecAttrProtocolHTTPS as String, "htps"), (kSecAttrAuthenticationTypeHTMLForm as String, "form"), (kSecAttrKeyTypeEC as String, "73"),
        (kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly as String, "akpu"), (kSecAttrTokenID as String, "tkid"), (kSecAttrKeyCreator as String, "crtr"),
    ])
    func constantValues(constant: String, value: String) {
        #expect(constant == value)
    }

    @Test("SecCopyErrorMessageString gives Apple's messages and OSStatus <n> for unknown codes")
    func messages() {
        #expect(SecCopyErrorMessageString(errSecItemNotFound, nil) == "The specified item could not be found in the keychain.")
        #expect(SecCopyErrorMessageString(errSecNotAvailable, nil) == "No keychain is available. You may need to restart your computer.")
        #expect(SecCopyErrorMessageString(errSecSuccess, nil) == "No error.")
        #expect(SecCopyErrorMessageString(-12345, nil) == "OSStatus -12345")
        for status in [errSecUnimplemented, errSecIO, errSecParam, errSecAllocate, errSecUserCanceled, errSecBadReq,
                       errSecMissingEntitlement, errSecReadOnly, errSecAuthFailed, errSecNoSuchKeychain, errSecInvalidKeychain,
                       errSecDuplicateItem, errSecNoSuchAttr, errSecInvalidItemRef, errSecNoSuchClass,
                       errSecInteractionNotAllowed, errSecReadOnlyAttr, errSecInteractionRequired, errSecDataNotAvailable, errSecDecode] {
            #expect(SecCopyErrorMessageString(status, nil)?.hasPrefix("OSStatus") == false, "status \(status) has a message")
        }
    }

    @Test("SecItemError is caught by name and its description holds no secret")
    func typedErrors() throws {
        #expect(throws: SecItemError.duplicateItem) {
            try client.addItem([kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "x"])
            try client.addItem([kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "x"])
        }
        do {
            try client.addItem([kSecClass as String: kSecClassGenericPassword, kSecValueData as String: "hunter2-secret"])
            Issue.record("a String for kSecValueData must fail")
        } catch SecItemError.param {
            // expected
        } catch {
            Issue.record("wrong error \(error)")
        }
        let error = SecItemError(errSecParam, "kSecValueData must be Data, not String")
        #expect(error.description.contains("One or more parameters"))
        #expect(error.description.contains("kSecValueData"))
        let value = AttributeValue.string("hunter2-secret")
        #expect(!"\(value)".contains("hunter2"))
    }
}

@Suite("Process configuration")
struct ConfigurationTests {
    @Test("SECITEM_ACCESS_GROUPS sets the entitled groups; the first is the default")
    func accessGroups() {
        #expect(AccessGroups.fromEnvironment(["SECITEM_ACCESS_GROUPS": "a, b,,a"]).groups == ["a", "b"])
        // Nothing configured: exactly one group, the application identifier.
        #expect(AccessGroups.fromEnvironment(["SECITEM_APPLICATION_ID": "com.example.t"]).groups == ["com.example.t"])
        let derived = AccessGroups.fromEnvironment([:]).groups
        #expect(derived.count == 1 && derived[0].hasPrefix(SecItemApplicationIdentifier.executablePrefix), "\(derived)")
        #expect(AccessGroups.fromEnvironment(["SECITEM_ACCESS_GROUPS": "x,y"]).defaultGroup == "x")
    }

    @Test("SECITEM_BACKEND=memory picks one process-wide memory store; an unknown name is errSecParam")
    func backendByName() throws {
        let first = try SecItemBackendChoice.resolve(environment: ["SECITEM_BACKEND": "memory"])
        let second = try SecItemBackendChoice.resolve(environment: ["SECITEM_BACKEND": "memory"])
        #expect(first.backend.kind == .memory)
        #expect((first.backend as? MemoryBackend) === (second.backend as? MemoryBackend))
        #expect(throws: SecItemError.param) { try SecItemBackendChoice.resolve(environment: ["SECITEM_BACKEND": "floppy"]) }
    }

    @Test("a task-local client isolates parallel tasks")
    func taskLocalIsolation() async {
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<8 {
                group.addTask {
                    let client = SecItemClient(backend: MemoryBackend(), accessGroups: AccessGroups(["g"]))
                    await SecItemClient.withClient(client) {
                        let q = [kSecClass: kSecClassGenericPassword, kSecAttrAccount: "shared-name",
                                 kSecValueData: Data("\(i)".utf8)] as CFDictionary
                        #expect(SecItemAdd(q, nil) == errSecSuccess, "each task has its own empty store")
                        await Task.yield()
                        var result: AnyObject?
                        #expect(SecItemCopyMatching([kSecClass: kSecClassGenericPassword, kSecReturnData: true,
                                                     kSecMatchLimit: kSecMatchLimitAll] as CFDictionary, &result) == errSecSuccess)
                        #expect(result as? [Data] == [Data("\(i)".utf8)])
                    }
                }
            }
            await group.waitForAll()
        }
    }
}

@Suite("Memory backend fault injection")
struct FaultInjectionTests {
    @Test("the next call fails once with the chosen status and changes nothing")
    func nextCall() throws {
        let store = MemoryBackend()
        let client = SecItemClient(backend: store, accessGroups: AccessGroups(["g"]))
        let q: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "a"]
        store.injectFault(errSecInteractionNotAllowed)
        #expect(client.add(q, nil) == errSecInteractionNotAllowed)
        #expect(store.count == 0)
        #expect(client.add(q, nil) == errSecSuccess)
        #expect(store.count == 1)
    }

    @Test("a persistent fault on one operation fails every such call until cleared")
    func persistent() throws {
        let store = MemoryBackend()
        let client = SecItemClient(backend: store, accessGroups: AccessGroups(["g"]))
        let q: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "a"]
        #expect(client.add(q, nil) == errSecSuccess)
        store.injectFault(errSecIO, on: [.delete], persistent: true)
        #expect(client.delete(q) == errSecIO)
        #expect(client.delete(q) == errSecIO)
        #expect(client.copyMatching(q, nil) == errSecSuccess, "other operations are unaffected")
        #expect(store.count == 1)
        store.clearFaults()
        #expect(client.delete(q) == errSecSuccess)
    }
}
