internal import CSecItemCrypto
package import SecItemCore

/// The libcrypto primitives the file format uses, over ``SecretBytes`` keys.
package enum Crypto {
    package static let keyLength = 32
    package static let nonceLength = 12
    package static let tagLength = 16

    package static func randomBytes(_ count: Int) throws(SecItemError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let rc = out.withUnsafeMutableBufferPointer { csecitem_random_bytes($0.baseAddress, count) }
        guard rc == 0 else { throw SecItemError(errSecIO, "the system random number generator failed") }
        return out
    }

    /// Zeroes the first `count` bytes of `bytes`.
    package static func cleanse(_ bytes: inout [UInt8], count: Int) {
        bytes.withUnsafeMutableBytes { csecitem_cleanse($0.baseAddress, min(count, $0.count)) }
    }

    /// HKDF-SHA256 of `key` with the given info string (and `salt`, when given): a 32-byte subkey.
    package static func hkdf(_ key: SecretBytes, salt: [UInt8] = [], info: String) throws(SecItemError) -> SecretBytes {
        let infoBytes = Array(info.utf8)
        return try SecretBytes(count: keyLength) { (out: UnsafeMutablePointer<UInt8>) throws(SecItemError) in
            let rc = key.withBytes { k, kn in
                salt.withUnsafeBufferPointer { s in
                    infoBytes.withUnsafeBufferPointer { i in
                        csecitem_hkdf_sha256(k, kn, s.baseAddress, s.count, i.baseAddress, i.count, out, keyLength)
                    }
                }
            }
            guard rc == 0 else { throw SecItemError(errSecIO, "HKDF-SHA256 failed in libcrypto") }
        }
    }

    /// scrypt of `passphrase` with `salt`: a 32-byte key-encryption key. The
    /// passphrase's bytes go to libcrypto in place (no copy is made here).
    package static func scrypt(passphrase: Passphrase, salt: [UInt8], parameters: ScryptParameters) throws(SecItemError)
        -> SecretBytes
    {
        guard parameters.isValid else {
            throw SecItemError(errSecParam, "scrypt parameters out of range: \(parameters)")
        }
        return try SecretBytes(count: keyLength) { (out: UnsafeMutablePointer<UInt8>) throws(SecItemError) in
            let rc = passphrase.withUTF8 { pass in
                salt.withUnsafeBufferPointer { s in
                    csecitem_scrypt(
                        pass.baseAddress?.assumingMemoryBound(to: CChar.self), pass.count, s.baseAddress, s.count,
                        UInt64(1) << UInt64(parameters.logN), UInt64(parameters.r), UInt64(parameters.p),
                        parameters.memoryNeeded + (1 << 20), out, keyLength)
                }
            }
            guard rc == 0 else { throw SecItemError(errSecAllocate, "scrypt failed in libcrypto (\(parameters))") }
        }
    }

    /// AES-256-GCM with a fresh random nonce: returns nonce ‖ ciphertext ‖ tag.
    package static func seal(_ key: SecretBytes, _ plaintext: UnsafeBufferPointer<UInt8>, aad: [UInt8]) throws(SecItemError)
        -> [UInt8]
    {
        let nonce = try randomBytes(nonceLength)
        var out = [UInt8](repeating: 0, count: nonceLength + plaintext.count + tagLength)
        let n = plaintext.count
        let rc = key.withBytes { k, _ in
            aad.withUnsafeBufferPointer { a in
                out.withUnsafeMutableBufferPointer { o in
                    let base = o.baseAddress!
                    base.update(from: nonce, count: nonceLength)
                    return csecitem_aes256gcm_seal(
                        k, base, a.baseAddress, a.count, plaintext.baseAddress, n, base + nonceLength,
                        base + nonceLength + n)
                }
            }
        }
        guard rc == 0 else { throw SecItemError(errSecIO, "AES-256-GCM encryption failed in libcrypto") }
        return out
    }

    /// Opens nonce ‖ ciphertext ‖ tag into a buffer `body` reads (then zeroed).
    /// - Returns: `nil` when the box does not authenticate (wrong key, tampered, moved).
    package static func open<R>(
        _ key: SecretBytes, _ sealed: [UInt8], aad: [UInt8], _ body: (UnsafeBufferPointer<UInt8>) throws(SecItemError) -> R
    ) throws(SecItemError) -> R? {
        guard sealed.count >= nonceLength + tagLength else { return nil }
        let n = sealed.count - nonceLength - tagLength
        var plain = [UInt8](repeating: 0, count: max(n, 1))
        defer { wipe(&plain) }
        let rc = key.withBytes { k, _ in
            aad.withUnsafeBufferPointer { a in
                sealed.withUnsafeBufferPointer { s in
                    plain.withUnsafeMutableBufferPointer { p in
                        let base = s.baseAddress!
                        return csecitem_aes256gcm_open(
                            k, base, a.baseAddress, a.count, base + nonceLength, n, base + nonceLength + n,
                            p.baseAddress)
                    }
                }
            }
        }
        if rc == 1 { return nil }
        guard rc == 0 else { throw SecItemError(errSecIO, "AES-256-GCM decryption failed in libcrypto") }
        return try plain.withUnsafeBufferPointer { (p: UnsafeBufferPointer<UInt8>) throws(SecItemError) -> R in
            try body(UnsafeBufferPointer(rebasing: p[0..<n]))
        }
    }
}
