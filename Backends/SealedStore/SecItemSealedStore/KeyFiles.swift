import Foundation
import Glibc
package import SecItemCore

/// Files on disk: key files (read strictly, generated atomically) and private directories.
package enum FileSystem {
    /// Creates every missing directory of `path`'s parent with mode 0700.
    package static func makePrivateParentDirectories(of path: String) throws(SecItemError) {
        let parent = (path as NSString).deletingLastPathComponent
        guard !parent.isEmpty else { return }
        var current = parent.hasPrefix("/") ? "" : "."
        for component in parent.split(separator: "/") {
            current += "/" + component
            if mkdir(current, 0o700) != 0 && errno != EEXIST {
                let code = errno
                throw SecItemError(errSecIO, "cannot create directory \(current): \(String(cString: strerror(code)))")
            }
        }
    }

    /// Whether a file exists at `path` (without following a final symlink's target).
    package static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// Writes `bytes` to a new file at `path` (mode 0600) atomically: a temporary
    /// file is written, synced and hard-linked into place, so a reader never sees a
    /// half-written file and two processes racing both end up with the same one.
    /// - Returns: `false` when `path` already existed (the other writer won).
    package static func createExclusively(_ path: String, _ bytes: [UInt8]) throws(SecItemError) -> Bool {
        try makePrivateParentDirectories(of: path)
        let temp = path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw posixError("cannot create \(temp)") }
        defer { unlink(temp) }
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == bytes.count, synced == 0 else { throw posixError("cannot write \(temp)") }
        return try linkIntoPlace(temp, path)
    }

    /// Hard-links `temp` to `path` unless `path` exists; syncs the directory.
    package static func linkIntoPlace(_ temp: String, _ path: String) throws(SecItemError) -> Bool {
        if link(temp, path) != 0 {
            if errno == EEXIST { return false }
            throw posixError("cannot create \(path)")
        }
        syncDirectory(of: path)
        return true
    }

    package static func syncDirectory(of path: String) {
        let dir = (path as NSString).deletingLastPathComponent
        let fd = open(dir.isEmpty ? "." : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
    }

    package static func posixError(_ what: String) -> SecItemError {
        let code = errno
        return SecItemError(errSecIO, "\(what): \(String(cString: strerror(code)))")
    }
}

/// Key files: a 256-bit key as 32 raw bytes, 64 hex digits or base64.
package enum KeyFile {
    /// Reads a key file, refusing one that others could read or that another user owns.
    /// - Throws: `errSecNotAvailable` when missing; `errSecParam` for loose
    ///   permissions, a foreign owner or contents that are not a 256-bit key.
    package static func read(_ path: String) throws(SecItemError) -> SecretBytes {
        // O_NOFOLLOW | O_NONBLOCK and fstat before reading: a FIFO or a symlink swapped in cannot hang or redirect us.
        var buffer: [UInt8]
        do throws(PrivateFile.Refusal) {
            buffer = try PrivateFile.read(path, maxBytes: 4096)
        } catch {
            switch error {
            case .missing: throw SecItemError(errSecNotAvailable, "the key file \(path) does not exist")
            case .io: throw SecItemError(errSecIO, "the key file: \(error.describe(path))")
            default: throw SecItemError(errSecParam, "the key file is refused: \(error.describe(path))")
            }
        }
        defer { wipe(&buffer) }
        guard let key = parse(buffer[...]) else {
            throw SecItemError(
                errSecParam,
                "the key file \(path) does not hold a 256-bit key (32 raw bytes, 64 hex digits or base64)")
        }
        return key
    }

    /// Reads the generated key file, creating it (random, 0600) when missing.
    package static func readOrGenerate(_ path: String) throws(SecItemError) -> SecretBytes {
        if !FileSystem.exists(path) {
            let key = try SecretBytes(random: Crypto.keyLength)
            var text = key.withBytes { p, n in Array(UnsafeBufferPointer(start: p, count: n)) }
            defer { wipe(&text) }
            var hex = Array(text.map { String(format: "%02x", $0) }.joined().utf8) + [0x0A]
            defer { wipe(&hex) }
            if try FileSystem.createExclusively(path, hex) { return key }
        }
        return try read(path)
    }

    package static func parse(_ bytes: ArraySlice<UInt8>) -> SecretBytes? {
        if bytes.count == Crypto.keyLength { return SecretBytes(copying: bytes) }
        var trimmed = Array(bytes)
        defer { wipe(&trimmed) }
        while let last = trimmed.last, last == 0x0A || last == 0x0D || last == 0x20 || last == 0x09 {
            trimmed.removeLast()
        }
        if trimmed.count == 64 {
            var out = [UInt8]()
            defer { wipe(&out) }
            var i = 0
            while i < 64 {
                guard let hi = hexValue(trimmed[i]), let lo = hexValue(trimmed[i + 1]) else { return nil }
                out.append(hi << 4 | lo)
                i += 2
            }
            return SecretBytes(copying: out)
        }
        if trimmed.count == 44, var decoded = Data(base64Encoded: Data(trimmed)).map(Array.init),
            decoded.count == Crypto.keyLength
        {
            defer { wipe(&decoded) }
            return SecretBytes(copying: decoded)
        }
        return nil
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x61...0x66: return c - 0x61 + 10
        case 0x41...0x46: return c - 0x41 + 10
        default: return nil
        }
    }
}
