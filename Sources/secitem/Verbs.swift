import Foundation
import SecItem
import SecItemCore
import SecItemPolkit

/// What every verb runs with: the environment (with the config file applied by
/// the SecItem module) and the backend asked for on the command line.
struct Session: Sendable {
    let environment: [String: String]
    let arguments: ParsedArguments

    /// The environment with `--backend` applied.
    var effectiveEnvironment: [String: String] {
        var env = environment
        if let backend = arguments.value("backend") { env["SECITEM_BACKEND"] = backend }
        return env
    }

    /// Opens the keychain this invocation uses: `--backend`, else the process choice.
    func client() throws(CommandError) -> SecItemClient {
        try Self.client(environment: effectiveEnvironment)
    }

    /// The command's own application identifier: where items added without -G go
    /// when no group or application identifier is configured.
    static let toolIdentifier = "org.secitem.cli"

    /// The operator's entitlements: every group (docs/cli.md, "Access groups").
    static func entitlements(_ configuration: SecItemConfiguration) throws(SecItemError) -> AccessGroups {
        try configuration.operatorAccessGroups(toolIdentifier: toolIdentifier)
    }

    /// Opens a named backend (for migrate), or the process choice when `name` is nil.
    ///
    /// The passphrase taken from `SECITEM_PASSPHRASE` at start-up is dropped once the
    /// backend is open (the backend keeps only the key derived from it), unless
    /// `keepPassphrase` says another backend is still to be opened with it.
    static func client(environment: [String: String], backend name: String? = nil, keepPassphrase: Bool = false)
        throws(CommandError) -> SecItemClient
    {
        var env = environment
        if let name { env["SECITEM_BACKEND"] = name }
        defer { if !keepPassphrase { SecretEnvironment.forget(SecItemConfiguration.Variable.passphrase) } }
        do {
            let choice = try SecItemBackendChoice.resolve(environment: env)
            return SecItemClient(
                backend: choice.backend, accessGroups: try entitlements(choice.configuration),
                accessAuthority: PolkitAccessAuthority.processDefault)
        } catch {
            let which = env["SECITEM_BACKEND"].map { "the \($0) backend" } ?? "the keychain"
            throw CommandError(error, context: "cannot open \(which)")
        }
    }
}

/// One verb of the command.
struct Verb: Sendable {
    let name: String
    let summary: String
    /// The synopsis after `secitem <name>`.
    let synopsis: String
    /// Paragraphs after the option list.
    let discussion: String
    let options: [OptionSpec]
    let maxOperands: Int
    let run: @Sendable (Session) throws(CommandError) -> Void

    init(_ name: String, summary: String, synopsis: String, discussion: String = "", options: [OptionSpec],
         maxOperands: Int = 0, run: @escaping @Sendable (Session) throws(CommandError) -> Void)
    {
        self.name = name
        self.summary = summary
        self.synopsis = synopsis
        self.discussion = discussion
        self.options = options + [Self.backendOption, Self.helpOption]
        self.maxOperands = maxOperands
        self.run = run
    }

    static let backendOption = OptionSpec(
        "backend", long: "backend", valueName: "name",
        help: "Use this backend: file, secret-service or memory (default: SECITEM_BACKEND, the config file, then the automatic choice).")
    static let helpOption = OptionSpec("help", short: "h", long: "help", .flag, help: "Show this help.")

    var help: String {
        var out = "Usage: secitem \(name) \(synopsis)\n\n\(summary)\n\nOptions:\n"
        let rows = options.map { ($0.synopsis, $0.help) }
        let width = min(28, rows.map(\.0.count).max() ?? 0)
        for (left, right) in rows {
            let pad = left.count <= width ? String(repeating: " ", count: width - left.count + 2) : "\n" + String(repeating: " ", count: width + 4)
            out += "  \(left)\(pad)\(right)\n"
        }
        if !discussion.isEmpty { out += "\n\(discussion)\n" }
        out += "\nExit status: 0 success, 2 bad usage, 44 not found, 45 duplicate, 51 auth failed or locked,\n53 no keychain available, 1 any other failure (see docs/cli.md).\n"
        return out
    }
}

enum Command {
    static let verbs: [Verb] = PasswordVerbs.all + [DumpVerb.verb, GroupVerbs.setAccessGroup, DiagnoseVerb.verb] + TransferVerbs.all + FileVerbs.all

    static var overview: String {
        var out = """
            Usage: secitem <verb> [options]
                   secitem <verb> --help
                   secitem help [verb]

            Manage the SecItem keychain from the shell, with the verbs and flags of macOS `security`.
            The keychain is the backend SECITEM_BACKEND names, or the config file's, or the automatic
            choice (Secret Service when a provider answers on the session bus, else the encrypted file).

            Verbs:

            """
        let rows = verbs.map { ($0.name, $0.summary) } + [(CredentialHelperVerb.name, CredentialHelperVerb.summary)]
        let width = rows.map(\.0.count).max() ?? 0
        for (name, summary) in rows {
            out += "  \(name)\(String(repeating: " ", count: width - name.count + 2))\(summary)\n"
        }
        out += """

            Secrets: `-w` as the last option, or `-w -`, reads the password from standard input (no echo
            on a terminal); a password given as an argument works but is visible in the process list.

            Environment: SECITEM_BACKEND, SECITEM_FILE, SECITEM_KEY_FILE, SECITEM_PASSPHRASE,
            SECITEM_COLLECTION, SECITEM_ACCESS_GROUPS; config file $XDG_CONFIG_HOME/secitem/config.

            Exit status: 0 success, 2 bad usage, 44 not found, 45 duplicate, 51 auth failed or locked,
            53 no keychain available, 1 any other failure (see docs/cli.md).

            """
        return out
    }

    /// Runs the command line; returns the exit status.
    static func main(_ arguments: [String], environment: [String: String]) -> Int32 {
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
                guard let verb = verbs.first(where: { $0.name == arguments[1] }) else {
                    Console.error("secitem: the second argument is not a verb\(UsageError.notShown)\nTry 'secitem --help'.\n")
                    return ExitStatus.usage.rawValue
                }
                Console.write(verb.help)
            } else {
                Console.write(overview)
            }
            return ExitStatus.success.rawValue
        }
        if first == "--version" {
            Console.write("secitem 0.1\n")
            return ExitStatus.success.rawValue
        }
        guard let verb = verbs.first(where: { $0.name == first }) else {
            Console.error("secitem: the first argument is not a verb\(UsageError.notShown)\nTry 'secitem --help'.\n")
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
            try verb.run(Session(environment: environment, arguments: parsed))
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
