internal import CSecItemCrypto
internal import CSecItemKeyring
package import SecItemCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The session key cache: key-encryption keys that are slow to derive (a passphrase's
/// scrypt, about 0.1 s) kept in the kernel for a while after a process derived them, so
/// that a script calling `secitem` a hundred times pays the derivation once, as
/// ssh-agent spares typing a key's passphrase again.
///
/// - **Where**: the kernel's keyring of the calling user (`@u`, keyrings(7)), as one
///   `user` key per store. Not the session keyring: a process started without a login
///   session's keyring (cron, a container, CI, a `systemd` service, `su`) gets a new
///   empty one of its own, so nothing would be shared between two calls of a script;
///   every process of the user reaches the user keyring. The key never touches a file,
///   and kernel key payloads are never swapped out.
/// - **Who can read it**: possessor and user permissions only, no group and no other
///   (another user id, `nobody` included, can neither read nor find it); root can.
/// - **How long**: `timeout` seconds from the derivation (`SECITEM_KEY_CACHE_TIMEOUT`,
///   default ``defaultTimeout``; 0 turns the cache off); a hit does not extend it.
///   The kernel then refuses the key and collects it.
/// - **Its name**: ``prefix`` and 32 hex digits of an HMAC-SHA256 over the store's
///   identity and everything its header binds into the wrapping of the data key (format,
///   protection, scrypt parameters and salt): a rekeyed store (a new salt), or another
///   store, never finds the key of an older one. The name reveals neither.
/// - **Its payload**: a version byte, the key, and a proof:
///   HKDF-SHA256(passphrase, salt: key, info: name). A cached key opens the store only
///   for the passphrase that derived it, so a wrong passphrase is refused as it always
///   was (it runs scrypt, and fails).
///
/// Best effort throughout: a kernel without keyrings, a seccomp filter that refuses
/// them, a full key quota mean no cache, never an error. A cached key that does not
/// unwrap the store's data key is dropped and the key derived again.
package enum SessionKeyCache {
    /// What every cached key's name starts with (`secitem lock` drops them all).
    package static let prefix = "secitem:kek:v1:"
    /// The timeout when `SECITEM_KEY_CACHE_TIMEOUT` (`key-cache-timeout`) is not set: 300 s.
    package static let defaultTimeout = 300
    /// The longest timeout a setting may ask for: a week.
    package static let maximumTimeout = 604_800

    private static let version: UInt8 = 1
    private static let payloadLength = 1 + Crypto.keyLength + 32

    // MARK: Opening a store

    /// The key that opens the store with `header`: from the cache when it holds one that
    /// `source`'s secret proves and that unwraps the header's data key, else derived by
    /// `source` (and then cached).
    static func existingKey(_ source: any KeySource, _ header: KeychainHeader, _ context: KeySourceContext)
        throws(SecItemError) -> KeyEncryptionKey
    {
        let name = name(store: context.store, header: header)
        // nil: the source keeps its keys out of the cache; .some(nil): a miss.
        let cached: SecretBytes?? = source.withSessionCacheProof { proof in lookup(name, proof: proof) }
        guard let cached else { return try source.existingKey(header, context) }
        if let kek = cached {
            if (try? header.unwrap(kek: kek)) ?? nil != nil {
                return KeyEncryptionKey(
                    kek: kek, protection: header.protection, scrypt: header.scrypt, salt: header.salt,
                    parameters: header.parameters)
            }
            _ = csecitem_keyring_drop(name)  // stale or damaged: derive again
        }
        let derived = try source.existingKey(header, context)
        if (try? header.unwrap(kek: derived.kek)) ?? nil != nil {
            source.withSessionCacheProof { proof in store(name, kek: derived.kek, proof: proof, timeout: context.keyCacheTimeout) }
        }
        return derived
    }

    // MARK: The keys

    /// The name of the cached key of `store` with `header`.
    package static func name(store: String, header: KeychainHeader) -> String {
        let label = Array("secitem key cache v1".utf8)
        let message = Array(store.utf8) + [0] + header.wrapAAD
        var mac = [UInt8](repeating: 0, count: 32)
        _ = label.withUnsafeBufferPointer { l in
            message.withUnsafeBufferPointer { m in
                mac.withUnsafeMutableBufferPointer { csecitem_hmac_sha256(l.baseAddress, l.count, m.baseAddress, m.count, $0.baseAddress) }
            }
        }
        return prefix + mac.prefix(16).map { String($0, radix: 16, uppercase: false).leftPadded }.joined()
    }

    /// The key cached under `name`, when there is one and `proof` proves it.
    package static func lookup(_ name: String, proof: UnsafeRawBufferPointer) -> SecretBytes? {
        var length = 0
        let payload = SecretBytes(count: payloadLength) { out in
            length = csecitem_keyring_read(name, out, payloadLength)
        }
        guard length == payloadLength else {
            if length > 0 { _ = csecitem_keyring_drop(name) }  // not ours, or another version
            return nil
        }
        return payload.withBytes { p, n in decode(UnsafeBufferPointer(start: p, count: n), name: name, proof: proof) }
    }

    /// The key a cached payload holds (a version byte, the key, the proof), when it is
    /// one and `proof` proves it; `nil` for any other bytes.
    package static func decode(_ payload: UnsafeBufferPointer<UInt8>, name: String, proof: UnsafeRawBufferPointer) -> SecretBytes? {
        guard payload.count == payloadLength, let p = payload.baseAddress, p[0] == version else { return nil }
        let kek = SecretBytes(copying: UnsafeBufferPointer(start: p + 1, count: Crypto.keyLength))
        let tag = SecretBytes(copying: UnsafeBufferPointer(start: p + 1 + Crypto.keyLength, count: 32))
        guard let expected = self.proof(name, kek: kek, secret: proof), expected.equals(tag) else { return nil }
        return kek
    }

    /// The payload that caches `kek` (``Crypto/keyLength`` bytes, else `nil`) under `name` for the secret `proof`.
    package static func payload(_ name: String, kek: SecretBytes, proof: UnsafeRawBufferPointer) -> SecretBytes? {
        guard kek.count == Crypto.keyLength, let tag = self.proof(name, kek: kek, secret: proof) else { return nil }
        return SecretBytes(count: payloadLength) { out in
            out[0] = version
            kek.withBytes { k, n in (out + 1).update(from: k, count: n) }
            tag.withBytes { t, n in (out + 1 + Crypto.keyLength).update(from: t, count: n) }
        }
    }

    /// Caches `kek` under `name` for `timeout` seconds (nothing when 0 or on any failure).
    package static func store(_ name: String, kek: SecretBytes, proof: UnsafeRawBufferPointer, timeout: Int) {
        guard timeout > 0, let payload = payload(name, kek: kek, proof: proof) else { return }
        payload.withBytes { p, n in
            _ = csecitem_keyring_store(name, p, n, UInt32(clamping: min(timeout, maximumTimeout)))
        }
    }

    /// HKDF-SHA256(secret, salt: kek, info: name): what ties a cached key to the secret
    /// that derived it.
    private static func proof(_ name: String, kek: SecretBytes, secret: UnsafeRawBufferPointer) -> SecretBytes? {
        let info = Array(name.utf8)
        return try? SecretBytes(count: 32) { (out: UnsafeMutablePointer<UInt8>) throws(SecItemError) in
            let rc = kek.withBytes { k, kn in
                info.withUnsafeBufferPointer { i in
                    csecitem_hkdf_sha256(
                        secret.baseAddress?.assumingMemoryBound(to: UInt8.self), secret.count, k, kn, i.baseAddress, i.count,
                        out, 32)
                }
            }
            guard rc == 0 else { throw SecItemError(errSecIO, "HKDF-SHA256 failed in libcrypto") }
        }
    }

    // MARK: Operators and tests

    /// Drops the cached key of `store` with `header`, if any (after a rekey).
    package static func drop(store: String, header: KeychainHeader) {
        _ = csecitem_keyring_drop(name(store: store, header: header))
    }

    /// Whether a key is cached for `store` with `header` (its serial number), without reading it.
    package static func serial(store: String, header: KeychainHeader) -> Int? {
        let id = csecitem_keyring_find(name(store: store, header: header))
        return id > 0 ? id : nil
    }

    /// Drops every key this library cached for the calling user (`secitem lock`).
    /// - Returns: How many there were.
    /// - Throws: `errSecNotAvailable` when the user keyring cannot be read.
    package static func dropAll() throws(SecItemError) -> Int {
        let rc = csecitem_keyring_drop_prefix(prefix)
        if rc == -Int(ENOSYS) { return 0 }  // no keyrings in this kernel (or a filter refuses them): nothing was cached
        guard rc >= 0 else {
            throw SecItemError(errSecNotAvailable, "the kernel's user keyring cannot be read: \(String(cString: strerror(Int32(-rc))))")
        }
        return rc
    }

    /// `key-cache-timeout`, `SECITEM_KEY_CACHE_TIMEOUT`: whole seconds from 0 (off) to a week.
    package static let timeoutSetting = SecItemSetting<Int>(
        SecItemSettingDeclaration(
            key: "key-cache-timeout", scope: "key-sources",
            help: "How long a passphrase's derived key stays in the kernel's user keyring after a process derived it, so the next processes skip scrypt (secitem lock drops it).",
            expected: "whole seconds from 0 (no cache) to \(maximumTimeout)", defaultDescription: "\(defaultTimeout) s"),
        default: defaultTimeout,
        parse: { text in Int(text).flatMap { (0...maximumTimeout).contains($0) ? $0 : nil } })

    /// The timeout a configuration asks for (``timeoutSetting``); ``defaultTimeout`` when unset.
    /// - Throws: `errSecParam` naming the setting when it is not such a number.
    package static func timeout(_ settings: SecItemConfiguration) throws(SecItemError) -> Int {
        try settings.value(timeoutSetting) ?? defaultTimeout
    }
}

extension String {
    fileprivate var leftPadded: String { count < 2 ? "0" + self : self }
}
