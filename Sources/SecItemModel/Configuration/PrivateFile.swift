import Foundation
public import SecItemSecurity

/// Files that hold secrets (key files, passphrase files): private to the user or refused.
public enum PrivateFile {
    /// Why a secret-holding file is refused, or `nil` when it is private to the user
    /// (a regular file, owned by the user, no group or other permissions).
    public static func permissionProblem(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            return errno == ENOENT ? "\(path) does not exist" : "cannot read \(path): \(String(cString: strerror(errno)))"
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return "\(path) is not a regular file" }
        if info.st_uid != getuid() { return "\(path) is owned by another user (uid \(info.st_uid))" }
        let mode = info.st_mode & 0o777
        if mode & 0o077 != 0 {
            return "\(path) is accessible by group or others (mode \(String(mode, radix: 8))); run chmod 600 \(path)"
        }
        return nil
    }

    /// Why ``PrivateFile/read(_:maxBytes:allowRootOwnerAndGroup:)`` refused a file.
    public enum Refusal: Error, Sendable {
        /// The file does not exist.
        case missing
        /// A symbolic link, a FIFO, a device, a directory…: not a regular file.
        case notRegularFile(String)
        /// Another user owns it.
        case foreignOwner(UInt32)
        /// Group or others have permissions on it.
        case loosePermissions(UInt32)
        /// Larger than the caller allows.
        case tooLarge(Int)
        /// open/read failed.
        case io(String)

        /// The reason in words, naming `path`.
        public func describe(_ path: String) -> String {
            switch self {
            case .missing: return "\(path) does not exist"
            case .notRegularFile(let what): return "\(path) is \(what), not a regular file"
            case .foreignOwner(let uid): return "\(path) is owned by uid \(uid), not by this user (uid \(geteuid()))"
            case .loosePermissions(let mode):
                return "\(path) is accessible by group or others (mode \(String(mode & 0o777, radix: 8))); run chmod 600 \(path)"
            case .tooLarge(let limit): return "\(path) is larger than \(limit) bytes"
            case .io(let cause): return "cannot read \(path): \(cause)"
            }
        }
    }

    /// Reads a secret-holding file without trusting its path: opened with
    /// `O_NOFOLLOW` (a symbolic link as the last component is refused — point at
    /// its target) and `O_NONBLOCK` (a FIFO or device cannot hang the process),
    /// then checked with `fstat` on the open descriptor — a regular file, owned by
    /// this user, no group or other permissions — before a byte is read.
    /// With `allowRootOwnerAndGroup` (a systemd credential: root-owned, read by the
    /// service's user through an ACL, which shows as group bits), root may own it and
    /// group bits are allowed; others must still have none.
    /// - Returns: The contents; the caller wipes them.
    public static func read(_ path: String, maxBytes: Int, allowRootOwnerAndGroup: Bool = false) throws(Refusal) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            switch code {
            case ENOENT: throw .missing
            case ELOOP: throw .notRegularFile("a symbolic link")
            default: throw .io(String(cString: strerror(code)))
            }
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .io(String(cString: strerror(errno))) }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFIFO: throw .notRegularFile("a FIFO")
        case S_IFDIR: throw .notRegularFile("a directory")
        case S_IFCHR, S_IFBLK: throw .notRegularFile("a device")
        case S_IFSOCK: throw .notRegularFile("a socket")
        default: throw .notRegularFile("not a regular file")
        }
        guard info.st_uid == geteuid() || (allowRootOwnerAndGroup && info.st_uid == 0) else { throw .foreignOwner(UInt32(info.st_uid)) }
        guard info.st_mode & (allowRootOwnerAndGroup ? 0o007 : 0o077) == 0 else { throw .loosePermissions(UInt32(info.st_mode)) }
        var buffer = [UInt8](repeating: 0, count: maxBytes + 1)
        var total = 0
        while total < buffer.count {
            let n = buffer.withUnsafeMutableBytes { Foundation.read(fd, $0.baseAddress! + total, $0.count - total) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else {
                let cause = String(cString: strerror(errno))
                explicit_bzero(&buffer, buffer.count)
                throw .io(cause)
            }
            if n == 0 { break }
            total += n
        }
        guard total <= maxBytes else {
            explicit_bzero(&buffer, buffer.count)
            throw .tooLarge(maxBytes)
        }
        buffer.removeLast(buffer.count - total)  // only zeros past `total`: nothing was read there
        return buffer
    }

    /// Reads a passphrase file: private to the user, not empty; trailing newlines dropped.
    /// - Throws: `errSecAuthFailed` for a file others can read, another user owns, or
    ///   that is not a regular file; `errSecIO` when unreadable; `errSecParam` when empty.
    public static func readPassphrase(_ path: String) throws(SecItemError) -> Passphrase {
        var data: [UInt8]
        do throws(Refusal) {
            data = try read(path, maxBytes: 64 << 10)
        } catch {
            switch error {
            case .io: throw SecItemError(errSecIO, "cannot read the passphrase file: \(error.describe(path))")
            default: throw SecItemError(errSecAuthFailed, "the passphrase file is refused: \(error.describe(path))")
            }
        }
        defer { explicit_bzero(&data, data.count) }
        var end = data.count
        while end > 0, data[end - 1] == 0x0A || data[end - 1] == 0x0D { end -= 1 }
        guard end > 0 else { throw SecItemError(errSecParam, "the passphrase file \(path) is empty") }
        return Passphrase(bytes: data[0..<end])
    }
}
