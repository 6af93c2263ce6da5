// git-credential-secitem: git's credential helper on the SecItem keychain
// (docs/git-credential.md). `git config --global credential.helper secitem`.
import Foundation
import SecItemGitCredential

// Before anything reads the environment: the passphrase and the PostgreSQL URL leave it.
GitCredentialCommand.takeEnvironmentSecrets()
exit(
    GitCredentialCommand.main(
        Array(CommandLine.arguments.dropFirst()), name: "git-credential-secitem",
        environment: ProcessInfo.processInfo.environment))
