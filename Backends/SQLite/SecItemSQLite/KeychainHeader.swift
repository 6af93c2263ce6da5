import SecItemCore

/// How the data key is wrapped: what a file's `meta` table says.
struct KeychainHeader {
    static let magic = "secitem-file-keychain"
    /// The format this library writes; it also reads format 1 (and upgrades it on the first write).
    static let formatVersion: Int64 = 2

    enum Protection: String {
        /// A 256-bit key (raw, key file or generated key file).
        case key
        /// A passphrase through scrypt.
        case passphrase
    }

    var protection: Protection
    var scrypt: ScryptParameters?
    var salt: [UInt8]?
    var wrappedDataKey: [UInt8]
    var epoch: Int64
    /// 1 or 2: how rows, the data key's wrapping and the tables are laid out.
    var format: Int64 = formatVersion

    /// The associated data of the wrapped data key.
    var wrapAAD: [UInt8] {
        var out = Array("secitem-file".utf8)
        out.append(UInt8(truncatingIfNeeded: format))
        out += Array("data-key/\(protection.rawValue)".utf8)
        if let scrypt, let salt {
            out += Array("/\(scrypt.logN)/\(scrypt.r)/\(scrypt.p)/".utf8) + salt
        }
        return out
    }

    /// Reads and checks the `meta` table.
    /// - Throws: `errSecInvalidKeychain` saying whether the file is not a keychain or is newer.
    static func read(_ db: Database) throws(SecItemError) -> KeychainHeader {
        var values: [String: (Int64?, [UInt8]?, String?)] = [:]
        let stmt: Statement
        do {
            stmt = try db.statement("SELECT key, value, typeof(value) FROM meta")
        } catch where error.detail?.contains("no such table") == true {
            throw SecItemError(
                errSecInvalidKeychain, "not a keychain: \(db.path) is an SQLite database without secitem metadata")
        }
        defer { stmt.reset() }
        while try stmt.step(during: "reading the keychain metadata") {
            guard let key = stmt.text(0) else { continue }
            switch stmt.text(2) {
            case "integer": values[key] = (stmt.int64(1), nil, nil)
            case "text": values[key] = (nil, nil, stmt.text(1))
            default: values[key] = (nil, stmt.bytes(1), nil)
            }
        }
        guard values["magic"]?.2 == magic else {
            throw SecItemError(errSecInvalidKeychain, "not a keychain: \(db.path) has no secitem file-keychain marker")
        }
        guard let format = values["format"]?.0 else {
            throw SecItemError(errSecInvalidKeychain, "not a keychain: \(db.path) has no format version")
        }
        guard format <= formatVersion else {
            throw SecItemError(
                errSecInvalidKeychain,
                "\(db.path) is keychain format version \(format), newer than this library supports (\(formatVersion))")
        }
        guard format >= 1, let kind = values["kek"]?.2, let protection = Protection(rawValue: kind),
            let wrapped = values["data_key"]?.1, let epoch = values["epoch"]?.0
        else {
            throw SecItemError(errSecInvalidKeychain, "not a keychain: \(db.path) has incomplete secitem metadata")
        }
        var header = KeychainHeader(protection: protection, wrappedDataKey: wrapped, epoch: epoch, format: format)
        if protection == .passphrase {
            guard let n = values["scrypt_log_n"]?.0, let r = values["scrypt_r"]?.0, let p = values["scrypt_p"]?.0,
                let salt = values["scrypt_salt"]?.1, salt.count >= 16
            else {
                throw SecItemError(errSecInvalidKeychain, "\(db.path) lacks its scrypt parameters")
            }
            let params = ScryptParameters(logN: Int(n), r: Int(r), p: Int(p))
            guard params.isValid else {
                throw SecItemError(errSecInvalidKeychain, "\(db.path) has out-of-range scrypt parameters \(params)")
            }
            header.scrypt = params
            header.salt = salt
        }
        return header
    }

    /// Writes every meta row (inside the caller's transaction).
    func write(_ db: Database) throws(SecItemError) {
        try db.execute("DELETE FROM meta WHERE key LIKE 'scrypt_%'")
        let text = try db.statement("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)")
        func put(_ key: String, _ bind: (Statement) -> Void) throws(SecItemError) {
            text.bind(1, key)
            bind(text)
            try text.run(during: "writing the keychain metadata")
        }
        try put("magic") { $0.bind(2, Self.magic) }
        try put("format") { $0.bind(2, format) }
        try put("kek") { $0.bind(2, protection.rawValue) }
        try put("data_key") { $0.bind(2, wrappedDataKey) }
        try put("epoch") { $0.bind(2, epoch) }
        if let scrypt, let salt {
            try put("scrypt_log_n") { $0.bind(2, Int64(scrypt.logN)) }
            try put("scrypt_r") { $0.bind(2, Int64(scrypt.r)) }
            try put("scrypt_p") { $0.bind(2, Int64(scrypt.p)) }
            try put("scrypt_salt") { $0.bind(2, salt) }
        }
    }

    /// Wraps `dataKey` under `kek` for this header's protection.
    mutating func wrap(_ dataKey: SecretBytes, kek: SecretBytes) throws(SecItemError) {
        let aad = wrapAAD
        wrappedDataKey = try dataKey.withBytes { (p, n) throws(SecItemError) in
            try Crypto.seal(kek, UnsafeBufferPointer(start: p, count: n), aad: aad)
        }
    }

    /// Unwraps the data key, or returns `nil` when `kek` is not the right key.
    func unwrap(kek: SecretBytes) throws(SecItemError) -> SecretBytes? {
        try Crypto.open(kek, wrappedDataKey, aad: wrapAAD) { p in
            p.count == Crypto.keyLength ? SecretBytes(copying: p) : nil
        } ?? nil
    }
}
