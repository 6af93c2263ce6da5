internal import CSecItemLibsecret
package import SecItemCore
package import Foundation

/// How a ``StoredItem`` becomes a Secret Service item and back: the mapping of
/// `docs/secret-service-mapping.md`, in one place.
///
/// Every attribute value is a string (the Secret Service requires valid UTF-8
/// without NUL). A value is written as plain text when its bytes allow it and as
/// base64 otherwise; the attribute `secitem-kinds` records, for every stored
/// attribute, its four-letter key, its kind and whether it is base64, so the
/// typed ``StoredItem`` is recovered exactly.
///
/// The text of a value depends only on the value's canonical bytes (the ones
/// ``ItemQuery/matches(_:)`` compares), so two values the matcher considers equal
/// have the same text and a Secret Service attribute search narrowed by them
/// never misses a match.
package enum ItemCodec {
    /// The `xdg:schema` of every item this backend writes.
    package static let schemaName = "org.secitem.Item"

    enum Reserved {
        static let schema = "xdg:schema"
        static let itemClass = "class"
        static let uuid = "uuid"
        static let primaryKey = "primary-key"
        static let hasData = "has-data"
        static let kinds = "secitem-kinds"
        static let namespace = "secitem-namespace"
        static let username = "username"
    }

    /// Readable Secret Service attribute names for the keychain's four-letter keys.
    static let readableNames: [String: String] = [
        SecConstant.kSecAttrAccessGroup: "access-group",
        SecConstant.kSecAttrAccessible: "accessible",
        SecConstant.kSecAttrAccessControl: "access-control",
        SecConstant.kSecAttrSynchronizable: "synchronizable",
        SecConstant.kSecAttrCreationDate: "creation-date",
        SecConstant.kSecAttrModificationDate: "modification-date",
        SecConstant.kSecAttrTokenID: "token-id",
        SecConstant.kSecAttrAccount: "account",
        SecConstant.kSecAttrService: "service",
        SecConstant.kSecAttrGeneric: "generic",
        SecConstant.kSecAttrDescription: "description",
        SecConstant.kSecAttrComment: "comment",
        SecConstant.kSecAttrCreator: "creator",
        SecConstant.kSecAttrType: "type",
        SecConstant.kSecAttrLabel: "label",
        SecConstant.kSecAttrIsInvisible: "invisible",
        SecConstant.kSecAttrIsNegative: "negative",
        SecConstant.kSecAttrAlias: "alias",
        SecConstant.kSecAttrSecurityDomain: "security-domain",
        SecConstant.kSecAttrServer: "server",
        SecConstant.kSecAttrProtocol: "protocol",
        SecConstant.kSecAttrAuthenticationType: "authentication-type",
        SecConstant.kSecAttrPort: "port",
        SecConstant.kSecAttrPath: "path",
        SecConstant.kSecAttrCertificateType: "certificate-type",
        SecConstant.kSecAttrCertificateEncoding: "certificate-encoding",
        SecConstant.kSecAttrSubject: "subject",
        SecConstant.kSecAttrIssuer: "issuer",
        SecConstant.kSecAttrSerialNumber: "serial-number",
        SecConstant.kSecAttrSubjectKeyID: "subject-key-id",
        SecConstant.kSecAttrPublicKeyHash: "public-key-hash",
        SecConstant.kSecAttrKeyClass: "key-class",
        SecConstant.kSecAttrIsPermanent: "permanent",
        SecConstant.kSecAttrIsPrivate: "private",
        SecConstant.kSecAttrIsModifiable: "modifiable",
        SecConstant.kSecAttrApplicationLabel: "application-label",
        SecConstant.kSecAttrApplicationTag: "application-tag",
        SecConstant.kSecAttrKeySizeInBits: "key-size-in-bits",
        SecConstant.kSecAttrEffectiveKeySize: "effective-key-size",
        SecConstant.kSecAttrStartDate: "start-date",
        SecConstant.kSecAttrEndDate: "end-date",
        SecConstant.kSecAttrIsSensitive: "sensitive",
        SecConstant.kSecAttrWasAlwaysSensitive: "always-sensitive",
        SecConstant.kSecAttrIsExtractable: "extractable",
        SecConstant.kSecAttrWasNeverExtractable: "never-extractable",
        SecConstant.kSecAttrCanEncrypt: "can-encrypt",
        SecConstant.kSecAttrCanDecrypt: "can-decrypt",
        SecConstant.kSecAttrCanDerive: "can-derive",
        SecConstant.kSecAttrCanSign: "can-sign",
        SecConstant.kSecAttrCanVerify: "can-verify",
        SecConstant.kSecAttrCanSignRecover: "can-sign-recover",
        SecConstant.kSecAttrCanVerifyRecover: "can-verify-recover",
        SecConstant.kSecAttrCanWrap: "can-wrap",
        SecConstant.kSecAttrCanUnwrap: "can-unwrap",
    ]

    /// The Secret Service attribute name of a keychain attribute key.
    static func readableName(_ key: String) -> String {
        readableNames[key] ?? "attr-\(key)"
    }

    // MARK: Values

    /// The attribute text of a value, and whether it is base64.
    static func text(_ value: AttributeValue, key: String) -> (text: String, base64: Bool) {
        if case .date(let date) = value {
            // Swift prints the shortest text that parses back to the same Double.
            return ("\(date.timeIntervalSinceReferenceDate)", false)
        }
        let payload = value.canonicalBytes(kind: Schema.kind(of: key)).dropFirst()
        if !payload.contains(0), let plain = String(validating: payload, as: UTF8.self) {
            return (plain, false)
        }
        return (Data(payload).base64EncodedString(), true)
    }

    private static func kindLetter(_ value: AttributeValue) -> Character {
        switch value {
        case .string: return "s"
        case .data: return "d"
        case .number: return "n"
        case .date: return "t"
        }
    }

    private static func decodeValue(kind: Character, text: String) -> AttributeValue? {
        let base64 = kind.isUppercase
        let bytes: Data
        if base64 {
            guard let decoded = Data(base64Encoded: text) else { return nil }
            bytes = decoded
        } else {
            bytes = Data(text.utf8)
        }
        switch kind.lowercased() {
        case "s":
            guard let s = String(validating: bytes, as: UTF8.self) else { return nil }
            return .string(s)
        case "d":
            return .data(bytes)
        case "n":
            guard let n = Int64(text) else { return nil }
            return .number(n)
        case "t":
            guard let t = Double(text) else { return nil }
            return .date(Date(timeIntervalSinceReferenceDate: t))
        default:
            return nil
        }
    }

    // MARK: Items

    /// The Secret Service attributes of `item`.
    package static func attributes(of item: StoredItem, namespace: String?) -> [String: String] {
        var out: [String: String] = [
            Reserved.schema: schemaName,
            Reserved.itemClass: item.itemClass.rawValue,
            Reserved.uuid: item.id.uuidString,
            Reserved.primaryKey: primaryKeyHash(item.primaryKey, namespace: namespace),
            Reserved.hasData: item.data == nil ? "false" : "true",
        ]
        if let namespace { out[Reserved.namespace] = namespace }
        var kinds: [String] = []
        for key in item.attributes.keys.sorted() {
            guard let value = item.attributes[key], !key.contains(","), !key.contains("=") else { continue }
            let (text, base64) = text(value, key: key)
            let letter = kindLetter(value)
            kinds.append("\(key)=\(base64 ? Character(letter.uppercased()) : letter)")
            out[readableName(key)] = text
            // Python keyring looks items up by `service` and `username`.
            if key == SecConstant.kSecAttrAccount, !base64 { out[Reserved.username] = text }
        }
        out[Reserved.kinds] = kinds.joined(separator: ",")
        return out
    }

    /// The item the attributes describe, or `nil` when they are not one of ours
    /// (another schema, or damaged).
    package static func item(from attributes: [String: String], data: Data?) -> StoredItem? {
        guard attributes[Reserved.schema] == schemaName,
            let cls = attributes[Reserved.itemClass].flatMap(ItemClass.init(rawValue:)),
            let id = attributes[Reserved.uuid].flatMap(UUID.init(uuidString:)),
            let kinds = attributes[Reserved.kinds]
        else { return nil }
        var values: [String: AttributeValue] = [:]
        for entry in kinds.split(separator: ",") {
            let parts = entry.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[1].count == 1, let letter = parts[1].first else { return nil }
            let key = String(parts[0])
            guard let text = attributes[readableName(key)], let value = decodeValue(kind: letter, text: text) else {
                return nil
            }
            values[key] = value
        }
        let hasData = attributes[Reserved.hasData] != "false"
        return StoredItem(itemClass: cls, id: id, attributes: values, data: hasData ? (data ?? Data()) : nil)
    }

    /// Whether the item's `has-data` marker says it carries a secret.
    static func hasData(_ attributes: [String: String]) -> Bool {
        attributes[Reserved.hasData] != "false"
    }

    /// The Secret Service label: `kSecAttrLabel` when set, else "service (account)"
    /// or "server (account)", else the class.
    static func label(of item: StoredItem) -> String {
        func readable(_ key: String) -> String? {
            guard let value = item.attributes[key] else { return nil }
            let s: String
            switch value {
            case .string(let string): s = string
            case .data(let data): s = String(decoding: data, as: UTF8.self)
            case .number(let n): s = String(n)
            case .date: return nil
            }
            let clean = s.replacingOccurrences(of: "\0", with: "")
            return clean.isEmpty ? nil : clean
        }
        if let label = readable(SecConstant.kSecAttrLabel) { return label }
        let main = readable(SecConstant.kSecAttrService) ?? readable(SecConstant.kSecAttrServer)
        let account = readable(SecConstant.kSecAttrAccount)
        switch (main, account) {
        case (let m?, let a?): return "\(m) (\(a))"
        case (let m?, nil): return m
        case (nil, let a?): return "(\(a))"
        case (nil, nil):
            switch item.itemClass {
            case .genericPassword: return "Generic password"
            case .internetPassword: return "Internet password"
            case .certificate: return "Certificate"
            case .key: return "Key"
            case .identity: return "Identity"
            }
        }
    }

    /// SHA-256 (hex) of a primary key's canonical bytes, preceded in a namespaced
    /// store by `secitem-namespace` NUL namespace NUL: equal keys in the same
    /// store, equal hashes; a key's hash in one namespace (or none) never equals
    /// a hash in another (key bytes start with the class code, never with "s"),
    /// so a search by hash alone finds exactly the store's holders of the key.
    static func primaryKeyHash(_ key: PrimaryKey, namespace: String?) -> String {
        let bytes = namespace.map { Array("\(Reserved.namespace)\u{0}\($0)\u{0}".utf8) + key.bytes } ?? key.bytes
        return bytes.withUnsafeBytes { raw -> String in
            let base = raw.bindMemory(to: guchar.self).baseAddress
            guard let hex = g_compute_checksum_for_data(G_CHECKSUM_SHA256, base, gsize(raw.count)) else { return "" }
            defer { g_free(hex) }
            return String(cString: hex)
        }
    }

    // MARK: Search

    /// The attributes to narrow a Secret Service search for `query`: only ones
    /// every matching item is sure to carry with exactly this text.
    static func searchAttributes(for query: ItemQuery, namespace: String?) -> [String: String] {
        var out: [String: String] = [Reserved.schema: schemaName]
        if let namespace { out[Reserved.namespace] = namespace }
        if let cls = query.itemClass { out[Reserved.itemClass] = cls.rawValue }
        if let id = query.persistentReferenceID { out[Reserved.uuid] = id.uuidString }
        if !query.coversEveryAccessGroup, query.accessGroups.count == 1, let group = query.accessGroups.first {
            out[readableName(SecConstant.kSecAttrAccessGroup)] = text(.string(group), key: SecConstant.kSecAttrAccessGroup).text
        }
        switch query.synchronizable {
        case .no: out[readableName(SecConstant.kSecAttrSynchronizable)] = "0"
        case .yes: out[readableName(SecConstant.kSecAttrSynchronizable)] = "1"
        case .any: break
        }
        for (key, value) in query.attributes {
            let kind = Schema.kind(of: key)
            if query.caseInsensitive && (kind == .blob || kind == .string) { continue }
            out[readableName(key)] = text(value, key: key).text
        }
        return out
    }

    /// The search for items holding primary key `key`.
    static func primaryKeySearch(_ key: PrimaryKey, namespace: String?) -> [String: String] {
        var out: [String: String] = [Reserved.schema: schemaName, Reserved.primaryKey: primaryKeyHash(key, namespace: namespace)]
        if let namespace { out[Reserved.namespace] = namespace }
        return out
    }
}
