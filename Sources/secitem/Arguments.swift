// A small getopt-style argument parser with per-verb help. No external packages
// exist in this build, so the command carries its own.

/// How an option takes its value.
enum OptionArity: Sendable {
    /// A switch: present or not (`-U`).
    case flag
    /// Needs a value (`-a alice`, `-aalice`, `--output=FILE`).
    case value
    /// Takes a value when one follows, else none (`-w` alone or `-w -` reads stdin).
    case optionalValue
}

/// One option a verb accepts.
struct OptionSpec: Sendable {
    /// The key results are stored under.
    let key: String
    let short: Character?
    let long: String?
    let arity: OptionArity
    /// The value's name in help (`account`).
    let valueName: String
    let help: String

    init(_ key: String, short: Character? = nil, long: String? = nil, _ arity: OptionArity = .value,
         valueName: String = "value", help: String)
    {
        self.key = key
        self.short = short
        self.long = long
        self.arity = arity
        self.valueName = valueName
        self.help = help
    }

    var synopsis: String {
        var names: [String] = []
        if let short { names.append("-\(short)") }
        if let long { names.append("--\(long)") }
        let joined = names.joined(separator: ", ")
        switch arity {
        case .flag: return joined
        case .value: return "\(joined) \(valueName)"
        case .optionalValue: return "\(joined) [\(valueName)]"
        }
    }
}

/// What a verb was given.
struct ParsedArguments: Sendable {
    /// Options with a value, by key (the last occurrence wins).
    var values: [String: String] = [:]
    /// Options given without a value (flags, and optional-value options used bare). An
    /// array: a handful of keys, and a `Set`'s first use costs the runtime a conformance scan.
    var present: [String] = []
    /// Operands after the options.
    var operands: [String] = []

    func value(_ key: String) -> String? { values[key] }
    func has(_ key: String) -> Bool { present.contains(key) || values[key] != nil }
}

/// A usage error: exit status 2, with a pointer to the verb's help.
///
/// A message never repeats an argument the parser did not recognise: a mistyped
/// command line often holds a secret (`find-generic-password -w s3cret`), and
/// stderr ends up in logs. It names the argument's position instead.
struct UsageError: Error, Sendable {
    let message: String
    init(_ message: String) { self.message = message }

    static let notShown = " (its text is not repeated, in case it is a secret)"

    /// An argument that is not an option of the verb; `position` counts from 1 after the verb.
    static func unknown(position: Int) -> UsageError {
        UsageError("argument \(position) is not an option of this verb\(notShown)")
    }
}

enum ArgumentParser {
    /// Parses `arguments` against `options`. `--help`/`-h` are handled by the caller.
    ///
    /// Short options may be clustered (`-gw`); a value may be attached (`-aalice`)
    /// or follow (`-a alice`). `--` ends the options. An optional-value option
    /// takes the next argument unless there is none or it is another option of this
    /// verb (so `-w` as the last option, or `-w -`, reads the password from stdin).
    static func parse(_ arguments: [String], options: [OptionSpec], maxOperands: Int = 0) throws(UsageError)
        -> ParsedArguments
    {
        var result = ParsedArguments()
        var index = 0
        func isOption(_ argument: String) -> Bool {
            if argument.hasPrefix("--") {
                let name = argument.dropFirst(2).split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
                return options.contains { $0.long == name }
            }
            // Only a bare `-X` counts, so a password such as `-secret` after `-w` stays a value.
            guard argument.count == 2, argument.hasPrefix("-"), let c = argument.dropFirst().first else { return false }
            return options.contains { $0.short == c }
        }
        func store(_ spec: OptionSpec, _ value: String?) {
            if let value { result.values[spec.key] = value } else if !result.present.contains(spec.key) { result.present.append(spec.key) }
        }
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                result.operands.append(contentsOf: arguments[index...])
                break
            }
            if argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                let parts = body.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(parts[0])
                guard let spec = options.first(where: { $0.long == name }) else {
                    throw UsageError.unknown(position: index)
                }
                let attached = parts.count == 2 ? String(parts[1]) : nil
                switch spec.arity {
                case .flag:
                    if attached != nil { throw UsageError("option '--\(name)' takes no value") }
                    store(spec, nil)
                case .value:
                    if let attached {
                        store(spec, attached)
                    } else {
                        guard index < arguments.count else { throw UsageError("option '--\(name)' needs a \(spec.valueName)") }
                        store(spec, arguments[index])
                        index += 1
                    }
                case .optionalValue:
                    if let attached {
                        store(spec, attached)
                    } else if index < arguments.count, !isOption(arguments[index]) {
                        store(spec, arguments[index])
                        index += 1
                    } else {
                        store(spec, nil)
                    }
                }
                continue
            }
            if argument.hasPrefix("-") && argument.count > 1 {
                var chars = Substring(argument.dropFirst())
                cluster: while let c = chars.first {
                    chars = chars.dropFirst()
                    guard let spec = options.first(where: { $0.short == c }) else {
                        throw UsageError.unknown(position: index)
                    }
                    switch spec.arity {
                    case .flag:
                        store(spec, nil)
                        continue
                    case .value:
                        if !chars.isEmpty {
                            store(spec, String(chars))
                        } else {
                            guard index < arguments.count else { throw UsageError("option '-\(c)' needs a \(spec.valueName)") }
                            store(spec, arguments[index])
                            index += 1
                        }
                    case .optionalValue:
                        if !chars.isEmpty {
                            store(spec, String(chars))
                        } else if index < arguments.count, !isOption(arguments[index]) {
                            store(spec, arguments[index])
                            index += 1
                        } else {
                            store(spec, nil)
                        }
                    }
                    break cluster
                }
                continue
            }
            result.operands.append(argument)
        }
        if result.operands.count > maxOperands {
            let position = arguments.firstIndex(of: result.operands[maxOperands]).map { $0 + 1 } ?? arguments.count
            throw UsageError("argument \(position) is not an option of this verb and no operand is expected here\(UsageError.notShown)")
        }
        return result
    }
}
