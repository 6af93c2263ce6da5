import CSecItemGLib
import CSecItemLibsecret
import Foundation

/// The Secret Service encryption session's readings of what the provider sends
/// (`session.c`): the OpenSession reply, whose `v` carries the provider's
/// Diffie-Hellman public value, and the GetSecrets reply, every secret IV and
/// ciphertext for the session. Any process that owns `org.freedesktop.secrets` on the
/// session bus writes these bytes. Each input is a serialized GVariant body, untrusted,
/// as GDBus hands a message's body over, read by the same C code the backend runs.
///
/// The first byte chooses the mode:
/// - 0: the rest as an OpenSession reply `(vo)`, for an offer or for "plain";
/// - 1: a provider value from the input (or an edge: 0, 1, 2, p − 2, p − 1, p, 2^1024 − 1)
///   with leading zero bytes, in a well-formed reply;
/// - 2: a real peer: another offer's public value, with leading zero bytes;
/// - 3: the rest as a GetSecrets reply `(a{o(oayays)})` for a keyed or a plain session;
/// - 4: secrets from the input sealed for the session into a real reply, then one
///   byte of it changed or not.
///
/// Invariants: no crash; a provider value is accepted exactly when 1 < y < p − 1
/// (RFC 2409's 1024-bit prime, leading zeros ignored, at most 128 bytes without them);
/// both ends of an exchange derive the same key (what one seals the other opens, byte
/// for byte), leading zeros or not; any session accepted opens what it seals; an
/// unchanged reply opens to exactly its secrets, none undecodable; no secret read from
/// a reply is longer than the reply.
enum SecretServiceSessionTarget {
    static let target = FuzzTarget(
        name: "secret-service-session",
        summary: "the Secret Service session's OpenSession and GetSecrets replies (session.c: DH value, AES-CBC secrets)",
        run: run, seeds: seeds)

    /// RFC 2409's second Oakley group, the prime of "dh-ietf1024-sha256-aes128-cbc-pkcs7".
    static let prime: [UInt8] = hex(
        "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
            + "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
            + "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF")

    static func hex(_ text: String) -> [UInt8] {
        let digits = Array(text.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
    }

    /// p − k for small k (the prime ends in 0xFF bytes).
    static func primeMinus(_ k: UInt8) -> [UInt8] { var p = prime; p[p.count - 1] -= k; return p }

    /// Two offers made once and the sessions between them (each end's view), and a plain
    /// session: a Diffie-Hellman exchange costs a few hundred microseconds.
    final class Fixtures: @unchecked Sendable {
        let a: OpaquePointer
        let b: OpaquePointer
        let aPublic: [UInt8]
        let bPublic: [UInt8]
        /// A's session with B (B's value as the provider's) and B's with A.
        let ab: OpaquePointer
        let ba: OpaquePointer
        let plain: OpaquePointer

        init() {
            var message = [CChar](repeating: 0, count: 256)
            guard csecitem_secret_load(&message, message.count) != 0 else {
                FuzzCheck.fail("libsecret cannot be loaded: \(String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
            }
            guard let a = csecitem_session_offer_new(), let b = csecitem_session_offer_new() else {
                FuzzCheck.fail("no Diffie-Hellman offer (no randomness, or libcrypto failed)")
            }
            self.a = a
            self.b = b
            aPublic = Self.publicValue(a)
            bPublic = Self.publicValue(b)
            guard let ab = SecretServiceSessionTarget.session(offer: a, value: bPublic),
                let ba = SecretServiceSessionTarget.session(offer: b, value: aPublic),
                let plain = SecretServiceSessionTarget.session(offer: nil, value: [])
            else { FuzzCheck.fail("a real exchange was refused") }
            self.ab = ab
            self.ba = ba
            self.plain = plain
        }

        static func publicValue(_ offer: OpaquePointer) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: 128)
            csecitem_session_offer_public_value(offer, &out)
            return out
        }
    }

    static let fixtures = Fixtures()

    static let sessionPath = "/org/freedesktop/secrets/session/s1"

    /// A well-formed OpenSession reply carrying `value`, read for `offer`.
    static func session(offer: OpaquePointer?, value: [UInt8]) -> OpaquePointer? {
        var length: gsize = 0
        guard let reply = csecitem_session_reply_bytes(value, gsize(value.count), sessionPath, &length) else { return nil }
        defer { g_free(reply) }
        return csecitem_session_read_reply(offer, reply, length, nil)
    }

    /// Whether `value` (big-endian, unsigned) is a public value the session must accept.
    static func isValidPublicValue(_ value: [UInt8]) -> Bool {
        let digits = Array(value.drop { $0 == 0 })
        guard digits.count <= 128 else { return false }
        let greaterThanOne = digits.count > 1 || (digits.count == 1 && digits[0] > 1)
        let bound = primeMinus(1)
        let belowBound = digits.count < 128 || digits.lexicographicallyPrecedes(bound)
        return greaterThanOne && belowBound
    }

    struct Secret { let path: String; let bytes: [UInt8] }

    /// The secrets sealed by `sealer` into a serialized GetSecrets reply.
    static func sealed(_ secrets: [Secret], by sealer: OpaquePointer) -> [UInt8] {
        let paths = secrets.map { strdup($0.path) }
        defer { paths.forEach { free($0) } }
        let buffers = secrets.map { secret -> UnsafeMutablePointer<UInt8> in
            let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: max(secret.bytes.count, 1))
            buffer.initialize(from: secret.bytes, count: secret.bytes.count)
            return buffer
        }
        defer { buffers.forEach { $0.deallocate() } }
        var length: gsize = 0
        let pathPointers: [UnsafePointer<CChar>?] = paths.map { $0.map { UnsafePointer<CChar>($0) } }
        let valuePointers: [UnsafePointer<UInt8>?] = buffers.map { UnsafePointer<UInt8>($0) }
        let lengths = secrets.map { gsize($0.bytes.count) }
        guard let reply = csecitem_session_secrets_bytes(sealer, guint(secrets.count), pathPointers, valuePointers, lengths, &length)
        else { FuzzCheck.fail("sealing \(secrets.count) secrets failed") }
        defer { g_free(reply) }
        return Array(UnsafeBufferPointer(start: reply, count: Int(length)))
    }

    /// A GetSecrets reply read by `session`: path → secret (of `paths`), the table's size, the undecodable count.
    static func read(_ reply: [UInt8], by session: OpaquePointer, paths: [String]) -> (found: [String: [UInt8]], size: Int, undecodable: Int) {
        var undecodable: guint = 0
        guard let table = csecitem_session_read_secrets(session, reply, gsize(reply.count), &undecodable) else {
            FuzzCheck.fail("no table for a GetSecrets reply")
        }
        defer { g_hash_table_unref(table) }
        var found: [String: [UInt8]] = [:]
        for path in paths {
            var length: gsize = 0
            if let bytes = csecitem_secret_bytes(table, path, &length) {
                found[path] = Array(UnsafeRawBufferPointer(start: bytes, count: Int(length)))
            }
        }
        return (found, Int(g_hash_table_size(table)), Int(undecodable))
    }

    /// `opener` opens exactly what `sealer` sealed.
    static func checkRoundTrip(_ secrets: [Secret], sealer: OpaquePointer, opener: OpaquePointer, _ what: String) {
        let reply = sealed(secrets, by: sealer)
        let (found, size, undecodable) = read(reply, by: opener, paths: secrets.map(\.path))
        let expected = Dictionary(secrets.map { ($0.path, $0.bytes) }, uniquingKeysWith: { _, last in last })
        FuzzCheck.expect(undecodable == 0 && size == expected.count && found == expected,
            "\(what): \(expected.count) secrets sealed, \(size) opened (\(undecodable) undecodable), \(found == expected ? "equal" : "different bytes")")
    }

    static func secrets(_ input: inout FuzzInput) -> [Secret] {
        (0..<(input.int(below: 4) + 1)).map { i in
            Secret(path: "/org/freedesktop/secrets/collection/login/\(i)", bytes: input.bytes(max: 80))
        }
    }

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        let f = fixtures
        var input = FuzzInput(bytes)
        switch input.byte() % 5 {
        case 0:
            let keyed = input.bool()
            let reply = input.rest()
            guard let session = csecitem_session_read_reply(keyed ? f.a : nil, reply, gsize(reply.count), nil) else { return }
            defer { csecitem_session_free(UnsafeMutableRawPointer(session)) }
            checkRoundTrip([Secret(path: "/org/freedesktop/secrets/collection/login/1", bytes: [1, 2, 3])],
                sealer: session, opener: session, "a session accepted from a raw reply")
        case 1:
            let zeros = input.int(below: 3)
            let edges: [[UInt8]] = [[0], [1], [2], primeMinus(2), primeMinus(1), prime, [UInt8](repeating: 0xFF, count: 128)]
            let choice = input.byte()
            let digits = Int(choice) < edges.count ? edges[Int(choice)] : input.bytes(max: 140)
            let value = [UInt8](repeating: 0, count: zeros) + digits
            let session = self.session(offer: f.a, value: value)
            defer { if let session { csecitem_session_free(UnsafeMutableRawPointer(session)) } }
            FuzzCheck.expect((session != nil) == isValidPublicValue(value),
                "a provider value of \(value.count) bytes was \(session != nil ? "accepted" : "refused")")
            if let session {
                checkRoundTrip(secrets(&input), sealer: session, opener: session, "a session from an accepted value")
            }
        case 2:
            let zeros = input.int(below: 4)
            guard let ours = session(offer: f.a, value: [UInt8](repeating: 0, count: zeros) + f.bPublic) else {
                FuzzCheck.fail("a real peer's value with \(zeros) leading zeros was refused")
            }
            defer { csecitem_session_free(UnsafeMutableRawPointer(ours)) }
            let batch = secrets(&input)
            checkRoundTrip(batch, sealer: ours, opener: f.ba, "the provider opens what we seal")
            checkRoundTrip(batch, sealer: f.ba, opener: ours, "we open what the provider seals")
        case 3:
            let session = input.bool() ? f.ab : f.plain
            let reply = input.rest()
            let (found, _, _) = read(reply, by: session, paths: (0..<4).map { "/org/freedesktop/secrets/collection/login/\($0)" })
            for (path, secret) in found {
                FuzzCheck.expect(secret.count <= reply.count, "\(path): a \(secret.count)-byte secret from a \(reply.count)-byte reply")
            }
        default:
            let (sealer, opener) = input.bool() ? (f.ba, f.ab) : (f.plain, f.plain)
            let batch = secrets(&input)
            var reply = sealed(batch, by: sealer)
            let change = input.bool()
            let position = input.int(below: 65536) % max(reply.count, 1)
            let value = input.byte()
            if change, !reply.isEmpty { reply[position] ^= value | 1 }
            let paths = batch.map(\.path)
            let (found, size, undecodable) = read(reply, by: opener, paths: paths)
            if !change {
                let expected = Dictionary(batch.map { ($0.path, $0.bytes) }, uniquingKeysWith: { _, last in last })
                FuzzCheck.expect(undecodable == 0 && size == expected.count && found == expected,
                    "an unchanged reply of \(batch.count) secrets opened to \(size) (\(undecodable) undecodable)")
            }
            for (path, secret) in found {
                FuzzCheck.expect(secret.count <= reply.count, "\(path): a \(secret.count)-byte secret from a \(reply.count)-byte reply")
            }
        }
    }

    static func seeds() -> [(name: String, bytes: [UInt8])] {
        let f = fixtures
        var length: gsize = 0
        let wellFormed = csecitem_session_reply_bytes(f.bPublic, gsize(f.bPublic.count), sessionPath, &length)!
        let reply = Array(UnsafeBufferPointer(start: wellFormed, count: Int(length)))
        g_free(wellFormed)
        let secret: [UInt8] = [0x00, 3, 0x61, 0x62, 0x63]  // one secret, "abc"
        return [
            ("reply-keyed", [0, 1] + reply),
            ("reply-plain", [0, 0] + reply),
            ("value-peer", [1, 0, 0xFF, 128] + f.bPublic),
            ("value-one-leading-zero", [1, 1, 0xFF, 129, 0] + f.bPublic),
            ("value-p-minus-2", [1, 0, 3]),
            ("value-p-minus-1", [1, 0, 4]),
            ("value-p", [1, 0, 5]),
            ("value-one", [1, 0, 1]),
            ("value-all-ones", [1, 0, 6]),
            ("peer-no-zeros", [2, 0, 1, 3, 0x61, 0x62, 0x63]),
            ("peer-three-zeros", [2, 3, 2, 16] + [UInt8](repeating: 0x41, count: 16) + [0] + [1, 0x7A]),
            ("secrets-keyed", [3, 1] + sealed([Secret(path: "/org/freedesktop/secrets/collection/login/0", bytes: Array("abc".utf8))], by: f.ba)),
            ("secrets-plain", [3, 0] + sealed([Secret(path: "/org/freedesktop/secrets/collection/login/0", bytes: Array("abc".utf8))], by: f.plain)),
            ("sealed-unchanged", [4, 1] + secret + [0]),
            ("sealed-changed", [4, 1] + secret + [1, 0, 40, 0x80]),
            ("sealed-plain-changed", [4, 0] + secret + [1, 0, 10, 0x01]),
        ]
    }
}
