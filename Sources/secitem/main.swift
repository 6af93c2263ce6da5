// secitem: the keychain from the shell (see docs/cli.md).
import Foundation

exit(Command.main(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
