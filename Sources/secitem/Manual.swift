import Foundation
import SecItem
import SecItemCore
import SecItemGitCredential

/// The manual pages, written from the same tables `--help` prints: the verbs (their
/// synopsis, summary, options and discussion), the overview's paragraphs, git's helper's
/// usage text and the config file's keys. `scripts/package` runs `secitem _generate man …`
/// at build time, so a page cannot say something the command's help does not.
enum Manual {
    /// `secitem(1)`.
    static var secitem: String {
        var out = header("SECITEM", section: 1, title: "User Commands")
        out += ".SH NAME\nsecitem \\- manage the SecItem keychain from the shell\n"
        out += ".SH SYNOPSIS\n"
        out += ".B secitem\n.I verb\n[\\fIoptions\\fR]\n.br\n.B secitem\n.I verb\n.B \\-\\-help\n.br\n.B secitem help\n[\\fIverb\\fR]\n.br\n.B secitem \\-\\-version\n"
        out += ".SH DESCRIPTION\n" + paragraphs(Command.overviewDescription + "\n\n" + Command.secretsNote)
        out += ".SH VERBS\n"
        for verb in Command.verbs {
            out += ".SS \(escape(verb.name))\n"
            out += ".B secitem \(escape(verb.name))\n\(escape(verb.synopsis))\n.PP\n\(escape(verb.summary))\n"
            for option in verb.options {
                out += ".TP\n.B \(escape(option.synopsis))\n\(escape(option.help))\n"
            }
            if !verb.discussion.isEmpty { out += ".PP\n" + paragraphs(verb.discussion) }
        }
        out += ".SS \(escape(CredentialHelperVerb.name))\n.B secitem \(escape(CredentialHelperVerb.name))\n"
        out += "[\\fIoptions\\fR] get|store|erase\n.PP\n\(escape(CredentialHelperVerb.summary))\nSee\n.BR git\\-credential\\-secitem (1).\n"
        out += ".SH ENVIRONMENT\n" + paragraphs(Command.environmentNote)
        out += ".SH FILES\n" + filesSection
        out += ".SH EXIT STATUS\n" + paragraphs(Command.exitStatusNote)
        out += ".SH SEE ALSO\n.BR git\\-credential\\-secitem (1),\n.BR secitem\\-config (5),\n.BR security (1)\non macOS; /usr/share/doc/secitem.\n"
        return out
    }

    /// `git-credential-secitem(1)`, from the helper's own usage text.
    static var gitCredential: String {
        let name = "git-credential-secitem"
        var out = header("GIT\\-CREDENTIAL\\-SECITEM", section: 1, title: "User Commands")
        out += ".SH NAME\ngit\\-credential\\-secitem \\- git's credential helper on the SecItem keychain\n"
        out += fromHelpText(GitCredentialCommand.usage(name))
        out += ".SH SEE ALSO\n.BR secitem (1),\n.BR secitem\\-config (5),\n.BR gitcredentials (7)\n"
        return out
    }

    /// `secitem-config(5)`.
    static var config: String {
        var out = header("SECITEM\\-CONFIG", section: 5, title: "File Formats")
        out += ".SH NAME\nsecitem\\-config \\- the SecItem configuration file\n"
        out += ".SH SYNOPSIS\n$XDG_CONFIG_HOME/secitem/config (~/.config/secitem/config)\n"
        out += ".SH DESCRIPTION\n" + paragraphs("""
            A few key = value lines; # starts a comment; blank lines are ignored. Every key has an \
            environment variable, which wins when both are set; a program's own code wins over both. \
            SECITEM_CONFIG names another file; SECITEM_CONFIG=none ignores the file. The file never \
            holds a secret itself: a passphrase comes from passphrase-file. An unknown key or a line \
            that is not key = value is an error naming the file and line.
            """)
        out += ".SH KEYS\n"
        for setting in SecItemBackendRegistry.settings where setting.inConfigFile {
            var meaning = setting.help
            if setting.key == "backend" { meaning += " This build has: \(SecItemBackendChoice.names.joined(separator: ", "))." }
            meaning += " Value: \(setting.expected)."
            if let shown = setting.defaultDescription { meaning += " Default: \(shown)." }
            out += ".TP\n.BR \(escape(setting.key)) \" (\(escape(setting.variable)))\"\n\(escape(meaning))\n"
        }
        out += ".SH EXAMPLE\n.nf\n# ~/.config/secitem/config\nbackend = file\naccess\\-groups = com.example.shared\n.fi\n"
        out += ".SH SEE ALSO\n.BR secitem (1),\n.BR git\\-credential\\-secitem (1)\n"
        return out
    }

    static let filesSection = """
        .TP
        .I $XDG_CONFIG_HOME/secitem/config
        The configuration file; see
        .BR secitem\\-config (5).
        .TP
        .I $XDG_DATA_HOME/secitem/keychain.db
        The encrypted file backend's keychain (~/.local/share/secitem/keychain.db).
        .TP
        .I $XDG_CONFIG_HOME/secitem/keychain.key
        The key the file backend generates when no key file or passphrase is configured.
        .TP
        .I $XDG_STATE_HOME/secitem/high\\-water/
        This host's high-water marks of the sealed stores it uses (~/.local/state/...), and
        .I accepted.log
        of restores accepted with secitem accept-restore.

        """

    // MARK: roff

    static func header(_ name: String, section: Int, title: String) -> String {
        ".\\\" Generated by `secitem _generate man`: edit the command's help tables, not this file.\n"
            + ".TH \(name) \(section) \"\" \"secitem \(Command.version)\" \"\(title)\"\n.nh\n.ad l\n"
    }

    /// Text made safe for roff: backslashes and hyphens escaped, no line starting with a control character.
    static func escape(_ text: String) -> String {
        var escaped = text.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
        // Plain ASCII where a terminal may lack the glyph (troff warns about a missing U+2026 otherwise).
        for (from, to) in [("\u{2026}", "..."), ("\u{2192}", "\\->"), ("\u{2014}", "\\(em"), ("\u{2019}", "'"), ("\u{2018}", "'")] {
            escaped = escaped.replacingOccurrences(of: from, with: to)
        }
        return escaped.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix(".") || line.hasPrefix("'") ? "\\&" + line : String(line)
        }.joined(separator: "\n")
    }

    /// Plain help paragraphs (blank-line separated) as roff: indented lines stay as
    /// they are (examples), the rest is filled.
    static func paragraphs(_ text: String) -> String {
        var out = ""
        for block in blocks(text) {
            if block.allSatisfy({ $0.hasPrefix(" ") }) {
                out += ".PP\n.nf\n" + block.map(escape).joined(separator: "\n") + "\n.fi\n"
            } else {
                out += ".PP\n" + escape(block.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "\n")) + "\n"
            }
        }
        return out
    }

    static func blocks(_ text: String) -> [[String]] {
        var blocks: [[String]] = [[]]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.trimmingCharacters(in: .whitespaces).isEmpty {
                if !blocks[blocks.count - 1].isEmpty { blocks.append([]) }
            } else {
                blocks[blocks.count - 1].append(String(line))
            }
        }
        return blocks.filter { !$0.isEmpty }
    }

    /// A help text in the usual shape (`Usage:` line, paragraphs, an `Options:` block of
    /// `  --name  help` rows with indented continuations) as SYNOPSIS, DESCRIPTION, OPTIONS.
    static func fromHelpText(_ text: String) -> String {
        var synopsis = "", description: [[String]] = [], options: [(String, String)] = []
        for block in blocks(text) {
            if block[0].hasPrefix("Usage: ") {
                synopsis = block.map { $0.replacingOccurrences(of: "Usage: ", with: "").trimmingCharacters(in: .whitespaces) }
                    .map(escape).joined(separator: "\n.br\n")
            } else if block[0] == "Options:" {
                for line in block.dropFirst() {
                    let trimmed = line.trimmingCharacters(in: .whitespaces)
                    if let gap = trimmed.range(of: "  "), trimmed.hasPrefix("-") {
                        options.append((String(trimmed[..<gap.lowerBound]), trimmed[gap.upperBound...].trimmingCharacters(in: .whitespaces)))
                    } else if !options.isEmpty {
                        options[options.count - 1].1 += " " + trimmed
                    }
                }
            } else {
                description.append(block)
            }
        }
        var out = ".SH SYNOPSIS\n\(synopsis)\n.SH DESCRIPTION\n"
        out += paragraphs(description.map { $0.joined(separator: "\n") }.joined(separator: "\n\n"))
        if !options.isEmpty {
            out += ".SH OPTIONS\n"
            for (name, help) in options { out += ".TP\n.B \(escape(name))\n\(escape(help))\n" }
        }
        return out
    }
}
