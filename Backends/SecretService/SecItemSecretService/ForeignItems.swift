package import SecItemCore
package import Foundation

/// Items other Secret Service clients stored, seen as keychain items
/// (docs/secret-service-mapping.md, "Items other tools stored").
///
/// An item without SecItem's schema is visible when it carries one of the
/// conventional attribute sets, and only to a process entitled to the access
/// group ``accessGroup``:
///
/// | written by | attributes | seen as |
/// |---|---|---|
/// | `secret-tool store … service S account A` | `service`, `account` | generic password: service S, account A, label |
/// | Python keyring, keyring-rs (`org.freedesktop.Secret.Generic`) | `service`, `username` | generic password: service S, account = username, label |
/// | `git-credential-libsecret` (`org.git.Password`) | `protocol`, `server`, `user`, `port`, `object` | internet password: protocol code, server, account = user, port, path = object, auth type `dflt` |
/// | GNOME's `org.gnome.keyring.NetworkPassword` | `protocol`, `server`, `user`, `domain`, `object`, `authtype`, `port` | internet password, security domain = domain |
///
/// An item's `xdg:schema`, when it has one, is its kind (`kSecAttrDescription`), so a
/// reader can tell git's credentials from GNOME's network passwords (GVfs mounts,
/// password dialogs), which carry the same attributes.
///
/// Such an item is read, has its secret updated and is deleted in place: its
/// attributes are never rewritten, so the tool that stored it still finds it.
/// Its identity (and persistent reference) is derived from its D-Bus object path.
package enum ForeignItems {
    /// The access group foreign items are in. Not entitled by default: a process
    /// lists it (`SECITEM_ACCESS_GROUPS=app,org.secitem.foreign`) to see them.
    static let accessGroup = "org.secitem.foreign"

    /// `protocol` values (git's and GNOME's) and their `kSecAttrProtocol` codes.
    static let protocolCodes: [String: String] = [
        "https": SecConstant.kSecAttrProtocolHTTPS, "http": SecConstant.kSecAttrProtocolHTTP,
        "ftp": SecConstant.kSecAttrProtocolFTP, "ftps": SecConstant.kSecAttrProtocolFTPS,
        "imap": SecConstant.kSecAttrProtocolIMAP, "imaps": SecConstant.kSecAttrProtocolIMAPS,
        "smtp": SecConstant.kSecAttrProtocolSMTP, "pop3": SecConstant.kSecAttrProtocolPOP3,
        "pop3s": SecConstant.kSecAttrProtocolPOP3S, "ldap": SecConstant.kSecAttrProtocolLDAP,
        "ldaps": SecConstant.kSecAttrProtocolLDAPS, "nntp": SecConstant.kSecAttrProtocolNNTP,
        "nntps": SecConstant.kSecAttrProtocolNNTPS, "smb": SecConstant.kSecAttrProtocolSMB,
        "socks": SecConstant.kSecAttrProtocolSOCKS, "ssh": SecConstant.kSecAttrProtocolSSH,
        "sftp": SecConstant.kSecAttrProtocolSSH, "afp": SecConstant.kSecAttrProtocolAFP,
        "telnet": SecConstant.kSecAttrProtocolTelnet, "irc": SecConstant.kSecAttrProtocolIRC,
        "ircs": SecConstant.kSecAttrProtocolIRCS, "davs": SecConstant.kSecAttrProtocolHTTPS,
        "dav": SecConstant.kSecAttrProtocolHTTP,
    ]

    /// The keychain item a foreign Secret Service item is seen as, or `nil` when
    /// it is ours (an item, or a file keychain's key) or carries no convention this backend knows.
    package static func item(
        path: String, label: String, attributes: [String: String], created: Date?, modified: Date?, data: Data?
    ) -> StoredItem? {
        let schema = attributes["xdg:schema"]
        // A file keychain's key item (SECITEM_KEY_SOURCE=secret-service), or its rollback mark, is never an item to list or delete.
        if schema == ItemCodec.schemaName || schema == SecretServiceKeySource.schema || schema == SecretServiceMarkWitness.schema {
            return nil
        }
        var values: [String: AttributeValue] = [:]
        let itemClass: ItemClass
        if let server = attributes["server"], let scheme = attributes["protocol"],
            schema == nil || schema == "org.git.Password" || schema == "org.gnome.keyring.NetworkPassword"
        {
            guard let code = protocolCodes[scheme.lowercased()] else { return nil }
            itemClass = .internetPassword
            values[SecConstant.kSecAttrServer] = .string(server)
            values[SecConstant.kSecAttrProtocol] = .string(code)
            values[SecConstant.kSecAttrAccount] = .string(attributes["user"] ?? "")
            values[SecConstant.kSecAttrPath] = .string(attributes["object"] ?? "")
            values[SecConstant.kSecAttrPort] = .number(attributes["port"].flatMap { Int64($0) } ?? 0)
            values[SecConstant.kSecAttrSecurityDomain] = .string(attributes["domain"] ?? "")
            values[SecConstant.kSecAttrAuthenticationType] = .string(SecConstant.kSecAttrAuthenticationTypeDefault)
        } else if let service = attributes["service"], let account = attributes["account"] ?? attributes["username"] {
            itemClass = .genericPassword
            values[SecConstant.kSecAttrService] = .string(service)
            values[SecConstant.kSecAttrAccount] = .string(account)
        } else {
            return nil
        }
        if !label.isEmpty { values[SecConstant.kSecAttrLabel] = .string(label) }
        if let schema, !schema.isEmpty { values[SecConstant.kSecAttrDescription] = .string(schema) }
        values[SecConstant.kSecAttrAccessGroup] = .string(accessGroup)
        values[SecConstant.kSecAttrAccessible] = .string(SecConstant.kSecAttrAccessibleWhenUnlocked)
        values[SecConstant.kSecAttrSynchronizable] = .number(0)
        values[SecConstant.kSecAttrCreationDate] = .date(created ?? Date(timeIntervalSince1970: 0))
        values[SecConstant.kSecAttrModificationDate] = .date(modified ?? created ?? Date(timeIntervalSince1970: 0))
        return StoredItem(itemClass: itemClass, id: id(ofPath: path), attributes: values, data: data)
    }

    /// A stable identity for the item at `path`: a name-based UUID of the path, so a
    /// persistent reference to a foreign item stays valid while the item exists.
    static func id(ofPath path: String) -> UUID {
        // FNV-1a over two seeds: stable across processes and versions (Hasher is not).
        func fnv(_ seed: UInt64) -> UInt64 {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325 ^ seed
            for byte in "org.secitem.foreign:\(path)".utf8 {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01B3
            }
            return hash
        }
        let a = fnv(0).bigEndian
        let b = fnv(0x9E37_79B9_7F4A_7C15).bigEndian
        var bytes = [UInt8](repeating: 0, count: 16)
        withUnsafeBytes(of: a) { bytes.replaceSubrange(0..<8, with: $0) }
        withUnsafeBytes(of: b) { bytes.replaceSubrange(8..<16, with: $0) }
        bytes[6] = (bytes[6] & 0x0F) | 0x80  // version 8: custom
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // RFC 4122 variant
        return UUID(bytes: bytes) ?? UUID()  // always 16 bytes
    }

    /// The Secret Service searches that find the candidates for `query`: one per
    /// convention that can hold items of the query's class (the matcher decides).
    static func searches(for query: ItemQuery) -> [[String: String]] {
        var out: [[String: String]] = []
        func string(_ key: String) -> String? {
            if case .string(let s)? = query.attributes[key], !query.caseInsensitive { return s }
            return nil
        }
        if query.itemClass == nil || query.itemClass == .genericPassword {
            var bySecretTool: [String: String] = [:]
            var byKeyring: [String: String] = [:]
            if let service = string(SecConstant.kSecAttrService) {
                bySecretTool["service"] = service
                byKeyring["service"] = service
            }
            if let account = string(SecConstant.kSecAttrAccount) {
                bySecretTool["account"] = account
                byKeyring["username"] = account
            }
            // A search needs at least one attribute; the convention's key alone is not searchable
            // without a value, so an unconstrained query lists the collection's items once.
            if bySecretTool.isEmpty { out.append([:]) } else {
                out.append(bySecretTool)
                out.append(byKeyring)
            }
        }
        if query.itemClass == nil || query.itemClass == .internetPassword {
            var inet: [String: String] = [:]
            if let server = string(SecConstant.kSecAttrServer) { inet["server"] = server }
            if let account = string(SecConstant.kSecAttrAccount) { inet["user"] = account }
            if !out.contains([:]) { out.append(inet) }
        }
        return out
    }
}
