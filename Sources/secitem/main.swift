// secitem: the keychain from the shell (see docs/cli.md).
import CSecItemProcess
import Foundation
import SecItemCore
import SecItemGitCredential

// The process first (docs/cli.md, "The process"): no core dumps and no ptrace by
// other processes of the user; then the secrets the environment carries are taken
// and wiped from it, so /proc/PID/environ and child processes no longer see them.
let hardening = csecitem_process_harden()
// OpenSSL is told first that this process is short-lived (no exit-time cleanup).
csecitem_process_short_lived()
// Copied byte for byte into zeroing Passphrase buffers (never a String), the
// entries zeroed and unset; the dictionary below is read after, without them.
SecretEnvironment.take(ProcessHardening.secretVariables)
let environment = ProcessHardening.environment()
if hardening != 0 {
    Console.error("secitem: warning: cannot turn core dumps off: \(String(cString: strerror(hardening)))\n")
}
// Installed as a link named git-credential-secitem (the Debian package does so), the
// program is git's credential helper, exactly as the git-credential-secitem executable.
if CommandLine.arguments.first?.split(separator: "/").last == "git-credential-secitem" {
    exit(GitCredentialCommand.main(Array(CommandLine.arguments.dropFirst()), name: "git-credential-secitem", environment: environment))
}
exit(Command.main(Array(CommandLine.arguments.dropFirst()), environment: environment))
