import Foundation
import SecItemCore
import SecItemSealedStore

/// The keys of an open PostgreSQL keychain: re-reading the header another host changed,
/// the epoch, writing the header, and rotating the data key.
extension PostgreSQLSession {
    /// Re-reads the header after another host changed it: a rotation gives a new
    /// data key under the same key-encryption key; a rekey needs the new key, so
    /// a key file is read again (a replaced key file is picked up). A passphrase
    /// is not kept after opening, so a host opened with one must be reopened with
    /// the new passphrase after a rekey.
    func reloadKeys() throws(SecItemError) {
        let fresh = try readHeader()
        if fresh.epoch == header.epoch { return }
        var kek = self.kek
        var dataKey = try fresh.unwrap(kek: kek)
        if dataKey == nil, configuration.keySource.keyFilePath != nil {
            let resolved = try KeyEncryptionKey.forExisting(
                configuration.keySource, configuration.keyContext, header: fresh)
            kek = resolved.kek
            dataKey = try fresh.unwrap(kek: kek)
        }
        guard let dataKey else {
            throw SecItemError(
                errSecAuthFailed,
                "the PostgreSQL keychain was rekeyed by another host and this host's key does not unlock it; "
                    + "give this host the new key (a passphrase: open the keychain again with the new one)")
        }
        header = fresh
        self.kek = kek
        if !dataKey.equals(codec.keys.dataKey) {
            codec = RowCodec(keys: try ItemKeys(dataKey: dataKey, format: Int(fresh.format)))
        }
    }

    func readHeader() throws(SecItemError) -> KeychainHeader {
        try Self.header(readHeaderValues(), store: configuration.keyContext.store)
    }

    /// The header of a PostgreSQL keychain: the file format's, always format 2,
    /// with this backend's own schema version.
    static func header(_ meta: [String: KeychainHeader.MetaValue], store: String) throws(SecItemError) -> KeychainHeader {
        if case .integer(let version)? = meta["schema"], version > PostgreSQLBackend.schemaVersion {
            throw SecItemError(
                errSecInvalidKeychain,
                "\(store) has schema version \(version), newer than this library supports (\(PostgreSQLBackend.schemaVersion))")
        }
        let header = try KeychainHeader.parse(meta, source: store)
        guard header.format == KeychainHeader.formatVersion else {
            throw SecItemError(errSecInvalidKeychain, "\(store) holds format-\(header.format) rows; PostgreSQL keychains are format \(KeychainHeader.formatVersion)")
        }
        return header
    }

    static func metaValues(_ r: PQResult) -> [String: KeychainHeader.MetaValue] {
        var values: [String: KeychainHeader.MetaValue] = [:]
        for row in 0..<r.rows {
            guard let key = r.text(row, 0) else { continue }
            if let n = r.int64(row, 1) {
                values[key] = .integer(n)
            } else if let b = r.array(row, 2) {
                values[key] = .bytes(b)
            } else if let t = r.text(row, 3) {
                values[key] = .text(t)
            }
        }
        return values
    }

    /// Inside a write: bumps the key epoch (other hosts reload their keys on their
    /// next statement) and returns the header to rewrite.
    func bumpEpoch() throws(SecItemError) -> KeychainHeader {
        let r = try exec(sql.bumpEpoch)
        guard r.rows == 1, let epoch = r.int64(0, 0) else {
            throw SecItemError(errSecInvalidKeychain, "the PostgreSQL keychain lost its key epoch (meta row 'epoch')")
        }
        var bumped = header
        bumped.epoch = epoch
        return bumped
    }

    static func putMeta(
        _ statement: String, _ key: String, _ value: KeychainHeader.MetaValue,
        _ exec: (String, [PQValue]) throws(SecItemError) -> PQResult
    ) throws(SecItemError) {
        let r: PQResult
        switch value {
        case .integer(let n): r = try exec(statement, [.text(key), .int64(n), .null, .null])
        case .bytes(let b): r = try exec(statement, [.text(key), .null, .bytes(b), .null])
        case .text(let t): r = try exec(statement, [.text(key), .null, .null, .text(t)])
        }
        guard r.affected == 1 else {
            throw SecItemError(
                errSecInvalidKeychain,
                "writing the keychain's header row '\(key)' changed \(r.affected) rows: the PostgreSQL keychain's meta table "
                    + "does not behave as secitem created it (a rule or trigger added outside secitem?); nothing was changed")
        }
    }

    /// Inside a write: re-encrypts every row under a new random data key (wrapped
    /// under `newKEK`, or this session's key-encryption key), rebuilds the
    /// commitment under it, and bumps the epoch.
    /// - Throws: `errSecDecode` when a row is damaged: rotation would lose it.
    func rotate(newKEK: KeyEncryptionKey?) throws(SecItemError) {
        var header = try bumpEpoch()
        var scan = try scanAll(maxVersion: commitment.generation)
        // Every item was decrypted: zero their data once the rotation is done or failed.
        defer { for i in scan.items.indices { scan.items[i].item.wipeData() } }
        guard scan.damaged == 0 else {
            throw SecItemError(errSecDecode, "cannot rotate the data key: \(scan.damaged) damaged rows would be lost")
        }
        let newCodec = RowCodec(keys: try ItemKeys.generate(format: Int(KeychainHeader.formatVersion)))
        let version = writeVersion
        var fresh = try reencrypt(scan.items, under: newCodec, version: version, moving: false)
        fresh.generation = version - 1  // the write stamps `version` when it stores the state row
        if let newKEK {
            header.protect(with: newKEK)
            kek = newKEK.kek
        }
        try header.wrap(newCodec.keys.dataKey, kek: kek)
        try writeHeader(header)
        self.header = header
        codec = newCodec
        commitment = fresh
    }
}
