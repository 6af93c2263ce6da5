import Foundation
import SecItem
import SecItemCore

/// The `secitem` command: its verbs, the overview, and `main`, which runs one invocation.
enum Command {
    /// Every verb, in the order `--help` lists them.
    static var verbs: [Verb] { PasswordVerbs.all + otherVerbs }

    static var otherVerbs: [Verb] { [DumpVerb.verb, GroupVerbs.setAccessGroup, DiagnoseVerb.verb] + TransferVerbs.all + CertificateVerbs.all + FileVerbs.all }

    /// The verb called `name`, building only it when it is a password verb (the common case).
    static func verb(named name: String) -> Verb? {
        if let password = PasswordVerbs.named.first(where: { $0.name == name }) { return password.make() }
        return otherVerbs.first { $0.name == name }
    }

    /// The version `--version` prints and the manual pages carry.
    static let version = "0.1"

    /// The overview's paragraphs, shared with `secitem(1)` (Manual).
    static let overviewDescription = """
        Manage the SecItem keychain from the shell, with the verbs and flags of macOS `security`.
        The keychain is the backend SECITEM_BACKEND names, or the config file's, or the automatic
        choice (Secret Service when a provider answers on the session bus, else the encrypted file).
        """
    static let secretsNote = """
        Secrets: `-w` as the last option, or `-w -`, reads the password from standard input (no echo
        on a terminal); a password given as an argument works but is visible in the process list.
        """
    /// The settings' variables, from their declarations (`SecItemBackendRegistry.settings`).
    static var environmentNote: String {
        var lines: [String] = []
        var line = "Environment:"
        for variable in SecItemBackendRegistry.settings.map(\.variable) {
            if line.count + variable.count + 2 > 96 {
                lines.append(line + ",")
                line = variable
            } else {
                line += (line == "Environment:" ? " " : ", ") + variable
            }
        }
        lines.append(line + ";")
        lines.append("config file $XDG_CONFIG_HOME/secitem/config (secitem-config(5); `secitem diagnose` shows each")
        lines.append("setting given and where it came from).")
        return lines.joined(separator: "\n")
    }
    /// Every registered backend (`SecItemBackendRegistry`: those of the build's traits and
    /// any a program registered), and the three ways to name one.
    static var backendsNote: String {
        "Backends: \(SecItemBackendChoice.names.joined(separator: ", ")); one is named with --backend NAME,\n"
            + "SECITEM_BACKEND=NAME or `backend = NAME` in the config file."
    }
    static let exitStatusNote = """
        Exit status: 0 success, 2 bad usage, 44 not found, 45 duplicate, 51 auth failed or locked,
        53 no keychain available, 1 any other failure (see docs/cli.md).
        """

    static var overview: String {
        var out = """
            Usage: secitem <verb> [options]
                   secitem <verb> --help
                   secitem help [verb]

            \(overviewDescription)

            \(backendsNote)

            Verbs:

            """
        let rows = verbs.map { ($0.name, $0.summary) } + [(CredentialHelperVerb.name, CredentialHelperVerb.summary)]
        let width = rows.map(\.0.count).max() ?? 0
        for (name, summary) in rows {
            out += "  \(name)\(String(repeating: " ", count: width - name.count + 2))\(summary)\n"
        }
        out += "\n\(secretsNote)\n\n\(environmentNote)\n\n\(exitStatusNote)\n"
        return out
    }

    /// Every verb name, the credential helper's included (what completion offers).
    static var verbNames: [String] { verbs.map(\.name) + [CredentialHelperVerb.name] }

    /// " Did you mean 'x'?" when exactly one verb is within two edits of `typed`, else "".
    /// Only a verb's name is ever printed, never what was typed (it may be a secret).
    static func suggestion(for typed: String) -> String {
        let close = (verbNames + ["help"]).filter { EditDistance.between(typed, $0, limit: 2) <= 2 }
        guard close.count == 1 else { return "" }
        return " Did you mean '\(close[0])'?"
    }

    /// Runs the command line; returns the exit status.
    static func main(_ commandLine: [String], environment: [String: String]) -> Int32 {
        var arguments = commandLine
        // `secitem --backend NAME <verb> …` is `secitem <verb> --backend=NAME …`.
        if let first = arguments.first, first == "--backend" || first.hasPrefix("--backend=") {
            let value = first == "--backend" ? arguments.dropFirst().first : String(first.dropFirst("--backend=".count))
            guard let value else {
                Console.error("secitem: --backend needs a backend name\nTry 'secitem --help'.\n")
                return ExitStatus.usage.rawValue
            }
            do throws(CommandError) {
                _ = try Invocation.backend(named: value)
            } catch {
                Console.error("secitem: \(error.message)\n")
                return error.status.rawValue
            }
            arguments.removeFirst(first == "--backend" ? 2 : 1)
            if !arguments.isEmpty { arguments.insert("--backend=\(value)", at: 1) }
        }
        guard let first = arguments.first else {
            Console.error(overview)
            return ExitStatus.usage.rawValue
        }
        if first == CredentialHelperVerb.name {
            return CredentialHelperVerb.main(Array(arguments.dropFirst()), environment: environment)
        }
        if first == "--help" || first == "-h" || first == "help" {
            if first == "help", arguments.count > 1 {
                if arguments[1] == CredentialHelperVerb.name {
                    return CredentialHelperVerb.main(["--help"], environment: environment)
                }
                guard let verb = verb(named: arguments[1]) else {
                    Console.error("secitem: the second argument is not a verb\(UsageError.notShown).\(suggestion(for: arguments[1]))\nTry 'secitem --help'.\n")
                    return ExitStatus.usage.rawValue
                }
                Console.write(verb.help)
            } else {
                Console.write(overview)
            }
            return ExitStatus.success.rawValue
        }
        if first == "--version" {
            Console.write("secitem \(version)\n")
            return ExitStatus.success.rawValue
        }
        if first == Generate.name {
            return Generate.main(Array(arguments.dropFirst()), environment: environment)
        }
        if first == Generate.completeName {
            return Generate.complete(Array(arguments.dropFirst()), environment: environment)
        }
        guard let verb = verb(named: first) else {
            Console.error("secitem: the first argument is not a verb\(UsageError.notShown).\(suggestion(for: first))\nTry 'secitem --help'.\n")
            return ExitStatus.usage.rawValue
        }
        let parsed: ParsedArguments
        do {
            parsed = try ArgumentParser.parse(Array(arguments.dropFirst()), options: verb.options, maxOperands: verb.maxOperands)
        } catch {
            Console.error("secitem \(verb.name): \(error.message)\nTry 'secitem \(verb.name) --help'.\n")
            return ExitStatus.usage.rawValue
        }
        if parsed.has("help") {
            Console.write(verb.help)
            return ExitStatus.success.rawValue
        }
        do {
            _ = try Invocation.backend(parsed)
            try verb.run(Invocation(environment: environment, arguments: parsed))
            return ExitStatus.success.rawValue
        } catch {
            var message = "secitem \(verb.name): \(error.message)\n"
            if error.status == .usage && !error.message.contains("(-") {
                message += "Try 'secitem \(verb.name) --help'.\n"
            }
            Console.error(message)
            return error.status.rawValue
        }
    }
}
