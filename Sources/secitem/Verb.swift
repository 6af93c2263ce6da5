import Foundation
import SecItem

/// One verb of the command.
struct Verb: Sendable {
    let name: String
    let summary: String
    /// The synopsis after `secitem <name>`, and the paragraphs after the option list:
    /// made only for `--help` (a verb that runs never needs them).
    private let makeSynopsis: @Sendable () -> String
    private let makeDiscussion: @Sendable () -> String
    var synopsis: String { makeSynopsis() }
    var discussion: String { makeDiscussion() }
    let options: [OptionSpec]
    let maxOperands: Int
    let run: @Sendable (Invocation) throws(CommandError) -> Void

    init(_ name: String, summary: String, synopsis: @autoclosure @escaping @Sendable () -> String,
         discussion: @autoclosure @escaping @Sendable () -> String = "", options: [OptionSpec],
         maxOperands: Int = 0, run: @escaping @Sendable (Invocation) throws(CommandError) -> Void)
    {
        self.name = name
        self.summary = summary
        makeSynopsis = synopsis
        makeDiscussion = discussion
        self.options = options + [Self.backendOption, Self.helpOption]
        self.maxOperands = maxOperands
        self.run = run
    }

    /// `--backend NAME`: one of the registry's backends (``Invocation/backend(_:)`` checks it).
    static var backendOption: OptionSpec {
        // Concatenated by hand: every command builds this, and the generic `joined(separator:)`
        // costs the runtime a metadata instantiation and a conformance scan at start-up.
        var names = ""
        for name in SecItemBackendChoice.names { names += names.isEmpty ? name : ", " + name }
        return OptionSpec(
            "backend", long: "backend", valueName: "name",
            help: "Use this backend: \(names) (default: SECITEM_BACKEND, the config file, then the automatic choice).")
    }
    static let helpOption = OptionSpec("help", short: "h", long: "help", .flag, help: "Show this help.")

    var help: String {
        var out = "Usage: secitem \(name) \(synopsis)\n\n\(summary)\n\nOptions:\n"
        let rows = options.map { ($0.synopsis, $0.help) }
        let width = min(28, rows.map(\.0.count).max() ?? 0)
        for (left, right) in rows {
            let pad = left.count <= width ? String(repeating: " ", count: width - left.count + 2) : "\n" + String(repeating: " ", count: width + 4)
            out += "  \(left)\(pad)\(right)\n"
        }
        let discussion = self.discussion
        if !discussion.isEmpty { out += "\n\(discussion)\n" }
        out += "\nExit status: 0 success, 2 bad usage, 44 not found, 45 duplicate, 51 auth failed or locked,\n53 no keychain available, 1 any other failure (see docs/cli.md).\n"
        return out
    }
}
