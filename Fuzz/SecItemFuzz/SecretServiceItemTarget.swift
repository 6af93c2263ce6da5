import Foundation
import SecItemCore
import SecItemSecretService

/// The Secret Service item decoder: an item's attributes (any client on the session
/// bus can write an item with any attributes into the user's collection) through
/// `ItemCodec.item(from:data:)` (our schema) and `ForeignItems.item` (other tools').
///
/// Invariants: no crash; an item that decodes encodes to attributes that decode to
/// the same item.
enum SecretServiceItemTarget {
    static let target = FuzzTarget(
        name: "secret-service-item", summary: "Secret Service attributes through ItemCodec.item and ForeignItems.item", run: run,
        seeds: seeds)

    static let names = [
        "xdg:schema", "class", "uuid", "primary-key", "has-data", "secitem-kinds", "secitem-namespace", "username", "service",
        "account", "server", "protocol", "port", "path", "label", "access-group", "synchronizable", "creation-date", "generic",
        "user", "object", "domain", "attr-x", "accessible",
    ]
    static let values = [
        ItemCodec.schemaName, "org.git.Password", "org.gnome.keyring.NetworkPassword", "genp", "inet", "keys", "cert",
        "00112233-4455-6677-8899-AABBCCDDEEFF", "true", "false", "https", "0", "443", "AAEC", "1.5",
    ]
    static let kindKeys = ["svce", "acct", "srvr", "port", "agrp", "sync", "cdat", "gena", "labl", "pdmn", "x", ""]
    static let letters: [Character] = ["s", "S", "d", "D", "n", "N", "t", "T", "x"]

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        var input = FuzzInput(bytes)
        var attributes: [String: String] = [:]
        for _ in 0..<input.int(below: 16) {
            let n = input.byte()
            let name = Int(n) < names.count ? names[Int(n)] : input.string(max: 16)
            if name == "secitem-kinds", input.bool() {
                // A kinds list from known keys and letters (the readable names carry the values).
                attributes[name] = (0..<input.int(below: 6)).map { _ in "\(input.pick(kindKeys))=\(input.pick(letters))" }
                    .joined(separator: ",")
                continue
            }
            let v = input.byte()
            attributes[name] = Int(v) < values.count ? values[Int(v)] : input.string()
        }
        let data: Data? = input.bool() ? Data(input.bytes()) : nil
        if let item = ItemCodec.item(from: attributes, data: data) {
            let encoded = ItemCodec.attributes(of: item, namespace: nil)
            guard let again = ItemCodec.item(from: encoded, data: item.data) else {
                FuzzCheck.fail("a decoded item's own attributes do not decode")
            }
            FuzzCheck.expect(
                again.itemClass == item.itemClass && again.id == item.id && again.data == item.data
                    && sameAttributes(again.attributes, item.attributes),
                "an item changed in a round trip through its Secret Service attributes")
        }
        _ = ForeignItems.item(
            path: "/org/freedesktop/secrets/collection/login/\(input.byte())", label: input.string(max: 16), attributes: attributes,
            created: nil, modified: nil, data: data)
    }

    /// Equal attributes, a date compared by its bits (NaN included).
    static func sameAttributes(_ a: [String: AttributeValue], _ b: [String: AttributeValue]) -> Bool {
        guard a.count == b.count else { return false }
        for (key, value) in a {
            guard let other = b[key] else { return false }
            switch (value, other) {
            case (.date(let x), .date(let y)):
                if x.timeIntervalSinceReferenceDate.bitPattern != y.timeIntervalSinceReferenceDate.bitPattern { return false }
            default:
                if value != other { return false }
            }
        }
        return true
    }

    static func seeds() -> [(name: String, bytes: [UInt8])] {
        let item = StoredItem(
            itemClass: .genericPassword, id: UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF")!,
            attributes: [
                SecConstant.kSecAttrService: .string("svc"), SecConstant.kSecAttrAccount: .string("acct"),
                SecConstant.kSecAttrPort: .number(443), SecConstant.kSecAttrGeneric: .data(Data([0, 255])),
                SecConstant.kSecAttrCreationDate: .date(Date(timeIntervalSinceReferenceDate: 800_000_000.25)),
            ],
            data: Data("secret".utf8))
        // Encoded as the input format: each attribute as (name byte 255 → text; value byte 255 → text).
        func encode(_ attributes: [String: String], data: [UInt8]?) -> [UInt8] {
            var out: [UInt8] = [UInt8(attributes.count)]
            for (name, value) in attributes.sorted(by: { $0.key < $1.key }) {
                if let i = names.firstIndex(of: name) {
                    out.append(UInt8(i))
                } else {
                    out += [255, UInt8(name.utf8.count)] + Array(name.utf8)
                }
                if name == "secitem-kinds" { out.append(0) }  // the value follows as text, not built
                if let i = values.firstIndex(of: value) {
                    out.append(UInt8(i))
                } else {
                    out += [255, UInt8(value.utf8.count)] + Array(value.utf8)
                }
            }
            if let data { out += [1, UInt8(data.count)] + data } else { out.append(0) }
            return out
        }
        return [
            ("own-item", encode(ItemCodec.attributes(of: item, namespace: nil), data: Array("secret".utf8))),
            ("git-item", encode(["xdg:schema": "org.git.Password", "server": "example.com", "protocol": "https", "user": "me"], data: [0x70])),
            ("python-keyring", encode(["service": "svc", "username": "me"], data: nil)),
        ]
    }
}
