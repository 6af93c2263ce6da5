import SecItem
public import SecItemCore
public import Foundation
import CSecItemProcess
#if canImport(Glibc)
import Glibc
#endif

/// The credential helper as a command: `git-credential-secitem [options] <get|store|erase>`,
/// also `secitem credential-helper [options] <get|store|erase>`.
///
/// Git runs it with the action last and the credential on standard input; the
/// answer to `get` goes to standard output. It never prompts: when the keychain
/// cannot be used (a locked collection, a missing key, no store at all) it says
/// why on standard error, answers nothing and exits 1, and git asks the user.
public enum GitCredentialCommand {
    /// What the command line gave.
    public struct Options: Sendable, Equatable {
        /// `--timeout=SECONDS`: stored credentials expire after this long.
        public var timeout: Int?
        /// `--backend=NAME`: the keychain backend (else `SECITEM_BACKEND`, the config file, the automatic choice).
        public var backend: String?
        /// The action: `get`, `store`, `erase`, or anything else (ignored).
        public var action: String?
        /// `--foreign-items=git|all|none`: which items other Secret Service clients stored
        /// count as git's credentials (default: git-credential-libsecret's own).
        public var foreignItems: GitCredentialStore.ForeignItems = .git
        /// `--help`.
        public var help = false

        public init(timeout: Int? = nil, backend: String? = nil, action: String? = nil) {
            self.timeout = timeout
            self.backend = backend
            self.action = action
        }
    }

    /// The largest `--timeout`: 100 years (365-day), in seconds. Larger values are refused
    /// (status 2) rather than added to the clock, where they would overflow.
    public static let maximumTimeout = 100 * 365 * 86_400

    /// The help text; `name` is how the command was invoked.
    public static func usage(_ name: String) -> String {
        """
        Usage: \(name) [--timeout=SECONDS] [--backend=NAME] [--foreign-items=git|all|none] <get|store|erase>

        Git's credential helper on the SecItem keychain: HTTPS (and ftp, imap, smtp…) credentials
        are kept as internet passwords, as git-credential-osxkeychain keeps them on a Mac, in the
        Secret Service on a desktop and in the encrypted file on a server.

          git config --global credential.helper secitem                  # the automatic choice
          git config --global credential.helper 'secitem --backend=file' # a headless server

        Options:
          --timeout=SECONDS  stored credentials expire after SECONDS, at most \(maximumTimeout) (100 years)
          --backend=NAME     file or secret-service (default: SECITEM_BACKEND, the config file,
                             then the Secret Service when one answers, else the encrypted file)
          --foreign-items=git|all|none
                             on the Secret Service, which items other tools stored are git's:
                             git-credential-libsecret's (git, the default), also GNOME's network
                             passwords (all: erased only with their password), or none

        The credential is read from standard input (git's key=value lines). It never prompts: when
        the keychain cannot be used it says why on standard error and answers nothing, and git asks.
        Other actions are ignored, as git's protocol requires. See docs/git-credential.md.

        """
    }

    /// Parses the arguments git passes (options first, the action last).
    /// - Throws: A message for an unknown option or a malformed value.
    public static func parse(_ arguments: [String]) throws(GitCredentialInputError) -> Options {
        var options = Options()
        var index = 0
        func value(_ name: String, _ argument: String) throws(GitCredentialInputError) -> String {
            if let equals = argument.firstIndex(of: "=") { return String(argument[argument.index(after: equals)...]) }
            index += 1
            guard index < arguments.count else { throw GitCredentialInputError("\(name) needs a value") }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--help" || argument == "-h" {
                options.help = true
            } else if argument == "--timeout" || argument.hasPrefix("--timeout=") {
                let text = try value("--timeout", argument)
                // Int() refuses what does not fit (no trap); the bound keeps now + timeout far
                // inside Int64 whatever the clock says.
                guard let seconds = Int(text), (1...maximumTimeout).contains(seconds) else {
                    throw GitCredentialInputError(
                        "--timeout needs a number of seconds from 1 to \(maximumTimeout) (100 years), not '\(text)'")
                }
                options.timeout = seconds
            } else if argument == "--backend" || argument.hasPrefix("--backend=") {
                options.backend = try value("--backend", argument)
            } else if argument == "--foreign-items" || argument.hasPrefix("--foreign-items=") {
                let text = try value("--foreign-items", argument)
                guard let choice = GitCredentialStore.ForeignItems(rawValue: text) else {
                    throw GitCredentialInputError("--foreign-items needs git, all or none, not '\(text)'")
                }
                options.foreignItems = choice
            } else if argument.hasPrefix("-") {
                throw GitCredentialInputError("unknown option '\(argument)'")
            } else if options.action == nil {
                options.action = argument
            } else {
                throw GitCredentialInputError("unexpected argument '\(argument)' after the action '\(options.action!)'")
            }
            index += 1
        }
        return options
    }

    /// Runs the helper as a process does: reads standard input, writes the answer
    /// to standard output and messages to standard error; returns the exit status.
    ///
    /// - Parameters:
    ///   - arguments: The arguments after the command's name.
    ///   - name: The name messages start with.
    public static func main(_ arguments: [String], name: String, environment: [String: String]) -> Int32 {
        disableCoreDumps()
        let options: Options
        do throws(GitCredentialInputError) {
            options = try parse(arguments)
        } catch {
            writeAll(Array("\(name): \(error.message)\n\(usage(name))".utf8), to: STDERR_FILENO)
            return 2
        }
        if options.help {
            writeAll(Array(usage(name).utf8), to: STDOUT_FILENO)
            return 0
        }
        guard let action = options.action else {
            writeAll(Array(usage(name).utf8), to: STDERR_FILENO)
            return 2
        }
        let input = readInput()
        let outcome = run(options: options, action: action, input: input, environment: environment)
        if !outcome.answer.isEmpty { writeAll(Array(outcome.answer), to: STDOUT_FILENO) }
        for message in outcome.messages { writeAll(Array("\(name): \(message)\n".utf8), to: STDERR_FILENO) }
        return outcome.status
    }

    /// What one run produced.
    public struct Outcome: Sendable {
        /// Standard output: the answer to `get`, else empty.
        public var answer = Data()
        /// Lines for standard error (never a secret).
        public var messages: [String] = []
        /// The exit status: 0 done (found or not), 1 the keychain could not be used or the input was refused.
        public var status: Int32 = 0
    }

    /// The helper's application identifier, its access group unless `SECITEM_ACCESS_GROUPS`
    /// or `SECITEM_APPLICATION_ID` (or the config file) says otherwise.
    public static let applicationIdentifier = "org.secitem.git-credential"

    /// Runs one action on `input` with the keychain `environment` (and the options) select.
    ///
    /// - Parameter client: A keychain to use instead of the one the environment selects (tests).
    public static func run(
        options: Options, action: String, input: some Collection<UInt8>, environment: [String: String],
        client: SecItemClient? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) -> Outcome {
        var outcome = Outcome()
        guard ["get", "store", "erase"].contains(action) else { return outcome }  // ignored, as the protocol requires
        let credential: GitCredential
        do throws(GitCredentialInputError) {
            credential = try GitCredential.parse(input)
        } catch {
            outcome.messages.append("refused the input from git: \(error.message); nothing was done")
            outcome.status = 1
            return outcome
        }
        // Nothing to do for a protocol that is not stored: do not even open the keychain.
        guard let scheme = credential.scheme, GitCredentialStore.protocolCodes[scheme] != nil, credential.host != nil
        else { return outcome }
        let keychain: SecItemClient
        if let client {
            keychain = client
        } else {
            var env = environment
            if let backend = options.backend { env["SECITEM_BACKEND"] = backend }
            // The backend keeps only the key derived from the passphrase: drop the taken copy once it is open.
            defer { SecretEnvironment.forget(SecItemConfiguration.Variable.passphrase) }
            // git's own libsecret helper's credentials are git's too: `erase` removes them
            // in place, one by one by persistent reference (never a class-wide delete).
            env["SECITEM_SECRET_SERVICE_FOREIGN_WRITES"] = "1"
            do throws(SecItemError) {
                let choice = try SecItemBackendChoice.resolve(environment: env)
                // One identity for both entry points (git-credential-secitem, secitem credential-helper).
                var groups = try choice.configuration.accessGroups(toolIdentifier: applicationIdentifier).groups
                // On the Secret Service, also what git-credential-libsecret stored (read, erased in place).
                if let foreign = choice.backend as? any SecItemForeignItemsExposing, options.foreignItems != .none {
                    groups.append(foreign.foreignItemsAccessGroup)
                }
                keychain = SecItemClient(backend: choice.backend, accessGroups: AccessGroups(groups))
            } catch {
                outcome.messages.append("cannot open the keychain: \(describe(error)); \(fallback(action))")
                outcome.status = 1
                return outcome
            }
        }
        let store = GitCredentialStore(client: keychain, now: now, foreignItems: options.foreignItems)
        do throws(SecItemError) {
            switch action {
            case "get":
                guard var found = try store.get(credential) else { return outcome }
                if credential.username != nil { found.username = nil }  // git knows it already
                var extra: [(String, String)] = []
                if credential.capabilities.contains("state") {
                    extra = [("capability[]", "state"), ("state[]", GitCredentialStore.seenState)]
                }
                do throws(GitCredentialInputError) {
                    outcome.answer = try found.encodeAnswer(extraLines: extra)
                } catch {
                    outcome.messages.append("\(error.message) (\(credential.url)); answering nothing")
                    outcome.status = 1
                }
            case "store":
                if case .skipped(let why) = try store.store(credential, timeout: options.timeout),
                    !credential.state.contains(GitCredentialStore.seenState)
                {
                    outcome.messages.append("nothing stored for \(credential.url): \(why)")
                }
            default:
                _ = try store.erase(credential)
            }
        } catch {
            outcome.messages.append("cannot \(action) the credential for \(credential.url): \(describe(error)); \(fallback(action))")
            outcome.status = 1
        }
        return outcome
    }

    private static func describe(_ error: SecItemError) -> String {
        var text = "\(error.message) (\(error.status))"
        if let detail = error.detail, !detail.isEmpty { text += ": \(detail)" }
        return text
    }

    private static func fallback(_ action: String) -> String {
        switch action {
        case "get": return "git will ask for the password"
        case "store": return "the credential was not saved"
        default: return "nothing was erased"
        }
    }

    // MARK: Process plumbing

    /// Reads standard input up to a blank line or the end (at most the protocol's bound, plus one byte).
    static func readInput() -> [UInt8] {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while data.count <= GitCredential.maximumInputLength {
            let n = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            let start = data.count
            data.append(contentsOf: buffer[0..<n])
            // Stop at a blank line: git may keep its end of the pipe open.
            let from = max(0, start - 2)
            if data.first == 0x0A || (data.count >= 2 && data[0] == 0x0D && data[1] == 0x0A) { break }
            var i = from
            var blank = false
            while i + 1 < data.count {
                if data[i] == 0x0A && (data[i + 1] == 0x0A || (data[i + 1] == 0x0D && i + 2 < data.count && data[i + 2] == 0x0A)) {
                    blank = true
                    break
                }
                i += 1
            }
            if blank { break }
        }
        buffer.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        return data
    }

    private static func writeAll(_ bytes: [UInt8], to fd: Int32) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += n
        }
    }

    /// Takes the secrets the environment carries (`SECITEM_PASSPHRASE`, `SECITEM_POSTGRESQL_URL`)
    /// out of it, as the `secitem` command does (docs/cli.md, "The process"): copied into
    /// zeroing buffers, their entries zeroed, so `/proc/PID/environ` and child processes no
    /// longer hold them; the configuration still finds them. Call it first in `main`, before
    /// other threads run and before the environment is read (`secitem credential-helper`
    /// has had it done by the command's own `main`).
    public static func takeEnvironmentSecrets() {
        SecretEnvironment.take(SecretEnvironment.standardSecrets)
    }

    /// The process holds passwords in memory: no core file may keep them, and no
    /// other process of the user may attach to it (the `secitem` command's hardening).
    static func disableCoreDumps() {
        _ = csecitem_process_harden()
    }
}
