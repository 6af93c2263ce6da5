import Foundation
import SecItemGitCredential

/// credential-helper: git's credential helper, the same one `git-credential-secitem` runs.
enum CredentialHelperVerb {
    static let name = "credential-helper"
    static let summary = "Git's credential helper (get, store, erase on standard input), as git-credential-secitem."

    /// Runs the helper with the arguments after the verb, exactly as the
    /// `git-credential-secitem` executable does (its options are its own, not the
    /// other verbs': `--timeout=SECONDS`, `--backend=NAME`).
    static func main(_ arguments: [String], environment: [String: String]) -> Int32 {
        GitCredentialCommand.main(arguments, name: "secitem \(name)", environment: environment)
    }
}
