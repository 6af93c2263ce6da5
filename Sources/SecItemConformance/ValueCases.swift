import SecItemCore
import Foundation

/// Value kinds and coercions (contract §4), odd data.
enum ValueCases {
    static let all: [ConformanceCase] = [
        ConformanceCase("an account given as Data comes back as Data, and a String query finds it") { c in
            try c.expectStatus(c.add([kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc", kSecAttrAccount as String: Data("alice".utf8), kSecValueData as String: Data("pw".utf8)]), errSecSuccess, "add with Data account")
            let d = try c.attributes(c.genp("svc", "alice"))
            try c.expect(d[kSecAttrAccount as String] as? Data == Data("alice".utf8), "Data stays Data")
            try c.expect(d[kSecAttrService as String] as? String == "svc", "String stays String")
            try c.expectStatus(c.add(c.genp("svc", "alice")), errSecDuplicateItem, "String and its UTF-8 Data are the same account")
        },
        ConformanceCase("numbers, Bools and numeric strings; protocol codes stay strings") { c in
            let q: [String: Any] = [
                kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "host", kSecAttrAccount as String: "a",
                kSecAttrPort as String: "8080", kSecAttrProtocol as String: kSecAttrProtocolHTTP,
                kSecAttrIsInvisible as String: true, kSecAttrCreator as String: 0x6170_706C, kSecAttrIsNegative as String: NSNumber(value: false),
            ]
            try c.expectStatus(c.add(q), errSecSuccess, "add inet")
            let d = try c.attributes([kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "host"])
            try c.expect(d[kSecAttrPort as String] as? Int == 8080, "numeric string port becomes the number 8080")
            try c.expect(d[kSecAttrProtocol as String] as? String == "http", "the protocol code stays the string http")
            try c.expect(d[kSecAttrIsInvisible as String] as? Int == 1, "Bool true comes back as the number 1")
            try c.expect(d[kSecAttrIsNegative as String] as? Int == 0, "NSNumber false comes back as 0")
            try c.expect(d[kSecAttrCreator as String] as? Int == 0x6170_706C, "creator code number")
            try c.expect(try c.count([kSecClass as String: kSecClassInternetPassword, kSecAttrPort as String: 8080]) == 1, "a number query matches")
            try c.expect(try c.count([kSecClass as String: kSecClassInternetPassword, kSecAttrIsInvisible as String: 1]) == 1, "1 matches a Bool true")
            try c.expect(try c.count([kSecClass as String: kSecClassInternetPassword, kSecAttrPort as String: 8081]) == 0, "another number does not")
        },
        ConformanceCase("data attributes take Strings as UTF-8; string attributes take UTF-8 Data") { c in
            let key: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecAttrApplicationLabel as String: "label-as-string",
                kSecAttrApplicationTag as String: "tag", kSecAttrAccessGroup as String: Data(ConformanceSuite.entitledGroups[1].utf8),
                kSecAttrStartDate as String: Date(timeIntervalSinceReferenceDate: 12345.5),
            ]
            try c.expectStatus(c.add(key), errSecSuccess, "add key")
            let d = try c.attributes([kSecClass as String: kSecClassKey])
            try c.expect(d[kSecAttrApplicationLabel as String] as? Data == Data("label-as-string".utf8), "klbl comes back as Data")
            try c.expect(d[kSecAttrAccessGroup as String] as? String == ConformanceSuite.entitledGroups[1], "agrp comes back as String")
            try c.expect(d[kSecAttrStartDate as String] as? Date == Date(timeIntervalSinceReferenceDate: 12345.5), "a date round-trips exactly")
            try c.expect(d[kSecAttrEndDate as String] as? Date == Date(timeIntervalSinceReferenceDate: 0), "a missing primary-key date is the zero date")
            try c.expect(d[kSecAttrKeySizeInBits as String] as? Int == 0, "a missing primary-key number is 0")
            try c.expect(try c.count([kSecClass as String: kSecClassKey, kSecAttrApplicationLabel as String: Data("label-as-string".utf8)]) == 1, "Data query on a data attribute")
            try c.expectStatus(c.add([kSecClass as String: kSecClassKey, kSecAttrAccessGroup as String: Data([0xFF, 0xFE])]), errSecParam, "non-UTF-8 access group")
        },
        ConformanceCase("binary data with NUL bytes and every byte value round-trips") { c in
            var bytes = Data((0...255).map { UInt8($0) })
            bytes.append(contentsOf: [0, 0, 0, 0xFF, 0xC3, 0x28])
            try c.addGenp("svc", "binary", data: bytes)
            try c.expect(c.readData("svc", "binary").1 == bytes, "byte-exact")
            let blobAccount = Data([0x00, 0xFF, 0x80, 0x00])
            try c.expectStatus(c.add([kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc", kSecAttrAccount as String: blobAccount]), errSecSuccess, "binary account")
            try c.expect(try c.count([kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: blobAccount]) == 1, "found by binary account")
        },
        ConformanceCase("Unicode and very long attribute values, large data") { c in
            let emoji = "ユーザー🙂\u{301}e\u{0}x"
            let long = String(repeating: "long-service-name/", count: 600)
            let big = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            try c.addGenp(long, emoji, data: big)
            let (status, data) = c.readData(long, emoji)
            try c.expectStatus(status, errSecSuccess, "read long/Unicode")
            try c.expect(data == big, "1 MiB data round-trips")
            let d = try c.attributes(c.genp(long, emoji))
            try c.expect(d[kSecAttrAccount as String] as? String == emoji, "Unicode account round-trips")
            try c.expect(d[kSecAttrService as String] as? String == long, "long service round-trips")
            try c.expectStatus(c.readData(long, "ユーザー🙂e\u{0}x").0, errSecItemNotFound, "byte-exact: no Unicode normalisation")
        },
    ]
}
