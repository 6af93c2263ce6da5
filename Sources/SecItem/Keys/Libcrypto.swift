// The Swift side of CSecItemKeys: one class owning a libcrypto key, and one thin
// function per C call. Nothing here is public; SecKeyFunctions.swift is the API.
internal import CSecItemKeys
import Foundation
import SecItemCore

/// A key as libcrypto holds it, for the length of one operation; freed in `deinit`.
final class LibcryptoKey {
    let handle: OpaquePointer
    let isPrivate: Bool

    private init(handle: OpaquePointer, isPrivate: Bool) {
        self.handle = handle
        self.isPrivate = isPrivate
    }

    deinit { csk_key_free(handle) }

    /// A new key pair, or `nil` for a type and size libcrypto does not make.
    static func generate(_ kind: SecKey.Kind, bits: Int) -> LibcryptoKey? {
        guard let handle = csk_generate(Int32(kind.rawValue), Int32(clamping: bits)) else { return nil }
        return LibcryptoKey(handle: handle, isPrivate: true)
    }

    /// The key of Apple's external representation `data`, checked; `nil` when it is not one.
    static func load(_ kind: SecKey.Kind, isPrivate: Bool, _ data: Data) -> LibcryptoKey? {
        let handle = data.withUnsafeBytes { bytes -> OpaquePointer? in
            guard let base = bytes.baseAddress, bytes.count > 0 else { return nil }
            return csk_import(Int32(kind.rawValue), isPrivate ? 1 : 0, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        }
        return handle.map { LibcryptoKey(handle: $0, isPrivate: isPrivate) }
    }

    /// The libcrypto key of `key`.
    static func of(_ key: SecKey) -> LibcryptoKey? { load(key.kind, isPrivate: key.isPrivate, key.keyData) }

    var bits: Int { Int(csk_bits(handle)) }

    var maxSignatureSize: Int { Int(csk_max_signature_size(handle)) }

    /// Apple's external representation (of the public half when `isPrivate` is false).
    func export(isPrivate: Bool) -> Data? {
        Libcrypto.take { out, length in csk_export(handle, isPrivate ? 1 : 0, out, length) }
    }

    /// The `SecKey` of this key (its private half when it has one) with `attributes`.
    func secKey(_ kind: SecKey.Kind, attributes: [String: AttributeValue] = [:]) -> SecKey? {
        guard let publicData = export(isPrivate: false), let data = isPrivate ? export(isPrivate: true) : publicData,
            let label = Libcrypto.digest(1, publicData)
        else { return nil }
        return SecKey(
            kind: kind, isPrivate: isPrivate, sizeInBits: bits, keyData: data, publicKeyData: publicData,
            applicationLabel: label, attributes: attributes)
    }
}

/// The C calls that are not about one key.
enum Libcrypto {
    /// Calls `body` with an out-buffer pointer and length; returns the bytes it allocated
    /// (zeroed and freed by C afterwards), or `nil` when it failed.
    static func take(_ body: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, UnsafeMutablePointer<Int>) -> Int32) -> Data? {
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        guard body(&out, &length) == 0, let out else { return nil }
        defer { csk_buffer_free(out, length) }
        return Data(bytes: out, count: length)
    }

    /// The digest (1 = SHA-1, 224, 256, 384, 512) of `data`.
    static func digest(_ digest: Int32, _ data: Data) -> Data? {
        var out = [UInt8](repeating: 0, count: 64)
        let n = data.withUnsafeBytes { bytes in
            csk_digest(digest, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &out)
        }
        return n > 0 ? Data(out.prefix(Int(n))) : nil
    }

    static func sign(_ key: LibcryptoKey, padding: Int32, digest: Int32, _ input: Data) -> Data? {
        input.withUnsafeBytes { bytes in
            take { out, length in
                csk_sign(key.handle, padding, digest, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, out, length)
            }
        }
    }

    /// `true` valid, `false` invalid, `nil` when the check itself failed.
    static func verify(_ key: LibcryptoKey, padding: Int32, digest: Int32, _ input: Data, signature: Data) -> Bool? {
        let result = input.withUnsafeBytes { i in
            signature.withUnsafeBytes { s in
                csk_verify(
                    key.handle, padding, digest, i.baseAddress?.assumingMemoryBound(to: UInt8.self), i.count,
                    s.baseAddress?.assumingMemoryBound(to: UInt8.self), s.count)
            }
        }
        return result < 0 ? nil : result == 1
    }

    static func encrypt(_ key: LibcryptoKey, padding: Int32, digest: Int32, _ input: Data) -> Data? {
        input.withUnsafeBytes { bytes in
            take { out, length in
                csk_encrypt(key.handle, padding, digest, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, out, length)
            }
        }
    }

    static func decrypt(_ key: LibcryptoKey, padding: Int32, digest: Int32, _ input: Data) -> Data? {
        input.withUnsafeBytes { bytes in
            take { out, length in
                csk_decrypt(key.handle, padding, digest, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, out, length)
            }
        }
    }

    static func ecdh(_ privateKey: LibcryptoKey, _ publicKey: LibcryptoKey, cofactor: Bool) -> Data? {
        take { out, length in csk_ecdh(privateKey.handle, publicKey.handle, cofactor ? 1 : 0, out, length) }
    }

    static func x963KDF(digest: Int32, _ z: Data, sharedInfo: Data, count: Int) -> Data? {
        var out = [UInt8](repeating: 0, count: count)
        let status = z.withUnsafeBytes { zb in
            sharedInfo.withUnsafeBytes { sb in
                csk_x963_kdf(
                    digest, zb.baseAddress?.assumingMemoryBound(to: UInt8.self), zb.count,
                    sb.baseAddress?.assumingMemoryBound(to: UInt8.self), sb.count, &out, count)
            }
        }
        return status == 0 ? Data(out) : nil
    }

    /// AES-GCM seal: ciphertext ‖ 16-byte tag.
    static func gcmSeal(key: Data, iv: Data, _ input: Data) -> Data? {
        var out = [UInt8](repeating: 0, count: input.count)
        var tag = [UInt8](repeating: 0, count: 16)
        let status = key.withUnsafeBytes { k in
            iv.withUnsafeBytes { v in
                input.withUnsafeBytes { i in
                    csk_gcm_seal(
                        k.baseAddress?.assumingMemoryBound(to: UInt8.self), k.count,
                        v.baseAddress?.assumingMemoryBound(to: UInt8.self), v.count,
                        i.baseAddress?.assumingMemoryBound(to: UInt8.self), i.count, &out, &tag)
                }
            }
        }
        return status == 0 ? Data(out + tag) : nil
    }

    /// AES-GCM open of ciphertext ‖ tag; `nil` when the tag is wrong.
    static func gcmOpen(key: Data, iv: Data, _ sealed: Data) -> Data? {
        guard sealed.count >= 16 else { return nil }
        let body = Data(sealed.prefix(sealed.count - 16))
        let tag = Data(sealed.suffix(16))
        var out = [UInt8](repeating: 0, count: body.count)
        let status = key.withUnsafeBytes { k in
            iv.withUnsafeBytes { v in
                body.withUnsafeBytes { i in
                    tag.withUnsafeBytes { t in
                        csk_gcm_open(
                            k.baseAddress?.assumingMemoryBound(to: UInt8.self), k.count,
                            v.baseAddress?.assumingMemoryBound(to: UInt8.self), v.count,
                            i.baseAddress?.assumingMemoryBound(to: UInt8.self), i.count,
                            t.baseAddress?.assumingMemoryBound(to: UInt8.self), &out)
                    }
                }
            }
        }
        return status == 0 ? Data(out) : nil
    }
}
