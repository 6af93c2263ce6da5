internal import CSecItemCrypto
package import SecItemCore

/// The keys one data key gives: separate HMAC and encryption keys (HKDF), each
/// held in a libcrypto context made once and reused for every row (the HMAC
/// pads and the AES key schedule are computed once per key, not per operation).
///
/// Used under the backend's mutex only: the contexts are not thread-safe.
package final class ItemKeys {
    package let dataKey: SecretBytes
    /// The file format these keys are derived for (the HKDF labels name it).
    package let format: Int
    package let macKey: SecretBytes
    package let encKey: SecretBytes
    package let mac: MACContext
    package let aead: AEADContext
    /// HMACs that depend on the key alone (access groups, sync states), computed
    /// once. Not secret beyond what the file's columns show.
    package var memo: [String: [UInt8]] = [:]

    package init(dataKey: SecretBytes, format: Int) throws(SecItemError) {
        self.dataKey = dataKey
        self.format = format
        macKey = try Crypto.hkdf(dataKey, info: "secitem-file/\(format) hmac-sha256")
        encKey = try Crypto.hkdf(dataKey, info: "secitem-file/\(format) aes-256-gcm")
        mac = try MACContext(key: macKey)
        aead = try AEADContext(key: encKey)
    }

    /// A fresh random data key.
    package static func generate(format: Int) throws(SecItemError) -> ItemKeys {
        try ItemKeys(dataKey: SecretBytes(random: Crypto.keyLength), format: format)
    }
}

/// HMAC-SHA256 under one key, the key's pads computed once.
package final class MACContext {
    private let ctx: OpaquePointer

    package init(key: SecretBytes) throws(SecItemError) {
        guard let made = key.withBytes({ p, n in csecitem_hmac_new(p, n) }) else {
            throw SecItemError(errSecIO, "cannot create an HMAC-SHA256 context in libcrypto")
        }
        ctx = made
    }

    deinit { csecitem_hmac_free(ctx) }

    /// The HMAC of `first` ‖ `second` into the 32 bytes at `out`.
    @inline(__always)
    package func run(_ first: UnsafeBufferPointer<UInt8>, _ second: UnsafeBufferPointer<UInt8>? = nil, into out: UnsafeMutablePointer<UInt8>)
        throws(SecItemError)
    {
        let rc = csecitem_hmac_run(ctx, first.baseAddress, first.count, second?.baseAddress, second?.count ?? 0, out)
        guard rc == 0 else { throw SecItemError(errSecIO, "HMAC-SHA256 failed in libcrypto") }
    }

    /// The HMAC of `message` as a new array.
    package func run(_ message: [UInt8]) throws(SecItemError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        try message.withUnsafeBufferPointer { (m: UnsafeBufferPointer<UInt8>) throws(SecItemError) in
            try out.withUnsafeMutableBufferPointer { (o: inout UnsafeMutableBufferPointer<UInt8>) throws(SecItemError) in
                try run(m, into: o.baseAddress!)
            }
        }
        return out
    }
}

/// AES-256-GCM under one key, the key schedule computed once.
package final class AEADContext {
    private let ctx: OpaquePointer

    package init(key: SecretBytes) throws(SecItemError) {
        guard let made = key.withBytes({ p, n in csecitem_gcm_new(p, n) }) else {
            throw SecItemError(errSecIO, "cannot create an AES-256-GCM context in libcrypto")
        }
        ctx = made
    }

    deinit { csecitem_gcm_free(ctx) }

    /// Seals with a fresh random nonce: returns nonce ‖ ciphertext ‖ tag.
    package func seal(_ plaintext: UnsafeBufferPointer<UInt8>, aad: UnsafeBufferPointer<UInt8>) throws(SecItemError) -> [UInt8] {
        let n = plaintext.count
        var out = [UInt8](repeating: 0, count: Crypto.nonceLength + n + Crypto.tagLength)
        let rc = out.withUnsafeMutableBufferPointer { o -> Int32 in
            let base = o.baseAddress!
            guard csecitem_random_bytes(base, Crypto.nonceLength) == 0 else { return -1 }
            return csecitem_gcm_seal(
                ctx, base, aad.baseAddress, aad.count, plaintext.baseAddress, n, base + Crypto.nonceLength,
                base + Crypto.nonceLength + n)
        }
        guard rc == 0 else { throw SecItemError(errSecIO, "AES-256-GCM encryption failed in libcrypto") }
        return out
    }

    /// Opens nonce ‖ ciphertext ‖ tag, read in place, into `plain` (grown when
    /// too small; the caller zeroes it after use with ``Crypto/cleanse(_:count:)``).
    /// - Returns: the plaintext's length, or `nil` when the box does not authenticate.
    package func open(_ sealed: UnsafeRawBufferPointer, aad: UnsafeBufferPointer<UInt8>, into plain: inout [UInt8])
        throws(SecItemError) -> Int?
    {
        guard sealed.count >= Crypto.nonceLength + Crypto.tagLength, let base = sealed.baseAddress else { return nil }
        let n = sealed.count - Crypto.nonceLength - Crypto.tagLength
        if plain.count < max(n, 1) {
            wipe(&plain)
            plain = [UInt8](repeating: 0, count: max(n, 256))
        }
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        let rc = plain.withUnsafeMutableBufferPointer { p in
            csecitem_gcm_open(
                ctx, bytes, aad.baseAddress, aad.count, bytes + Crypto.nonceLength, n,
                bytes + Crypto.nonceLength + n, p.baseAddress)
        }
        if rc == 1 { return nil }
        guard rc == 0 else { throw SecItemError(errSecIO, "AES-256-GCM decryption failed in libcrypto") }
        return n
    }
}
