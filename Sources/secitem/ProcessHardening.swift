import CSecItemProcess
import SecItemCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What the command does to its own process before anything else (main.swift).
enum ProcessHardening {
    /// Environment variables that hold secrets: read once at start, then wiped
    /// from the process environment.
    static let secretVariables = SecretEnvironment.standardSecrets + ["SECITEM_EXPORT_PASSPHRASE", "SECITEM_NEW_PASSPHRASE"]

    /// The process environment, read from `environ` by bytes: what
    /// `ProcessInfo.processInfo.environment` gives (the first of duplicate names wins,
    /// as for `getenv`; invalid UTF-8 repaired), at a fraction of its cost (it splits
    /// each entry by `Character`, about a quarter of a millisecond for a desktop's
    /// environment, at every start).
    static func environment() -> [String: String] {
        var out = [String: String](minimumCapacity: 64)
        let table: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = environ
        guard var entry = table else { return out }
        while let pointer = entry.pointee {
            let length = strlen(pointer)
            pointer.withMemoryRebound(to: UInt8.self, capacity: length) { start in
                let bytes = UnsafeBufferPointer(start: start, count: length)
                guard let equals = bytes.firstIndex(of: UInt8(ascii: "=")), equals > 0 else { return }
                let name = String(decoding: bytes[..<equals], as: UTF8.self)
                if out[name] == nil { out[name] = String(decoding: bytes[(equals + 1)...], as: UTF8.self) }
            }
            entry += 1
        }
        return out
    }

    /// The state `diagnose` reports, read back from the kernel.
    static var summary: String {
        let dumpable = csecitem_process_dumpable()
        let core = csecitem_process_core_limit()
        let coreText = core == -1 ? "unlimited" : core == -2 ? "unknown" : "\(core)"
        let off = dumpable == 0 && core == 0
        return "core dumps \(off ? "off" : "ON") (dumpable \(dumpable), RLIMIT_CORE \(coreText)); "
            + "secrets in \(secretVariables.joined(separator: ", ")) are removed from the environment once read"
    }
}
