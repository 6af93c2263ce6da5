import SecItemCore
import SecItemSealedStore

/// Rewriting the whole file in one write: rotation, rekey, and the upgrade of an older format.
extension SQLiteConnection {
    /// Inside a write transaction: re-encrypts every row under a fresh data key (and
    /// the current format), reads every row back and compares, builds a new
    /// commitment, and wraps the new key under `newKEK` (or the current one).
    /// A format-1 file is upgraded by the same path: rows move to the format-2 table.
    /// `beforeRow` is called before each row is re-encrypted.
    func rewriteEverything(newKEK: KeyEncryptionKey?, beforeRow: SQLiteBackend.RewriteObserver? = nil) throws(SecItemError) {
        var scan = try scanAll()
        // Every item was decrypted: zero their data once the rewrite is done or failed.
        defer { for i in scan.items.indices { scan.items[i].item.wipeData() } }
        guard scan.damaged.isEmpty else {
            throw SecItemError(
                errSecDecode,
                "\(scan.damaged.count) damaged rows would be lost (see `secitem verify`); nothing was changed")
        }
        let upgrading = format < 2  // rows move from format 1's table to sealed_items
        let version = upgrading ? 1 : writeVersion
        let newCodec = RowCodec(keys: try ItemKeys.generate(format: Int(KeychainHeader.fileFormatVersion)))
        if upgrading { try db.execute(KeychainSchema.format2Tables) }
        let count = scan.items.count
        let fresh = try reencrypt(scan.items, under: newCodec, version: version, moving: upgrading) {
            (index: Int) throws(SecItemError) in try beforeRow?(index, count)
        }
        if upgrading { try db.execute("DROP TABLE items") }
        var newHeader = header
        newHeader.format = KeychainHeader.fileFormatVersion
        newHeader.epoch += 1
        if let newKEK { newHeader.protect(with: newKEK) }
        try newHeader.wrap(newCodec.keys.dataKey, kek: newKEK?.kek ?? kek)
        try writeHeader(newHeader)
        // From here on this connection reads with the new keys; `write` restores the
        // old ones if anything below fails and the transaction rolls back.
        header = newHeader
        if let newKEK { kek = newKEK.kek }
        codec = newCodec
        forgetStatements()
        commitment = fresh
        try KeychainSchema.check(db, format: header.format)
        var check = try scanAll()
        defer { for i in check.items.indices { check.items[i].item.wipeData() } }
        // Compared in place (mapped copies would leave short item data behind unwiped).
        var same = check.items.count == scan.items.count
        for i in check.items.indices where same { same = check.items[i].item == scan.items[i].item }
        guard check.damaged.isEmpty, same else {
            throw SecItemError(errSecIO, "the re-encrypted rows did not read back; nothing was changed")
        }
        commitment.generation = version - 1  // writeSteps stamps `version` when it writes the state row
        rowSetChanged = true
        rowsReplaced = true
        knownSchemaVersion = try db.pragma("schema_version")
    }

    /// Inside a write transaction: wraps the same data key under `newKEK` (`rekey
    /// --rewrap-only`): fast, but an old copy plus the old secret still opens new rows.
    func rewrap(_ newKEK: KeyEncryptionKey) throws(SecItemError) {
        var newHeader = header
        newHeader.protect(with: newKEK)
        newHeader.epoch += 1
        try newHeader.wrap(codec.keys.dataKey, kek: newKEK.kek)
        try writeHeader(newHeader)
        header = newHeader
        kek = newKEK.kek
    }
}
