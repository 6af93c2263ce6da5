// git-credential-secitem: git's credential helper on the SecItem keychain
// (docs/git-credential.md). `git config --global credential.helper secitem`.
import Foundation
import SecItemGitCredential

exit(
    GitCredentialCommand.main(
        Array(CommandLine.arguments.dropFirst()), name: "git-credential-secitem",
        environment: ProcessInfo.processInfo.environment))
