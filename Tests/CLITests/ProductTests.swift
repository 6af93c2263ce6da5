import Foundation
import SecItem
import SecItemCore
import SecItemTestSupport
import Testing

/// The manual pages and shell completions agree with `--help` (one source: the verb tables),
/// and the frictions a newcomer met (issue 28) stay fixed.
@Suite("Manual pages, completion and newcomer messages")
struct ProductTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Text with runs of whitespace made one space and typographic quotes and hyphens plain,
    /// so `--help`'s columns and a rendered page compare word for word.
    static func normalized(_ text: String) -> String {
        var s = text
        for (from, to) in [("\u{2018}", "'"), ("\u{2019}", "'"), ("\u{201C}", "\""), ("\u{201D}", "\""), ("\u{2010}", "-"), ("\u{2212}", "-"), ("\u{2026}", "..."), ("\u{2192}", "->"), ("\u{2014}", "--")] {
            s = s.replacingOccurrences(of: from, with: to)
        }
        return s.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// `secitem _generate man NAME`, rendered by man(1) as plain text on one very wide line per paragraph.
    static func renderedPage(_ name: String) throws -> String {
        let cli = try CLI()
        defer { cli.remove() }
        let page = try cli.run(["_generate", "man", name])
        #expect(page.status == 0, "\(page.stderr)")
        let file = cli.root.appendingPathComponent("\(name).man")
        try Data(page.stdout.utf8).write(to: file)
        var env = ProcessInfo.processInfo.environment
        env["MANWIDTH"] = "4000"
        env["MAN_KEEP_FORMATTING"] = nil
        env["LANG"] = "C.UTF-8"
        let man = try ChildProcess.run(try Executables.which("man"), ["-P", "cat", "-l", file.path], environment: env)
        #expect(man.status == 0, "man -l failed: \(man.stderr)")
        #expect(!man.stderr.contains("warning"), "man warns about the page: \(man.stderr)")
        return normalized(man.stdout)
    }

    /// The verbs `secitem --help` lists.
    static func verbsInHelp(_ cli: CLI) throws -> [String] {
        let help = try cli.run(["--help"]).stdout
        let section = help.components(separatedBy: "Verbs:\n").last?.components(separatedBy: "\n\n").first ?? ""
        return section.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    @Test("secitem(1) says what `secitem help VERB` says, for every verb: synopsis, summary, every option, the discussion")
    func manualAgreesWithHelp() throws {
        let page = try Self.renderedPage("secitem")
        let cli = try CLI()
        defer { cli.remove() }
        let verbs = try Self.verbsInHelp(cli)
        #expect(verbs.count >= 15, "\(verbs)")
        for verb in verbs where verb != "credential-helper" {
            let help = try cli.run(["help", verb])
            #expect(help.status == 0)
            // Usage line, summary, each option row (its flags and help), the discussion: every
            // paragraph of --help between the usage and the exit status appears in the page.
            let body = help.stdout.components(separatedBy: "\nExit status:").first ?? ""
            for paragraph in body.components(separatedBy: "\n\n") {
                for line in paragraph.split(separator: "\n") where !line.hasPrefix("Options:") {
                    var text = Self.normalized(String(line))
                    if text.hasPrefix("Usage: ") { text = String(text.dropFirst("Usage: ".count)) }
                    // An option row: its flags and its help are two pieces of the page.
                    for piece in text.components(separatedBy: "  ") where !piece.isEmpty {
                        let words = Self.normalized(piece)
                        #expect(page.contains(words), "secitem(1) lacks what `secitem help \(verb)` says: \(words)")
                    }
                }
            }
        }
        #expect(page.contains("credential-helper"))
        #expect(page.contains("EXIT STATUS") && page.contains("44 not found"))
    }

    @Test("git-credential-secitem(1) and secitem-config(5) say what the helper's usage and the config keys say")
    func otherPages() throws {
        let git = try Self.renderedPage("git-credential-secitem")
        let cli = try CLI()
        defer { cli.remove() }
        let usage = try cli.run(["credential-helper", "--help"]).stdout
        for option in ["--timeout=SECONDS", "--backend=NAME", "stored credentials expire after SECONDS"] {
            #expect(usage.contains(option) && git.contains(option), "\(option)")
        }
        let config = try Self.renderedPage("secitem-config")
        // The settings the built-in providers and the core declare (a test may declare more in this process).
        let declared = SecItemSettingCatalog.declared.filter { $0.scope == "core" }
            + SecItemBackendRegistry.providers.flatMap(\.settings)
        for setting in declared where setting.inConfigFile {
            #expect(config.contains("\(setting.key) (\(setting.variable))"), "secitem-config(5) lacks \(setting.key)")
        }
    }

    /// Runs bash completion for `words` (the last is the word being completed) and returns the candidates.
    static func complete(_ words: [String], environment extra: [String: String] = [:]) throws -> [String] {
        let cli = try CLI()
        defer { cli.remove() }
        let script = try cli.run(["_generate", "completion", "bash"])
        #expect(script.status == 0)
        let file = cli.root.appendingPathComponent("secitem.bash")
        try Data(script.stdout.utf8).write(to: file)
        let quoted = words.map { "'\($0)'" }.joined(separator: " ")
        let program = """
            source '\(file.path)'
            COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1)
            \(words[0] == "git-credential-secitem" ? "_git_credential_secitem" : "_secitem")
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        var env = cli.environment
        env["PATH"] = CLI.executable.deletingLastPathComponent().path + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        for (key, value) in extra { env[key] = value }
        let bash = try ChildProcess.run(try Executables.which("bash"), ["-c", program], environment: env)
        #expect(bash.status == 0, "\(bash.stderr)")
        return bash.stdout.split(separator: "\n").map(String.init)
    }

    @Test("bash completion: verbs, a verb's flags, backend names, access groups, item classes")
    func bashCompletion() throws {
        #expect(try Self.complete(["secitem", "find-gen"]) == ["find-generic-password"])
        #expect(try Self.complete(["secitem", "mig"]) == ["migrate"])
        let flags = try Self.complete(["secitem", "find-generic-password", "-"])
        #expect(["-a", "-s", "-w", "-G", "--access-group", "--backend", "--help"].allSatisfy(flags.contains), "\(flags)")
        #expect(!flags.contains("-U"), "-U is add's, not find's")
        let backends = try Self.complete(["secitem", "migrate", "--to", ""])
        #expect(Set(backends).isSuperset(of: ["file", "secret-service", "postgresql", "memory"]), "\(backends)")
        #expect(try Self.complete(["secitem", "add-generic-password", "--backend", "=", "sec"]) == ["secret-service"])
        let groups = try Self.complete(
            ["secitem", "add-generic-password", "-G", "com."], environment: ["SECITEM_ACCESS_GROUPS": "com.example.app,com.example.shared"])
        #expect(groups == ["com.example.app", "com.example.shared"], "\(groups)")
        #expect(try Self.complete(["secitem", "export", "--class", "g"]) == ["genp"])
        #expect(try Self.complete(["git-credential-secitem", "st"]) == ["store"])
    }

    @Test("zsh and fish completions parse (where the shells are installed), and name every verb")
    func otherShells() throws {
        let cli = try CLI()
        defer { cli.remove() }
        let verbs = try Self.verbsInHelp(cli)
        for shell in ["zsh", "fish"] {
            let script = try cli.run(["_generate", "completion", shell])
            #expect(script.status == 0)
            for verb in verbs { #expect(script.stdout.contains(verb), "\(shell) completion lacks \(verb)") }
            guard let path = try? Executables.which(shell) else { continue }
            let file = cli.root.appendingPathComponent("completion.\(shell)")
            try Data(script.stdout.utf8).write(to: file)
            let check = try ChildProcess.run(path, ["-n", file.path])
            #expect(check.status == 0, "\(shell) -n: \(check.stderr)")
        }
        #expect(try cli.run(["_generate", "completion", "tcsh"]).status == 2)
    }

    @Test("a mistyped verb gets a suggestion, never its own text back; a word far from every verb gets none")
    func didYouMean() throws {
        let cli = try CLI()
        defer { cli.remove() }
        let typo = try cli.run(["find-generic-pasword", "-s", "x"])
        #expect(typo.status == 2)
        #expect(typo.stderr.contains("Did you mean 'find-generic-password'?"), "\(typo.stderr)")
        #expect(!typo.stderr.contains("pasword"))
        let help = try cli.run(["help", "migrte"])
        #expect(help.stderr.contains("Did you mean 'migrate'?"), "\(help.stderr)")
        let far = try cli.run(["s3cret-value"])
        #expect(far.status == 2 && !far.stderr.contains("Did you mean"))
    }

    @Test("a duplicate add (exit 45) says -U updates the item")
    func duplicateSuggestsUpdate() throws {
        let cli = try CLI()
        defer { cli.remove() }
        #expect(try cli.run(["add-generic-password", "-a", "a", "-s", "s", "-w", "-"], stdin: "one").status == 0)
        let again = try cli.run(["add-generic-password", "-a", "a", "-s", "s", "-w", "-"], stdin: "two")
        #expect(again.status == 45)
        #expect(again.stderr.contains("-U updates the existing item"), "\(again.stderr)")
        #expect(!again.stderr.contains("two"))
    }

    @Test("re-importing an archive already imported says so, not 'the trace of an interrupted run … the other 0'")
    func reimportMessage() throws {
        let source = try CLI()
        defer { source.remove() }
        try TransferTests.fill(source)
        let file = source.root.appendingPathComponent("items.secitem").path
        let pass: [String: String?] = ["SECITEM_EXPORT_PASSPHRASE": "export-pass-1-long"]
        #expect(try source.run(["export", "--output", file], environment: pass).status == 0)
        let again = try source.run(["import", "--input", file], environment: pass)
        #expect(again.status == 45)
        #expect(again.stderr.contains("all 2 items are already in the file keychain with the same contents"), "\(again.stderr)")
        #expect(!again.stderr.contains("interrupted") && !again.stderr.contains("the other 0"), "\(again.stderr)")
    }

    @Test("a PostgreSQL socket error gives libpq's reason first, and no advice to restart the computer")
    func postgreSQLSocketMessage() throws {
        var cli = try CLI(backend: "postgresql")
        defer { cli.remove() }
        cli.environment["SECITEM_POSTGRESQL_URL"] = "postgresql:///secrets?host=\(cli.root.path)/no-such-dir&connect_timeout=2"
        cli.environment["SECITEM_POSTGRESQL_KEY_FILE"] = try PostgreSQLCLITests.keyFile(cli)
        let result = try cli.run(["find-generic-password", "-s", "s"])
        #expect(result.status == 53, "\(result.stderr)")
        #expect(!result.stderr.contains("restart your computer"), "\(result.stderr)")
        let reason = result.stderr.range(of: "No such file or directory") ?? result.stderr.range(of: "connect")
        let apple = result.stderr.range(of: "No keychain is available")
        #expect(reason != nil && apple != nil, "\(result.stderr)")
        if let reason, let apple { #expect(reason.lowerBound < apple.lowerBound, "\(result.stderr)") }
    }

    @Test("docs/SecItem.docc/TheFleet.md's shell lines run as written: add, find, and migrate --from file --to postgresql")
    func fleetArticleRuns() throws {
        try PostgreSQLCLITests.requireServer()
        let article = try String(contentsOf: Self.root.appendingPathComponent("docs/SecItem.docc/TheFleet.md"), encoding: .utf8)
        guard let block = ReadmeShellTests.shellBlocks(article).first else {
            Issue.record("TheFleet.md has no sh block")
            return
        }
        #expect(block.contains("secitem migrate --from file --to postgresql"))
        let cli = try CLI(backend: nil, bus: false)
        defer { cli.remove() }
        // This machine already has items of its own, in its file keychain with its own generated key.
        #expect(try cli.run(["add-generic-password", "-a", "local", "-s", "own", "-w", "-"], stdin: "mine").status == 0)
        // The article's lines, with the URL and key file pointed at this test's server and directory.
        let key = try PostgreSQLCLITests.keyFile(cli)
        let schema = "fleet_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        let script = block.replacingOccurrences(of: "/etc/secitem/fleet.key", with: key)
            .replacingOccurrences(
                of: "'postgresql://keychain@db.internal/secrets?sslmode=verify-full'", with: "''")
        #expect(script != block)
        let result = try ReadmeShellTests.runScript(
            "set -e\nexport SECITEM_POSTGRESQL_SCHEMA=\(schema)\n" + script, cli: cli)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("t0ken-v2"))
        // The machine's own item joined the shared store; the file keychain still opens with its own key.
        var shared = cli.environment
        shared["SECITEM_BACKEND"] = "postgresql"
        shared["SECITEM_POSTGRESQL_KEY_FILE"] = key
        shared["SECITEM_POSTGRESQL_SCHEMA"] = schema
        let joined = try ChildProcess.run(CLI.executable.path, ["find-generic-password", "-a", "local", "-s", "own", "-w"], environment: shared)
        #expect(joined.stdout == "mine\n", "\(joined.stderr)")
    }

    @Test("scripts/with-secret-service keeps git's global config: git config --global inside sees the caller's")
    func withSecretServiceKeepsGitConfig() throws {
        let cli = try CLI()
        defer { cli.remove() }
        let home = cli.root.appendingPathComponent("home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        try Data("[credential]\n\thelper = secitem-from-outside\n".utf8).write(to: home.appendingPathComponent(".gitconfig"))
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("GIT_") }
        env["HOME"] = home.path
        env["XDG_CONFIG_HOME"] = nil
        let script = Self.root.appendingPathComponent("scripts/with-secret-service").path
        let inside = try ChildProcess.run(
            script, ["sh", "-c", "echo \"home=$HOME\"; git config --global credential.helper"], environment: env, timeout: .seconds(60))
        #expect(inside.status == 0, "\(inside.stderr)")
        #expect(inside.stdout.contains("secitem-from-outside"), "\(inside.stdout) \(inside.stderr)")
        #expect(!inside.stdout.contains("home=\(home.path)\n"), "HOME is still replaced inside (the keyring's isolation)")
    }

    @Test("a program that cannot see another program's item is told, once, which group holds it (debug builds)")
    func foreignGroupNote() throws {
        let cli = try CLI(backend: nil, bus: false)
        defer { cli.remove() }
        let bin = cli.root.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let writer = try AppProgram(named: "writerApp", in: bin), reader = try AppProgram(named: "readerApp", in: bin)
        try writer.ok(["store", "W"], cli)
        let read = try reader.run(["read", "api", "user"], cli)
        #expect(read.status == 44)
        #expect(read.stderr.contains("a matching item is in the access group 'executable.writerApp'"), "\(read.stderr)")
        #expect(read.stderr.contains("SECITEM_ACCESS_GROUPS"))
        #expect(!read.stderr.contains("W/"), "no data in the note")
        // Nothing of the kind when nothing matches anywhere.
        let none = try reader.run(["read", "no-such-service", "user"], cli)
        #expect(none.status == 44 && !none.stderr.contains("a matching item is in"), "\(none.stderr)")
        // Entitled to the writer's group: found, no note.
        let shared = try reader.run(["read", "api", "user"], cli, environment: ["SECITEM_ACCESS_GROUPS": "executable.readerApp,executable.writerApp"])
        #expect(shared.status == 0 && !shared.stderr.contains("note"), "\(shared.stderr)")
    }

    @Test("a test process on the user's real keychain by default is warned once; one that chose its store is not")
    func testProcessWarning() throws {
        let cli = try CLI(backend: nil, bus: false)
        defer { cli.remove() }
        let bin = cli.root.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let tests = try AppProgram(named: "MyAppPackageTests.xctest", in: bin)
        let unisolated = try tests.run(["store", "T"], cli)
        #expect(unisolated.status == 0, "\(unisolated.stderr)")
        #expect(unisolated.stderr.contains("this test process uses the user's real file keychain"), "\(unisolated.stderr)")
        #expect(unisolated.stderr.components(separatedBy: "SecItem: warning: this test process").count == 2, "once")
        let chosen = try tests.run(["store", "U"], cli, environment: ["SECITEM_BACKEND": "memory"])
        #expect(chosen.status == 0 && !chosen.stderr.contains("test process"), "\(chosen.stderr)")
        let program = try AppProgram(named: "plainApp", in: bin)
        let plain = try program.run(["store", "P"], cli)
        #expect(plain.status == 0 && !plain.stderr.contains("test process"), "\(plain.stderr)")
    }
}
