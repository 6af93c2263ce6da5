import Foundation
import SecItemSecurity

/// A keychain item class (`kSecClass`).
public enum ItemClass: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case genericPassword = "genp"
    case internetPassword = "inet"
    case certificate = "cert"
    case key = "keys"
    /// A certificate paired with the private key of its public key: searched, never stored
    /// as such (an identity's add stores its certificate and its key).
    case identity = "idnt"

    /// The four-letter class name (`genp`, …).
    public var description: String { rawValue }

    /// The class named `name`: `init(rawValue:)` by ``AttributeCode``, without its String compares
    /// (1.2–2.1× faster, Benchmarks/SchemaTricks).
    package init?(name: String) {
        switch Schema.attributeCode(name) {
        case AttributeCode("g", "e", "n", "p"): self = .genericPassword
        case AttributeCode("i", "n", "e", "t"): self = .internetPassword
        case AttributeCode("c", "e", "r", "t"): self = .certificate
        case AttributeCode("k", "e", "y", "s"): self = .key
        case AttributeCode("i", "d", "n", "t"): self = .identity
        default: return nil
        }
        assert(self == ItemClass(rawValue: name))
    }

    /// The class's attribute table (``ClassSchema``); an identity's is its certificate's and key's together.
    package var schema: ClassSchema? {
        switch self {
        case .genericPassword: return Schema.genericPassword
        case .internetPassword: return Schema.internetPassword
        case .certificate: return Schema.certificate
        case .key: return Schema.key
        case .identity: return Schema.identity
        }
    }

    /// The kind of the class's attribute with `code`, or `nil` when the class has
    /// no such attribute: one lookup tells both.
    package func attributeKind(of code: AttributeCode) -> AttributeKind? { schema?.kinds.kind(of: code) }

    /// The class's own primary-key attributes (without `agrp` and `sync`) with their codes and kinds.
    package var classKeyKinds: [KeyAttribute] { schema?.classKeyKinds ?? [] }

    /// ``primaryKeyAttributes`` with their codes and kinds, for building keys without lookups.
    package var primaryKeyKinds: [KeyAttribute] { schema?.primaryKeyKinds ?? [] }

    /// The attribute keys an item of this class may carry (contract §4).
    public var attributeKeys: Set<String> { schema?.attributes ?? [] }

    /// The attributes that make an item unique, in canonical order (contract §3),
    /// including `agrp` and `sync`, which are in every class's primary key.
    public var primaryKeyAttributes: [String] { schema?.primaryKey ?? [] }

    /// ``primaryKeyAttributes`` without `agrp` and `sync`: the class's own key attributes.
    package var classKeyAttributes: [String] { classKeyKinds.map(\.name) }
}

/// One class's attribute table (contract §3–4): the attributes it may carry and
/// their kinds, and its primary key, with what the hot paths look up precomputed.
/// A class, so that ``ItemClass/schema`` hands out one reference instead of
/// copying five collections on every attribute lookup of the parser (3–9 ns
/// instead of 107–198 ns a lookup, Benchmarks/SchemaTricks).
package final class ClassSchema: Sendable {
    /// The attribute keys an item of the class may carry.
    package let attributes: Set<String>
    /// The same keys with their kinds, searched by code (no String hashing on the lookup path).
    package let kinds: AttributeKindTable
    /// The primary key, in canonical order, `agrp` and `sync` included.
    package let primaryKey: [String]
    /// ``primaryKey`` with codes and kinds, so keys are built without lookups.
    package let primaryKeyKinds: [KeyAttribute]
    /// ``primaryKeyKinds`` without `agrp` and `sync` (the class's own key attributes).
    package let classKeyKinds: [KeyAttribute]

    package init(own: Set<String>, primaryKey: [String]) {
        attributes = Schema.common.union(own)
        kinds = AttributeKindTable(attributes)
        self.primaryKey = primaryKey
        primaryKeyKinds = primaryKey.map { (name: $0, code: AttributeCode($0), kind: Schema.kind(of: $0)) }
        classKeyKinds = primaryKeyKinds.filter { $0.code != .accessGroup && $0.code != .synchronizable }
    }
}

/// How an attribute's value is accepted, stored and compared (contract §4).
public enum AttributeKind: Sendable, Hashable {
    /// String, Data or number; returned as given; String and its UTF-8 Data are equal.
    case blob
    /// String (Data is decoded as UTF-8); returned as String.
    case string
    /// One of the `kSecAttrAccessible…` values.
    case access
    /// Data (a String is taken as its UTF-8 bytes); returned as Data.
    case data
    /// Integer, Bool (→ 0/1), or numeric string (→ number); a non-numeric string stays a string.
    case number
    /// Date.
    case date
}

/// The attribute tables of the contract, in one place.
public enum Schema {
    /// The attributes every class carries.
    package static let common: Set<String> = ["agrp", "pdmn", "accc", "sync", "cdat", "mdat", "tkid"]

    /// One table per class (``ItemClass/schema``).
    package static let genericPassword = ClassSchema(
        own: ["acct", "svce", "gena", "desc", "icmt", "crtr", "type", "labl", "invi", "nega", "alis", "scrp", "cusi"],
        primaryKey: ["acct", "svce", "agrp", "sync"])
    package static let internetPassword = ClassSchema(
        own: [
            "acct", "sdmn", "srvr", "ptcl", "atyp", "port", "path", "desc", "icmt", "crtr", "type", "labl", "invi", "nega",
            "alis", "scrp", "cusi",
        ],
        primaryKey: ["acct", "sdmn", "srvr", "ptcl", "atyp", "port", "path", "agrp", "sync"])
    package static let certificate = ClassSchema(
        own: ["ctyp", "cenc", "labl", "alis", "subj", "issr", "slnr", "skid", "pkhh"],
        primaryKey: ["ctyp", "issr", "slnr", "agrp", "sync"])
    package static let key = ClassSchema(
        own: [
            "kcls", "labl", "alis", "perm", "priv", "modi", "klbl", "atag", "crtr", "type", "bsiz", "esiz", "sdat", "edat",
            "sens", "asen", "extr", "next", "encr", "decr", "drve", "sign", "vrfy", "snrc", "vyrc", "wrap", "unwp",
        ],
        primaryKey: ["kcls", "klbl", "atag", "crtr", "type", "bsiz", "esiz", "sdat", "edat", "agrp", "sync"])

    /// An identity's query may name its certificate's and its key's attributes.
    package static let identity = ClassSchema(
        own: certificate.attributes.union(key.attributes).subtracting(common), primaryKey: certificate.primaryKey)

    /// The attributes backends index for lookup (an exact-match constraint on one
    /// narrows a search before the matcher runs), in a fixed order: the file
    /// backend's keyed-hash columns follow it, so changing it is a format change.
    public static let indexedAttributes = ["svce", "acct", "srvr", "labl"]

    package static let blobKeys: Set<String> = [
        "acct", "svce", "labl", "desc", "icmt", "gena", "sdmn", "srvr", "atyp", "path", "atag", "alis",
    ]
    package static let stringKeys: Set<String> = ["agrp", "tkid"]
    package static let dataKeys: Set<String> = ["subj", "issr", "slnr", "skid", "pkhh", "klbl"]
    package static let dateKeys: Set<String> = ["cdat", "mdat", "sdat", "edat"]

    /// Every key's kind, looked up once per attribute on hot paths.
    package static let kinds: [String: AttributeKind] = {
        var table: [String: AttributeKind] = ["pdmn": .access]
        for key in blobKeys { table[key] = .blob }
        for key in stringKeys { table[key] = .string }
        for key in dataKeys { table[key] = .data }
        for key in dateKeys { table[key] = .date }
        return table
    }()

    /// The kind of an attribute key; every key not listed elsewhere is a number.
    public static func kind(of key: String) -> AttributeKind {
        kinds[key] ?? .number
    }

    /// The values `kSecAttrAccessible` accepts.
    public static let accessibilityValues: Set<String> = [
        SecConstant.kSecAttrAccessibleWhenUnlocked, SecConstant.kSecAttrAccessibleAfterFirstUnlock,
        SecConstant.kSecAttrAccessibleAlways, SecConstant.kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
        SecConstant.kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly, SecConstant.kSecAttrAccessibleAlwaysThisDeviceOnly,
        SecConstant.kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly,
    ]

    /// The key's ``AttributeCode`` when it has the shape of an attribute key (four
    /// bytes, none of them the `_` of the reserved prefixes), so that an unknown one
    /// is errSecNoSuchAttr rather than errSecParam; `nil` for any other key.
    package static func attributeCode(_ key: String) -> AttributeCode? {
        guard key.utf8.count == 4 else { return nil }
        // In place (the common case; 1.1–2.4× faster than `withUTF8` on a copy,
        // Benchmarks/SchemaTricks), else from a copy.
        return key.utf8.withContiguousStorageIfAvailable(packAttributeCode) ?? packAttributeCode(Array(key.utf8))
    }

    private static func packAttributeCode(_ bytes: some Sequence<UInt8>) -> AttributeCode? {
        var code: UInt32 = 0
        for byte in bytes {
            guard byte != UInt8(ascii: "_") else { return nil }
            code = code << 8 | UInt32(byte)
        }
        return AttributeCode(rawValue: code)
    }

    /// The value an absent primary-key attribute counts as (contract §3).
    package static func defaultValue(for key: String) -> AttributeValue {
        switch kind(of: key) {
        case .blob, .string, .access: return .string("")
        case .data: return .data(Data())
        case .number: return .number(0)
        case .date: return .date(Date(timeIntervalSinceReferenceDate: 0))
        }
    }
}

/// The attribute codes Apple stores but names only in its private headers
/// (SecItemPriv.h), so the package's code can name them as it names the public ones.
/// Not in ConstantStrings.swift, which is generated from the public constants.
extension SecConstant {
    package static let kSecAttrAlias = "alis"
    package static let kSecAttrScriptCode = "scrp"
    package static let kSecAttrHasCustomIcon = "cusi"
    package static let kSecAttrIsPrivate = "priv"
    package static let kSecAttrIsModifiable = "modi"
    package static let kSecAttrWasAlwaysSensitive = "asen"
    package static let kSecAttrWasNeverExtractable = "next"
    package static let kSecAttrCanSignRecover = "snrc"
    package static let kSecAttrCanVerifyRecover = "vyrc"
}

/// A primary-key attribute: its name, the same as an ``AttributeCode``, and its kind.
package typealias KeyAttribute = (name: String, code: AttributeCode, kind: AttributeKind)

/// An attribute key's four bytes as one big-endian integer (`acct` is 0x61636374):
/// the parser tells keys apart with integer compares instead of String hashing
/// (code + kind lookup 1.7–3.7× faster than a `[String: AttributeKind]`, Benchmarks/SchemaTricks).
package struct AttributeCode: Hashable, Comparable {
    package let rawValue: UInt32

    package static func < (a: AttributeCode, b: AttributeCode) -> Bool { a.rawValue < b.rawValue }

    /// The code of a key known to be attribute-shaped.
    package init(_ key: String) {
        guard let code = Schema.attributeCode(key) else { preconditionFailure("'\(key)' is not attribute-shaped") }
        self = code
    }

    package init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// The code of the four ASCII letters `a`, `b`, `c`, `d` (folded at compile time).
    package init(_ a: Unicode.Scalar, _ b: Unicode.Scalar, _ c: Unicode.Scalar, _ d: Unicode.Scalar) {
        rawValue = UInt32(UInt8(ascii: a)) << 24 | UInt32(UInt8(ascii: b)) << 16 | UInt32(UInt8(ascii: c)) << 8
            | UInt32(UInt8(ascii: d))
    }

    /// `kSecAttrAccessGroup`.
    package static var accessGroup: AttributeCode { AttributeCode("a", "g", "r", "p") }
    /// `kSecAttrSynchronizable`.
    package static var synchronizable: AttributeCode { AttributeCode("s", "y", "n", "c") }
    /// `kSecAttrAccessControl`: a `SecAccessControl`, stored as `pdmn` plus its flags (a number).
    package static var accessControl: AttributeCode { AttributeCode("a", "c", "c", "c") }
    /// `kSecUseDataProtectionKeychain`: attribute-shaped, but not an attribute.
    package static var dataProtectionKeychain: AttributeCode { AttributeCode("n", "l", "e", "g") }
}

/// A set of attribute keys with their kinds, searched by ``AttributeCode``
/// (a binary search over a few dozen integers, no hashing).
package struct AttributeKindTable: Sendable {
    /// Sorted by code.
    private let entries: [(code: AttributeCode, kind: AttributeKind)]

    /// The table of `keys`, each with its kind (``Schema/kind(of:)``).
    package init(_ keys: Set<String>) {
        entries = keys.map { (AttributeCode($0), Schema.kind(of: $0)) }.sorted { $0.code < $1.code }
    }

    /// The kind of the attribute with `code`, or `nil` when it is not in the table.
    package func kind(of code: AttributeCode) -> AttributeKind? {
        entries.withUnsafeBufferPointer { entries in
            var low = 0
            var high = entries.count
            while low < high {
                let mid = (low &+ high) &>> 1
                if entries[mid].code < code { low = mid + 1 } else { high = mid }
            }
            return low < entries.count && entries[low].code == code ? entries[low].kind : nil
        }
    }
}
