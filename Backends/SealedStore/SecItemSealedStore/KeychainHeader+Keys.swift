package import SecItemCore

/// Making a new store's keys, and unlocking an existing store's: the same steps for
/// every backend that keeps sealed rows.
extension KeychainHeader {
    /// A new store's header: a random data key, wrapped under the key-encryption key
    /// `source` makes, and a new ``storeID``. When this throws, what the source stored
    /// for the key is discarded (``KeyEncryptionKey/discard(_:_:_:)``); once it returns,
    /// discarding it if the store is not committed is the caller's.
    /// - Returns: The header to store, the key-encryption key and the row keys.
    package static func forNewStore(_ source: SealedStoreKeySource, _ context: KeySourceContext, format: Int64)
        throws(SecItemError) -> (header: KeychainHeader, kek: KeyEncryptionKey, keys: ItemKeys)
    {
        let kek = try KeyEncryptionKey.forNewWrapping(source, context)
        do throws(SecItemError) {
            let keys = try ItemKeys.generate(format: Int(format))
            var header = KeychainHeader(protection: kek.protection, wrappedDataKey: [], epoch: 1, format: format)
            header.protect(with: kek)
            header.storeID = try newStoreID()
            try header.wrap(keys.dataKey, kek: kek.kek)
            return (header, kek, keys)
        } catch {
            KeyEncryptionKey.discard(kek, source, context)
            throw error
        }
    }

    /// Unlocks a stored header with the key `source` gives for it.
    /// - Returns: The key-encryption key and the codec of the data key it unwrapped.
    /// - Throws: What the source throws; `errSecAuthFailed` when its key does not unwrap
    ///   the data key (`context.store` names the store).
    package func unlock(_ source: SealedStoreKeySource, _ context: KeySourceContext) throws(SecItemError)
        -> (kek: SecretBytes, codec: RowCodec)
    {
        let kek = try KeyEncryptionKey.forExisting(source, context, header: self)
        guard let dataKey = try unwrap(kek: kek.kek) else {
            let what = protection == .passphrase ? "passphrase" : "key"
            throw SecItemError(errSecAuthFailed, "the \(what) does not unlock the keychain \(context.store)")
        }
        return (kek.kek, RowCodec(keys: try ItemKeys(dataKey: dataKey, format: Int(format))))
    }
}
