import Foundation

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

    /// Reads a passphrase file: private to the user, not empty; trailing newlines dropped.
    /// - Throws: `errSecAuthFailed` for a file others can read or another user owns;
    ///   `errSecIO` when unreadable; `errSecParam` when empty.
    public static func readPassphrase(_ path: String) throws(SecItemError) -> Passphrase {
        if let problem = permissionProblem(path) {
            throw SecItemError(errSecAuthFailed, "the passphrase file is refused: \(problem)")
        }
        guard var data = FileManager.default.contents(atPath: path) else {
            throw SecItemError(errSecIO, "cannot read the passphrase file \(path)")
        }
        defer { data.resetBytes(in: 0..<data.count) }
        var end = data.count
        while end > 0, data[end - 1] == 0x0A || data[end - 1] == 0x0D { end -= 1 }
        guard end > 0 else { throw SecItemError(errSecParam, "the passphrase file \(path) is empty") }
        return Passphrase(bytes: data[0..<end])
    }
}
