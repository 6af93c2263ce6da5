import Foundation
import SecItemTestSupport
import Testing

/// The README's shell lines run as written, against the built `secitem`, in a private home.
@Suite("README shell lines")
struct ReadmeShellTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The ```sh blocks of a Markdown text.
    static func shellBlocks(_ markdown: String) -> [String] {
        var blocks: [String] = []
        var current: [String]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if current == nil, trimmed == "```sh" {
                current = []
            } else if current != nil, trimmed == "```" {
                blocks.append(current!.joined(separator: "\n") + "\n")
                current = nil
            } else if current != nil {
                current!.append(String(line))
            }
        }
        return blocks
    }

    /// Lines not run here, and why: each is run elsewhere.
    static let notRunHere: [(prefix: String, why: String)] = [
        ("./scripts/test", "this suite itself"),
        ("./scripts/run", "release builds of two programs; run by hand and by CI's scripts/test-package build"),
        ("scripts/package", "scripts/test-package builds the package and installs it into a fresh Debian 12 root"),
    ]

    /// Runs `script` with `sh`, with the built `secitem` first in PATH and `cli`'s private
    /// home, data, config and git config.
    static func runScript(_ script: String, cli: CLI) throws -> ProcessOutput {
        var env = cli.environment
        env["PATH"] = CLI.executable.deletingLastPathComponent().path + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        env["HOME"] = cli.root.appendingPathComponent("home").path
        env["GIT_CONFIG_GLOBAL"] = cli.root.appendingPathComponent("gitconfig").path
        try FileManager.default.createDirectory(at: cli.root.appendingPathComponent("home"), withIntermediateDirectories: true)
        return try ChildProcess.run(try Executables.which("sh"), ["-c", script], environment: env, timeout: .seconds(120))
    }

    @Test("every shell line of README.md runs (apt-get simulated), and does what its comment says")
    func readmeShellLines() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let blocks = Self.shellBlocks(readme)
        #expect(blocks.count >= 3)
        var script = "set -e\n"
        var ran = 0
        for block in blocks {
            for line in block.split(separator: "\n") {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
                if Self.notRunHere.contains(where: { trimmed.hasPrefix($0.prefix) }) { continue }
                // Package names checked against the archive without installing anything.
                script += trimmed.replacingOccurrences(of: "apt-get install -y", with: "apt-get install -s -y -qq") + "\n"
                ran += 1
            }
        }
        #expect(ran >= 6)
        let cli = try CLI()
        defer { cli.remove() }
        let result = try Self.runScript(script, cli: cli)
        #expect(result.status == 0, "\(script)\n\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("s3cret\n"), "find-generic-password -w prints the secret")
        let gitConfig = try? String(contentsOf: cli.root.appendingPathComponent("gitconfig"), encoding: .utf8)
        #expect(gitConfig?.contains("helper = secitem") == true, "git config --global credential.helper secitem")
        // Deleted at the end: not found now.
        #expect(try cli.run(["find-generic-password", "-a", "alice", "-s", "com.example.api"]).status == 44)
    }
}
