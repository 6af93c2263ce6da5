import SecItemCore
import Foundation

/// `kSecAttrAccessControl` (contract §8, "Access control"): only a `SecAccessControl` is
/// accepted; it is stored as the item's accessibility and its flags, and comes back.
enum AccessControlCases {
    static func accessControl(
        _ protection: CFString, _ flags: SecAccessControlCreateFlags, _ c: ConformanceContext
    ) throws -> SecAccessControl {
        var error: Unmanaged<CFError>?
        guard let access = SecAccessControlCreateWithFlags(nil, protection, flags, &error) else {
            throw c.fail("SecAccessControlCreateWithFlags refused a valid combination: \(String(describing: error?.takeRetainedValue()))")
        }
        return access
    }

    static let all: [ConformanceCase] = [
        ConformanceCase("kSecAttrAccessControl: the object is stored as pdmn plus its flags and returned") { c in
            let flags: SecAccessControlCreateFlags = [.biometryCurrentSet, .or, .devicePasscode]
            let access = try accessControl(kSecAttrAccessibleWhenUnlockedThisDeviceOnly, flags, c)
            try c.addGenp("acl", "alice", [kSecAttrAccessControl as String: access])
            let d = try c.attributes(c.genp("acl", "alice"))
            guard let back = d[kSecAttrAccessControl as String] as? SecAccessControl else {
                throw c.fail("kSecReturnAttributes has no SecAccessControl under kSecAttrAccessControl: \(d[kSecAttrAccessControl as String] as Any)")
            }
            try c.expect(back == access, "the returned object has the protection and flags given")
            try c.expect(back.flags == flags && back.flags.rawValue == 1 << 3 | 1 << 14 | 1 << 4, "Apple's bit values")
            try c.expect(d[kSecAttrAccessible as String] as? String == kSecAttrAccessibleWhenUnlockedThisDeviceOnly as String, "the protection is the item's accessibility")
            try c.expect(try c.count([kSecClass as String: kSecClassGenericPassword, kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlockedThisDeviceOnly]) == 1,
                         "the item is found by its accessibility")
            try c.expect(try c.count(c.genp("acl", "alice", [kSecAttrAccessControl as String: access])) == 1,
                         "a search by the same object finds it")
            let other = try accessControl(kSecAttrAccessibleWhenUnlockedThisDeviceOnly, [.devicePasscode], c)
            try c.expect(try c.count(c.genp("acl", "alice", [kSecAttrAccessControl as String: other])) == 0,
                         "a search by other flags does not")
            // An item without access control returns none.
            try c.addGenp("acl", "bob")
            let plain = try c.attributes(c.genp("acl", "bob"))
            try c.expect(plain[kSecAttrAccessControl as String] == nil, "no kSecAttrAccessControl on a plain item")
        },
        ConformanceCase("kSecAttrAccessControl: an update replaces the object; the new one comes back") { c in
            let first = try accessControl(kSecAttrAccessibleAfterFirstUnlock, [.userPresence], c)
            try c.addGenp("acl", "carol", [kSecAttrAccessControl as String: first])
            let second = try accessControl(kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, [.biometryAny], c)
            try c.expectStatus(c.update(c.genp("acl", "carol"), [kSecAttrAccessControl as String: second]), errSecSuccess, "update")
            let d = try c.attributes(c.genp("acl", "carol"))
            try c.expect(d[kSecAttrAccessControl as String] as? SecAccessControl == second, "the new object comes back")
            try c.expect(d[kSecAttrAccessible as String] as? String == kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly as String, "with its protection as accessibility")
        },
        ConformanceCase("kSecAttrAccessControl: a string, a number or Data is errSecParam in every call; nothing changes") { c in
            try c.addGenp("acl", "dave")
            for bad: Any in [kSecAttrAccessibleWhenUnlocked as String, kSecAttrAccessibleWhenUnlocked, 1, Data([1])] {
                try c.expectRejected(errSecParam, "add with kSecAttrAccessControl \(type(of: bad))") {
                    c.add(c.genp("acl", "erin", [kSecAttrAccessControl as String: bad, kSecValueData as String: Data([1])]))
                }
                try c.expectRejected(errSecParam, "search with kSecAttrAccessControl \(type(of: bad))") {
                    c.copy(c.genp("acl", "dave", [kSecAttrAccessControl as String: bad])).0
                }
                try c.expectRejected(errSecParam, "update to kSecAttrAccessControl \(type(of: bad))") {
                    c.update(c.genp("acl", "dave"), [kSecAttrAccessControl as String: bad])
                }
                try c.expectRejected(errSecParam, "delete by kSecAttrAccessControl \(type(of: bad))") {
                    c.delete(c.genp("acl", "dave", [kSecAttrAccessControl as String: bad]))
                }
            }
        },
        ConformanceCase("kSecAttrAccessControl with a kSecAttrAccessible that differs is errSecParam; the same one is fine") { c in
            let access = try accessControl(kSecAttrAccessibleWhenUnlocked, [.devicePasscode], c)
            try c.expectRejected(errSecParam, "conflicting accessibility") {
                c.add(c.genp("acl", "frank", [kSecAttrAccessControl as String: access,
                                               kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock]))
            }
            try c.addGenp("acl", "frank", [kSecAttrAccessControl as String: access,
                                           kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked])
        },
    ]
}
