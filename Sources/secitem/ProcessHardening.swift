import CSecItemProcess

/// What the command does to its own process before anything else (main.swift).
enum ProcessHardening {
    /// Environment variables that hold secrets: read once at start, then wiped
    /// from the process environment.
    static let secretVariables = ["SECITEM_PASSPHRASE", "SECITEM_EXPORT_PASSPHRASE", "SECITEM_NEW_PASSPHRASE"]

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
