package import SecItemCore

/// How the data key is wrapped: what a file's `meta` table says.
///
/// Store-independent: each store keeps the same keys and values in its own table
/// (``parse(_:source:)`` reads them, ``metaValues`` lists them).
package struct KeychainHeader {
    package static let magic = "secitem-file-keychain"
    /// The row format the PostgreSQL backend writes and requires: format 2 (its
    /// `seq` is not bound into the box; docs/file-format.md says what that leaves open).
    package static let formatVersion: Int64 = 2
    /// The format the file backend writes: 3, format 2 with each row's `seq` (the
    /// order results come in) bound into its sealed box. It also reads formats 1 and 2
    /// (and upgrades them on the first write).
    package static let fileFormatVersion: Int64 = 3
    /// The newest format this library reads.
    package static let newestFormat: Int64 = 3

    /// A `meta` value as a store returns it.
    package enum MetaValue: Equatable {
        case integer(Int64)
        case bytes([UInt8])
        case text(String)

        package var integer: Int64? { if case .integer(let v) = self { v } else { nil } }
        package var bytes: [UInt8]? { if case .bytes(let v) = self { v } else { nil } }
        package var text: String? { if case .text(let v) = self { v } else { nil } }
    }

    /// How the data key is wrapped (a ``KeySource``'s ``KeySource/protection``).
    package typealias Protection = KeyProtection

    package var protection: Protection
    package var scrypt: ScryptParameters?
    package var salt: [UInt8]?
    /// What a key source records beside the wrapped key (meta rows `kek_<name>`: the
    /// Secret Service item's store id, the portal key's salt), bound into the wrapping's
    /// associated data. Empty for the key, key-file and passphrase sources.
    package var parameters: [String: MetaValue] = [:]
    package var wrappedDataKey: [UInt8]
    package var epoch: Int64
    /// 1, 2 or 3: how rows, the data key's wrapping and the tables are laid out.
    package var format: Int64 = formatVersion
    /// 16 random bytes made when the store is created (`store_id`), kept by rekeys and
    /// rotations; `nil` for a store created before it existed. Not authenticated: the
    /// rollback evidence (``RollbackWitness``) keeps it in a mark to notice a store
    /// replaced by another, never trusts it to say which store this is.
    package var storeID: [UInt8]?

    package init(
        protection: Protection, scrypt: ScryptParameters? = nil, salt: [UInt8]? = nil, wrappedDataKey: [UInt8],
        epoch: Int64, format: Int64 = formatVersion
    ) {
        self.protection = protection
        self.scrypt = scrypt
        self.salt = salt
        self.wrappedDataKey = wrappedDataKey
        self.epoch = epoch
        self.format = format
    }

    /// The associated data of the wrapped data key.
    var wrapAAD: [UInt8] {
        var out = Array("secitem-file".utf8)
        out.append(UInt8(truncatingIfNeeded: format))
        out += Array("data-key/\(protection.rawValue)".utf8)
        if let scrypt, let salt {
            out += Array("/\(scrypt.logN)/\(scrypt.r)/\(scrypt.p)/".utf8) + salt
        }
        // Each parameter as /name:kind:length:value (none for the older protections, whose
        // associated data is unchanged).
        for (key, value) in parameters.sorted(by: { $0.key < $1.key }) {
            let (kind, bytes): (String, [UInt8]) =
                switch value {
                case .integer(let v): ("i", Array(String(v).utf8))
                case .text(let v): ("t", Array(v.utf8))
                case .bytes(let v): ("b", v)
                }
            out += Array("/\(key):\(kind):\(bytes.count):".utf8) + bytes
        }
        return out
    }

    /// The prefix of a key source's own `meta` rows (``parameters``).
    package static let parameterPrefix = "kek_"

    /// Takes a new key-encryption key's protection, scrypt parameters and key-source
    /// parameters (a new store, a rekey); the data key is wrapped afterwards.
    package mutating func protect(with kek: KeyEncryptionKey) {
        protection = kek.protection
        scrypt = kek.scrypt
        salt = kek.salt
        parameters = kek.parameters
    }

    /// Checks and reads `meta` values, wherever they were stored (`source` names it in errors).
    /// - Throws: `errSecInvalidKeychain` saying whether the store is not a keychain or is newer.
    package static func parse(_ values: [String: MetaValue], source: String) throws(SecItemError) -> KeychainHeader {
        guard values["magic"]?.text == magic else {
            throw SecItemError(errSecInvalidKeychain, "not a keychain: \(source) has no secitem file-keychain marker")
        }
        guard let format = values["format"]?.integer else {
            throw SecItemError(errSecInvalidKeychain, "not a keychain: \(source) has no format version")
        }
        guard format <= newestFormat else {
            throw SecItemError(
                errSecInvalidKeychain,
                "\(source) is keychain format version \(format), newer than this library supports (\(newestFormat))")
        }
        guard format >= 1, let kind = values["kek"]?.text, case let protection = Protection(rawValue: kind),
            let wrapped = values["data_key"]?.bytes, let epoch = values["epoch"]?.integer
        else {
            throw SecItemError(errSecInvalidKeychain, "not a keychain: \(source) has incomplete secitem metadata")
        }
        guard KeySources.knows(protection) else {
            throw SecItemError(
                errSecNotAvailable,
                "\(source) is protected by the key source \"\(kind)\", which this program does not have "
                    + "(built without the package trait that provides it); nothing was changed")
        }
        var header = KeychainHeader(protection: protection, wrappedDataKey: wrapped, epoch: epoch, format: format)
        for (key, value) in values where key.hasPrefix(parameterPrefix) { header.parameters[key] = value }
        if let id = values["store_id"]?.bytes, id.count == 16 { header.storeID = id }
        if protection == .passphrase {
            guard let n = values["scrypt_log_n"]?.integer, let r = values["scrypt_r"]?.integer,
                let p = values["scrypt_p"]?.integer, let salt = values["scrypt_salt"]?.bytes, salt.count >= 16
            else {
                throw SecItemError(errSecInvalidKeychain, "\(source) lacks its scrypt parameters")
            }
            let params = ScryptParameters(logN: Int(n), r: Int(r), p: Int(p))
            guard params.isValid else {
                throw SecItemError(errSecInvalidKeychain, "\(source) has out-of-range scrypt parameters \(params)")
            }
            header.scrypt = params
            header.salt = salt
        }
        return header
    }

    /// Every `meta` row this header stands for (a passphrase's scrypt rows and a key
    /// source's ``parameters`` included; a store rewriting its header first deletes the
    /// `scrypt_*` and `kek_*` rows).
    package var metaValues: [(key: String, value: MetaValue)] {
        var out: [(key: String, value: MetaValue)] = [
            ("magic", .text(Self.magic)), ("format", .integer(format)), ("kek", .text(protection.rawValue)),
            ("data_key", .bytes(wrappedDataKey)), ("epoch", .integer(epoch)),
        ]
        if let storeID { out.append(("store_id", .bytes(storeID))) }
        if let scrypt, let salt {
            out += [
                ("scrypt_log_n", .integer(Int64(scrypt.logN))), ("scrypt_r", .integer(Int64(scrypt.r))),
                ("scrypt_p", .integer(Int64(scrypt.p))), ("scrypt_salt", .bytes(salt)),
            ]
        }
        out += parameters.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) }
        return out
    }

    /// Wraps `dataKey` under `kek` for this header's protection.
    package mutating func wrap(_ dataKey: SecretBytes, kek: SecretBytes) throws(SecItemError) {
        let aad = wrapAAD
        wrappedDataKey = try dataKey.withBytes { (p, n) throws(SecItemError) in
            try Crypto.seal(kek, UnsafeBufferPointer(start: p, count: n), aad: aad)
        }
    }

    /// A new store's ``storeID``.
    package static func newStoreID() throws(SecItemError) -> [UInt8] {
        try Crypto.randomBytes(16)
    }

    /// Unwraps the data key, or returns `nil` when `kek` is not the right key.
    package func unwrap(kek: SecretBytes) throws(SecItemError) -> SecretBytes? {
        try Crypto.open(kek, wrappedDataKey, aad: wrapAAD) { p in
            p.count == Crypto.keyLength ? SecretBytes(copying: p) : nil
        } ?? nil
    }
}
