import CSecItemKeyring
import Foundation
import SecItemCore
import SecItemSealedStore
import SecItemSecretService

// What the sealed store and its key sources read back from places outside the store:
// the rollback mark file (any process of the user can write it), a TPM-sealed key's
// blob in the header, the session key cache's payload in the kernel keyring (any
// process of the user can add a key under the same name), and the secret the Flatpak
// portal writes into a pipe.

// MARK: rollback-mark

/// `StateDirectoryWitness`'s mark file (`<name>.mark`, text lines): the bytes are the
/// file, read by `mark(for:)` for a fixed store.
///
/// Invariants: no crash; a file is a mark, no mark, or `errSecIO` (damaged); a mark
/// that reads is written back by `reset(_:to:note:)` as a file that reads as the same
/// mark, and `advance` to a lower generation keeps it.
enum RollbackMarkTarget {
    static let target = FuzzTarget(
        name: "rollback-mark", summary: "the rollback mark file through StateDirectoryWitness.mark(for:)", run: run, seeds: seeds)

    static let store = WitnessedStore(identity: "file:/fuzz/keychain.db", location: "/fuzz/keychain.db")

    /// One directory for the whole run (inputs run one at a time), removed at exit.
    nonisolated(unsafe) private static var directory: String?

    private static func witness() -> StateDirectoryWitness {
        if directory == nil {
            var template = Array((NSTemporaryDirectory() + "/secitem-fuzz-mark-XXXXXX").utf8CString)
            guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }).map({ String(cString: $0) }) else {
                fatalError("cannot create a temporary directory")
            }
            directory = made
            // The directory as the witness makes it (a first mark of another store).
            _ = try? StateDirectoryWitness(directory: made + "/high-water").advance(
                WitnessedStore(identity: "setup", location: "setup"), to: HighWaterMark(generation: 0, digest: []))
            atexit { if let directory = RollbackMarkTarget.directory { try? FileManager.default.removeItem(atPath: directory) } }
        }
        return StateDirectoryWitness(directory: directory! + "/high-water")
    }

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        let witness = witness()
        let path = witness.markPath(for: store)
        writeFile(path, bytes)
        let mark: HighWaterMark?
        do {
            mark = try witness.mark(for: store)
        } catch {
            FuzzCheck.expect(error.status == errSecIO, "a damaged mark file gave status \(error.status)")
            FuzzCheck.expect(!"\(error)".contains(path) || "\(error)".contains("damaged"), "a damaged mark's message: \(error)")
            return
        }
        guard let mark else { return }
        do {
            try witness.reset(store, to: mark, note: "fuzz")
            let again = try witness.mark(for: store)
            FuzzCheck.expect(again == mark, "a mark written back reads as \(String(describing: again)), not \(mark)")
            if mark.generation > Int64.min {
                let kept = try witness.advance(store, to: HighWaterMark(generation: mark.generation - 1, digest: [1], storeID: nil))
                FuzzCheck.expect(kept == mark, "advance to a lower generation changed the mark")
            }
        } catch {
            FuzzCheck.fail("a mark that reads cannot be written back: \(error)")
        }
        unlink(witness.logPath)
    }

    static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        try withTemporaryDirectory { directory in
            let witness = StateDirectoryWitness(directory: directory + "/high-water")
            func written(_ mark: HighWaterMark) throws -> [UInt8] {
                try witness.reset(store, to: mark, note: "seed")
                return [UInt8](try Data(contentsOf: URL(fileURLWithPath: witness.markPath(for: store))))
            }
            return [
                ("mark", try written(HighWaterMark(generation: 42, digest: Array(repeating: 0xAB, count: 32), storeID: Array(0..<16)))),
                ("mark-no-store-id", try written(HighWaterMark(generation: 1, digest: Array(repeating: 7, count: 32), storeID: nil))),
                ("mark-max", try written(HighWaterMark(generation: Int64.max, digest: [], storeID: [0xFF]))),
                ("empty", []),
            ]
        }
    }
}

// MARK: tpm2-sealed-blob

/// A tpm2 store's header rows as opening it reads them before asking the TPM: the
/// sealed blob (`kek_tpm2_sealed`) through libtss2-mu's unmarshalling (TPM2B_PRIVATE,
/// TPM2B_PUBLIC), and the PCR selection (`kek_tpm2_pcrs`). No TPM is needed.
/// The first byte says which rows are present and of which type; a PCR text (length
/// byte, text) follows when present; the rest is the blob.
///
/// Invariants: no crash; a blob that parses marshals back to exactly its bytes; a PCR
/// selection that parses reads again as itself.
enum TPM2SealedBlobTarget {
    static let target = FuzzTarget(
        name: "tpm2-sealed-blob", summary: "a tpm2 header's sealed blob and PCR rows through the unseal parse step (libtss2-mu)",
        run: run, seeds: seeds)

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        var input = FuzzInput(bytes)
        let shape = input.byte()
        var parameters: [String: KeychainHeader.MetaValue] = [:]
        if shape & 1 == 1 {
            let text = input.string(max: 40)
            parameters["kek_tpm2_pcrs"] = shape & 2 == 2 ? .bytes(Array(text.utf8)) : .text(text)
        }
        let blob = input.rest()
        parameters["kek_tpm2_sealed"] = shape & 4 == 4 ? .text(String(decoding: blob, as: UTF8.self)) : .bytes(blob)
        let parsed: (blob: [UInt8], pcrs: String?)
        do {
            parsed = try TPM2SealedKey.parameters(parameters, store: "/fuzz/keychain.db")
        } catch {
            FuzzCheck.expect([errSecInvalidKeychain, errSecParam].contains(error.status), "a tpm2 header gave status \(error.status)")
            return
        }
        if let pcrs = parsed.pcrs {
            let again = try? TPM2SealedKey.parameters(["kek_tpm2_sealed": .bytes([]), "kek_tpm2_pcrs": .text(pcrs)], store: "x").pcrs
            FuzzCheck.expect(again == pcrs, "the PCR selection \(pcrs) reads again as \(String(describing: again))")
        }
        do {
            let canonical = try TPM2SealedKey.canonical(parsed.blob)
            FuzzCheck.expect(canonical == parsed.blob, "a sealed blob of \(parsed.blob.count) bytes marshals back to \(canonical.count) other bytes")
        } catch {
            FuzzCheck.expect(error.status == errSecInvalidKeychain, "tpm2-tss is missing, or a blob gave status \(error.status): \(error)")
        }
    }

    /// Seeds: a blob sealed by swtpm (Fuzz/Corpus/tpm2-sealed-blob/sealed-*, written by
    /// `SecItemFuzz --write-seeds` only where SECITEM_TPM2_TCTI names a TPM), and the
    /// shapes of the rows around a small blob.
    static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        var out: [(name: String, bytes: [UInt8])] = []
        if let tcti = ProcessInfo.processInfo.environment["SECITEM_TPM2_TCTI"] {
            let context = KeySourceContext(store: "/fuzz/keychain.db")
            for (name, pcrs) in [("sealed", nil), ("sealed-pcr7", "sha256:7")] as [(String, String?)] {
                let kek = try KeyEncryptionKey.forNewWrapping(try .tpm2(tcti: tcti, pcrs: pcrs), context)
                guard case .bytes(let blob) = kek.parameters["kek_tpm2_sealed"] else { throw FuzzSeedError("no sealed blob") }
                if let pcrs {
                    out.append((name, [1, UInt8(pcrs.utf8.count)] + Array(pcrs.utf8) + blob))
                } else {
                    out.append((name, [0] + blob))
                }
            }
        }
        // TPM2B_PRIVATE (size 2, two bytes) then TPM2B_PUBLIC (size 0): the smallest shape libtss2-mu reads.
        out.append(("two-empty-structures", [0, 0, 2, 0xAA, 0xBB, 0, 0]))
        out.append(("pcrs-list", [1, 6] + Array("0,7,23".utf8) + [0, 0, 0, 0]))
        return out
    }
}

// MARK: session-key-cache

/// The session key cache's payload as it comes back from the kernel's user keyring
/// (any process of the user can add a `user` key under a cached key's name): the first
/// byte chooses raw bytes, or a real payload (key and secret from the input) with one
/// byte changed or not; it is stored under a name of this process's own and looked up.
///
/// Invariants: no crash; only an unchanged real payload gives its key back, and only for
/// its own secret; a payload of another length is dropped from the keyring by the lookup;
/// the keyring's copy decodes as the bytes themselves do.
enum SessionKeyCacheTarget {
    static let target = FuzzTarget(
        name: "session-key-cache", summary: "a kernel keyring payload through SessionKeyCache.lookup (and decode)", run: run,
        seeds: seeds)

    static let name = SessionKeyCache.prefix + "fuzz-\(getpid())"
    /// Whether this kernel lets the process use its user keyring (else: the decoder alone).
    static let keyringWorks: Bool = {
        let probe = [UInt8](repeating: 0, count: 8)
        let id = probe.withUnsafeBytes { csecitem_keyring_store(name, $0.baseAddress, $0.count, 60) }
        _ = csecitem_keyring_drop(name)
        atexit { _ = csecitem_keyring_drop(SessionKeyCacheTarget.name) }
        return id > 0
    }()

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        var input = FuzzInput(bytes)
        let mode = input.byte()
        let secret = input.bytes(max: 32)
        var payload: [UInt8]
        var expected: SecretBytes?
        if mode & 1 == 1 {
            // A real payload for a key from the input, then maybe one byte changed.
            var keyBytes = input.bytes(max: 32)
            keyBytes += [UInt8](repeating: 0, count: 32 - keyBytes.count)
            let kek = SecretBytes(copying: keyBytes)
            guard let made = secret.withUnsafeBytes({ SessionKeyCache.payload(name, kek: kek, proof: $0) }) else {
                FuzzCheck.fail("no payload for a 32-byte key")
            }
            payload = made.withBytes { Array(UnsafeBufferPointer(start: $0, count: $1)) }
            let position = input.int(below: payload.count + 2)
            if position < payload.count {
                payload[position] ^= input.byte() | 1
            } else if position == payload.count {
                let extra = input.rest()
                payload += extra.isEmpty ? [0] : extra
            } else {
                expected = kek
            }
        } else {
            payload = input.rest()
        }
        let decoded = payload.withUnsafeBufferPointer { p in secret.withUnsafeBytes { SessionKeyCache.decode(p, name: name, proof: $0) } }
        if let expected {
            FuzzCheck.expect(decoded?.equals(expected) == true, "a real payload did not give its key back")
            let other = secret + [1]
            let wrong = payload.withUnsafeBufferPointer { p in other.withUnsafeBytes { SessionKeyCache.decode(p, name: name, proof: $0) } }
            FuzzCheck.expect(wrong == nil, "a payload gave its key for another secret")
        } else if mode & 1 == 1 {
            FuzzCheck.expect(decoded == nil, "a changed payload gave a key")
        }
        guard keyringWorks, !payload.isEmpty else { return }
        let id = payload.withUnsafeBytes { csecitem_keyring_store(name, $0.baseAddress, $0.count, 60) }
        guard id > 0 else { return }  // too large for a user key (over 32 KiB), or the quota: nothing stored
        let looked = secret.withUnsafeBytes { SessionKeyCache.lookup(name, proof: $0) }
        FuzzCheck.expect(
            (looked == nil) == (decoded == nil) && (looked == nil || looked!.equals(decoded!)),
            "the keyring's copy of a payload decodes otherwise than its bytes")
        if payload.count != 1 + 32 + 32 {
            FuzzCheck.expect(csecitem_keyring_find(name) < 0, "a payload of \(payload.count) bytes was left in the keyring")
        }
        _ = csecitem_keyring_drop(name)
    }

    static func seeds() -> [(name: String, bytes: [UInt8])] {
        let secret = Array("correct horse".utf8)
        let key = Array(0..<32).map { UInt8($0) }
        let kek = SecretBytes(copying: key)
        let payload = secret.withUnsafeBytes { SessionKeyCache.payload(name, kek: kek, proof: $0) }!
        let raw = payload.withBytes { Array(UnsafeBufferPointer(start: $0, count: $1)) }
        return [
            // Mode 1: a real payload, unchanged (position past the end + 1).
            ("real-unchanged", [1, UInt8(secret.count)] + secret + [32] + key + [UInt8(raw.count + 1)]),
            ("real-one-byte-changed", [1, UInt8(secret.count)] + secret + [32] + key + [10, 0x80]),
            // Mode 0: the bytes of a real payload for another name (the proof binds the name).
            ("raw-other-name", [0, UInt8(secret.count)] + secret + raw),
            ("raw-short", [0, 0, 1, 2, 3]),
        ]
    }
}

// MARK: portal-secret

/// The Flatpak Secret portal's secret as this process reads it from the pipe it gave
/// the portal (any process the portal runs for could write there): the bytes are
/// written into a pipe in chunks (the first byte's low bits: the chunk size), the
/// write end closed, and the secret read and turned into a key as the portal key
/// source does.
///
/// Invariants: no crash, no hang; a secret of 1…1024 bytes reads back exactly (else
/// `errSecAuthFailed`); a key is derived from 16 bytes up, the same for the same secret.
enum PortalSecretTarget {
    static let target = FuzzTarget(
        name: "portal-secret", summary: "the portal's secret through SecretPortal.readSecret (a pipe) and the portal key derivation",
        run: run, seeds: seeds)

    static let salt = [UInt8](repeating: 0x5A, count: 32)

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        var input = FuzzInput(bytes)
        let chunk = Int(input.byte() & 0x3F) + 1
        let secret = Array(input.rest().prefix(60_000))  // under the pipe's 64 KiB: written before the read
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { FuzzCheck.fail("pipe: \(String(cString: strerror(errno)))") }
        var offset = 0
        while offset < secret.count {
            let n = secret[offset..<min(offset + chunk, secret.count)].withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }
            guard n > 0 else { FuzzCheck.fail("writing the pipe: \(String(cString: strerror(errno)))") }
            offset += n
        }
        close(fds[1])
        defer { close(fds[0]) }
        let read: SecretBytes
        do {
            read = try SecretPortal.readSecret(from: fds[0], timeout: .seconds(5))
        } catch {
            FuzzCheck.expect(
                error.status == errSecAuthFailed && (secret.isEmpty || secret.count > SecretPortal.capacity),
                "a secret of \(secret.count) bytes was refused: \(error)")
            return
        }
        FuzzCheck.expect(
            read.withBytes { Array(UnsafeBufferPointer(start: $0, count: $1)) } == secret,
            "a secret of \(secret.count) bytes read back as \(read.count) other bytes")
        do {
            let key = try SecretPortal.key(from: read, salt: salt)
            FuzzCheck.expect(secret.count >= 16 && key.count == 32, "a \(secret.count)-byte secret gave a \(key.count)-byte key")
            FuzzCheck.expect(try SecretPortal.key(from: read, salt: salt).equals(key), "one secret gave two keys")
        } catch {
            FuzzCheck.expect(secret.count < 16 && error.status == errSecAuthFailed, "a \(secret.count)-byte secret gave no key: \(error)")
        }
    }

    static func seeds() -> [(name: String, bytes: [UInt8])] {
        // gnome-keyring's and KWallet's secrets are 64 random bytes.
        var generator = SystemRandomNumberGenerator()
        let secret = (0..<64).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return [
            ("64-bytes-one-write", [0x3F] + secret),
            ("64-bytes-in-7-byte-chunks", [6] + secret),
            ("15-bytes", [0x3F] + Array(secret.prefix(15))),
            ("1024-bytes", [0x3F] + Array(repeating: 0x41, count: 1024)),
            ("1025-bytes", [0x3F] + Array(repeating: 0x41, count: 1025)),
            ("empty", [0]),
        ]
    }
}

// MARK: tpm2-nv-record

/// The 32-byte NV record beside a TPM-keyed store's rollback counter
/// (`TPM2CounterWitness.NVRecord`: any program with the TPM's empty owner authorization
/// can define an index there, so its bytes are untrusted), and the counter's merge with
/// the state directory's mark. The first 32 bytes are the record; then a file mark's
/// generation and a counter's floor.
///
/// Invariants: no crash; a record that parses writes back as exactly its bytes; the
/// merged mark is never below the file's mark nor below the counter's (positive) floor.
enum TPM2NVRecordTarget {
    static let target = FuzzTarget(
        name: "tpm2-nv-record", summary: "the TPM rollback counter's NV record (TPM2CounterWitness.NVRecord) and the mark merge",
        run: run, seeds: seeds)

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        let record = Array(bytes.prefix(32))
        if let parsed = TPM2CounterWitness.NVRecord.parse(record) {
            FuzzCheck.expect(parsed.bytes == record, "an NV record reads as base \(parsed.base) but writes back as other bytes")
            FuzzCheck.expect(parsed.digest.count == 16, "an NV record's digest has \(parsed.digest.count) bytes")
            // What the counter then vouches for: value − base, wrapping, never a trap.
            _ = parsed.base &- Int64.max
        } else {
            FuzzCheck.expect(record.count != 32 || Array(record.prefix(8)) != TPM2CounterWitness.NVRecord.magic, "a record with our magic was refused")
        }
        var input = FuzzInput(UnsafeBufferPointer(rebasing: bytes[min(32, bytes.count)...]))
        let fileGeneration = input.interestingInt64()
        let file = input.bool() ? HighWaterMark(generation: fileGeneration, digest: input.bytes(max: 32)) : nil
        let floor = input.bool() ? input.interestingInt64() : nil
        let merged = TPM2CounterWitness.merged(file, floor)
        if let file { FuzzCheck.expect((merged?.generation ?? .min) >= file.generation, "the merged mark is below the file's") }
        if let floor, floor > 0 { FuzzCheck.expect((merged?.generation ?? .min) >= floor, "the merged mark is below the counter's floor") }
        if file == nil && (floor ?? 0) <= 0 { FuzzCheck.expect(merged == nil, "a mark out of nothing") }
    }

    static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        let store = WitnessedStore(identity: "file /fuzz/keychain.db", location: "/fuzz/keychain.db")
        let digest = TPM2CounterWitness.digest(store)
        return [
            ("record", TPM2CounterWitness.NVRecord(base: 1_000, digest: digest).bytes + [8, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1]),
            ("record-negative-base", TPM2CounterWitness.NVRecord(base: -5, digest: digest).bytes),
            ("record-max", TPM2CounterWitness.NVRecord(base: .max, digest: [UInt8](repeating: 0xFF, count: 16)).bytes + [0xFF, 0xFF]),
            ("short", Array("SIHW".utf8) + [1]),
        ]
    }
}

// MARK: keyring-mark

/// The secret of a rollback mark item in the login keyring (`KeyringMarkPayload`: any
/// program of the user can write that item) through its parser, and its MAC under a
/// fixed key. The first byte chooses raw bytes, or a real payload (fields from the input)
/// sealed under the fixed key with one byte changed or not.
///
/// Invariants: no crash; a payload that parses encodes back to exactly its bytes and fits
/// the layout; only an unchanged sealed payload verifies under the key; a parsed payload
/// re-sealed verifies, and not under another key.
enum KeyringMarkTarget {
    static let target = FuzzTarget(
        name: "keyring-mark", summary: "the login keyring's rollback mark payload (KeyringMarkPayload.parse and its MAC)", run: run,
        seeds: seeds)

    static let key = SecretBytes(copying: [UInt8](repeating: 0x5A, count: 32))
    static let otherKey = SecretBytes(copying: [UInt8](repeating: 0xA5, count: 32))

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        var input = FuzzInput(bytes)
        let mode = input.byte()
        var payloadBytes: [UInt8]
        var sealedIntact = false
        if mode & 1 == 1 {
            let storeID: [UInt8]? = input.bool() ? input.bytes(max: 70) : nil
            var made = KeyringMarkPayload(
                mark: HighWaterMark(generation: input.interestingInt64(), digest: input.bytes(max: 70), storeID: storeID),
                keyID: input.string(max: 70), identity: input.bytes(max: 16))
            guard made.isEncodable else { return }
            do { try made.seal(key) } catch { FuzzCheck.fail("sealing a mark failed: \(error)") }
            payloadBytes = made.bytes
            sealedIntact = true
            let position = input.int(below: payloadBytes.count + 1)
            if position < payloadBytes.count {
                payloadBytes[position] ^= input.byte() | 1
                sealedIntact = false
            }
        } else {
            payloadBytes = input.rest()
        }
        guard let parsed = KeyringMarkPayload.parse(payloadBytes) else {
            FuzzCheck.expect(!sealedIntact, "a sealed mark did not parse")
            return
        }
        FuzzCheck.expect(parsed.bytes == payloadBytes, "a mark parses as \(parsed.mark) but encodes back as other bytes")
        FuzzCheck.expect(parsed.isEncodable, "a parsed mark does not fit the layout")
        FuzzCheck.expect(parsed.mark.generation >= 0, "a negative generation parsed")
        do {
            let verifies = try parsed.verifies(key)
            FuzzCheck.expect(verifies == sealedIntact || mode & 1 == 0, "a changed mark verified, or an intact one did not")
            var resealed = parsed
            try resealed.seal(key)
            FuzzCheck.expect(try resealed.verifies(key), "a re-sealed mark does not verify")
            FuzzCheck.expect(!(try resealed.verifies(otherKey)), "a mark verifies under another key")
        } catch {
            FuzzCheck.fail("HMAC failed: \(error)")
        }
    }

    static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        func sealed(_ mark: HighWaterMark, _ keyID: String) throws -> [UInt8] {
            var payload = KeyringMarkPayload(mark: mark, keyID: keyID, identity: Array(0..<16))
            try payload.seal(key)
            return [0] + payload.bytes
        }
        let id = String(repeating: "ab", count: 16)
        return [
            ("mark", try sealed(HighWaterMark(generation: 42, digest: Array(repeating: 0xAB, count: 16), storeID: Array(0..<16)), id)),
            ("mark-no-store-id", try sealed(HighWaterMark(generation: 7, digest: [], storeID: nil), id)),
            ("mark-max", try sealed(HighWaterMark(generation: .max, digest: Array(repeating: 1, count: 64), storeID: Array(repeating: 2, count: 64)), String(repeating: "z", count: 64))),
            ("fields", [1, 1, 16] + Array(repeating: 3, count: 16) + [0, 32] + Array(id.utf8) + [16] + Array(0..<16) + [0]),
            ("empty", [0]),
        ]
    }
}
