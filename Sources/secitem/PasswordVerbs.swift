import Foundation
import SecItem
import SecItemCore

/// add-/find-/delete-generic-password and their -internet-password variants.
enum PasswordVerbs {
    /// An attribute a flag sets, and how its value is typed.
    struct AttributeFlag {
        let option: OptionSpec
        let attribute: String
        let isNumber: Bool
        let isFourCharCode: Bool

        init(_ short: Character?, long: String? = nil, _ attribute: String, _ valueName: String, _ help: String,
             number: Bool = false, fourCharCode: Bool = false)
        {
            option = OptionSpec(attribute, short: short, long: long, valueName: valueName, help: help)
            self.attribute = attribute
            isNumber = number
            isFourCharCode = fourCharCode
        }

        /// `-a`, or `--generic` for a flag with no short form.
        var name: String { option.short.map { "-\($0)" } ?? "--\(option.long ?? attribute)" }
    }

    static let common: [AttributeFlag] = [
        AttributeFlag("a", kSecAttrAccount as String, "account", "Account name."),
        AttributeFlag("c", kSecAttrCreator as String, "creator", "Creator (a four-character code).", fourCharCode: true),
        AttributeFlag("C", kSecAttrType as String, "type", "Type (a four-character code).", fourCharCode: true),
        AttributeFlag("D", kSecAttrDescription as String, "kind", "Kind (kSecAttrDescription)."),
        AttributeFlag("j", kSecAttrComment as String, "comment", "Comment."),
        AttributeFlag("l", kSecAttrLabel as String, "label", "Label."),
    ]

    static let generic: [AttributeFlag] = common + [
        AttributeFlag("s", kSecAttrService as String, "service", "Service name."),
        // macOS spells this -G; here -G is the access group (docs/cli.md).
        AttributeFlag(nil, long: "generic", kSecAttrGeneric as String, "value", "Generic attribute (kSecAttrGeneric)."),
    ]

    static let internet: [AttributeFlag] = common + [
        AttributeFlag("s", kSecAttrServer as String, "server", "Server name."),
        AttributeFlag("d", kSecAttrSecurityDomain as String, "domain", "Security domain."),
        AttributeFlag("p", kSecAttrPath as String, "path", "Path."),
        AttributeFlag("P", kSecAttrPort as String, "port", "Port number.", number: true),
        AttributeFlag("r", kSecAttrProtocol as String, "protocol", "Protocol, a four-character code such as http, htps, ftp, ssh.", fourCharCode: true),
        AttributeFlag("t", kSecAttrAuthenticationType as String, "type", "Authentication type, a four-character code such as dflt, http, form, ntlm.", fourCharCode: true),
    ]

    /// `-G`/`--access-group`: the group an add targets, or the one a find or delete looks in.
    static let accessGroupOption = OptionSpec(
        "group", short: "G", long: "access-group", valueName: "group",
        help: "The access group: where an add puts the item, the only group a find or delete looks in (default: every group; adds go to the default group).")

    static let passwordOption = OptionSpec(
        "password", short: "w", .optionalValue, valueName: "password",
        help: "The password. Given as the last option or as '-', it is read from standard input (no echo on a terminal; from a pipe exactly one trailing newline is dropped).")
    static let hexPasswordOption = OptionSpec(
        "hexPassword", short: "X", valueName: "hex",
        help: "The password as hexadecimal digits (macOS security's -X); the bytes are stored exactly.")
    static let rawInputOption = OptionSpec(
        "raw", long: "raw", .flag,
        help: "With -w -: store standard input byte for byte (no newline dropped), for binary secrets.")

    /// The six verbs by name, each built only when it is run or listed: building one
    /// (its options and help text) is a tenth of a millisecond, and a command runs one.
    static let named: [(name: String, make: @Sendable () -> Verb)] = [
        ("add-generic-password", { addVerb("add-generic-password", itemClass: kSecClassGenericPassword as String, flags: generic, noun: "generic password") }),
        ("find-generic-password", { findVerb("find-generic-password", itemClass: kSecClassGenericPassword as String, flags: generic, noun: "generic password") }),
        ("delete-generic-password", { deleteVerb("delete-generic-password", itemClass: kSecClassGenericPassword as String, flags: generic, noun: "generic password") }),
        ("add-internet-password", { addVerb("add-internet-password", itemClass: kSecClassInternetPassword as String, flags: internet, noun: "internet password") }),
        ("find-internet-password", { findVerb("find-internet-password", itemClass: kSecClassInternetPassword as String, flags: internet, noun: "internet password") }),
        ("delete-internet-password", { deleteVerb("delete-internet-password", itemClass: kSecClassInternetPassword as String, flags: internet, noun: "internet password") }),
    ]

    static var all: [Verb] { named.map { $0.make() } }

    /// The attributes the flags give, typed for the query dictionary.
    static func attributes(_ args: ParsedArguments, _ flags: [AttributeFlag]) throws(CommandError) -> [String: Any] {
        var out: [String: Any] = [:]
        for flag in flags {
            guard let value = args.value(flag.attribute) else { continue }
            if flag.isNumber {
                // A port: 0 to 65535 (Int() refuses what does not fit in 64 bits; the range the rest).
                guard let number = Int(value), (0...65_535).contains(number) else {
                    throw CommandError(.usage, "\(flag.name) needs a port number from 0 to 65535\(UsageError.notShown)")
                }
                out[flag.attribute] = number
            } else if flag.isFourCharCode {
                guard value.utf8.count <= 4, !value.isEmpty else {
                    throw CommandError(.usage, "\(flag.name) needs a code of 1 to 4 bytes\(UsageError.notShown)")
                }
                out[flag.attribute] = value.padding(toLength: 4, withPad: " ", startingAt: 0)
            } else if flag.attribute == kSecAttrGeneric as String {
                out[flag.attribute] = Data(value.utf8)
            } else {
                out[flag.attribute] = value
            }
        }
        return out
    }

    static func article(_ noun: String) -> String {
        "aeiou".contains(noun.first ?? "x") ? "an" : "a"
    }

    static func usageLine(_ flags: [AttributeFlag], extra: String) -> String {
        flags.map { "[\($0.name) \($0.option.valueName)]" }.joined(separator: " ") + " " + extra
    }

    /// The password `-w`, `-X` or `--raw` gives: `-w VALUE` (with a warning), `-X HEX`
    /// (exact bytes), or standard input (exactly one trailing newline dropped unless `--raw`).
    static func password(_ args: ParsedArguments) throws(CommandError) -> Data? {
        if let hex = args.value("hexPassword") {
            guard !args.has("password"), !args.has("raw") else {
                throw CommandError(.usage, "-X gives the password; do not combine it with -w or --raw")
            }
            Console.error("secitem: warning: a password given as an argument is visible to other users in the process list; use -w - to read it from standard input\n")
            guard let bytes = Hex.decode(hex) else {
                throw CommandError(.usage, "-X needs an even number of hexadecimal digits\(UsageError.notShown)")
            }
            return bytes
        }
        if let value = args.value("password"), value != "-" {
            guard !args.has("raw") else { throw CommandError(.usage, "--raw reads standard input: give -w - (or -w last)") }
            Console.error("secitem: warning: a password given as an argument is visible to other users in the process list; use -w - to read it from standard input\n")
            return Data(value.utf8)
        }
        guard args.has("password") else {
            if args.has("raw") { throw CommandError(.usage, "--raw needs -w - (the password from standard input)") }
            return nil
        }
        return try Console.readSecret(
            prompt: "password data for new item: ", confirm: "retype password for new item: ", raw: args.has("raw"))
    }

    static func addVerb(_ name: String, itemClass: String, flags: [AttributeFlag], noun: String) -> Verb {
        Verb(
            name, summary: "Add \(article(noun)) \(noun) item.",
            synopsis: usageLine(flags, extra: "[-G group] [-w [password] | -X hex] [--raw] [-U]"),
            discussion: """
                The item's password is empty unless -w gives one. It goes to the access group -G names, else \
                the default group (the first of SECITEM_ACCESS_GROUPS, else SECITEM_APPLICATION_ID, else \
                \(Invocation.toolIdentifier)). With -U an existing item in that group with the same \
                \(itemClass == kSecClassGenericPassword as String ? "account and service" : "account, server, protocol, port, path, domain and authentication type") \
                is updated (its password only when -w is given); items in other groups are never touched. Without \
                -U, adding one that exists fails (status 45).

                Bytes: -w - from a pipe or file stores standard input minus exactly one trailing newline
                (\\n; a \\r before it is kept); --raw stores it byte for byte; -X stores the bytes the hex
                digits spell. So `find-generic-password -w | add-generic-password -w -` copies any secret exactly.
                """,
            options: flags.map { $0.option } + [
                accessGroupOption,
                passwordOption, hexPasswordOption, rawInputOption,
                OptionSpec("update", short: "U", .flag, help: "Update the item if it already exists."),
            ]
        ) { (invocation: Invocation) throws(CommandError) in
            let args = invocation.arguments
            let given = try attributes(args, flags)
            let secret = try password(args)
            let client = try invocation.client()
            var item = given
            item[kSecClass as String] = itemClass
            item[kSecValueData as String] = secret ?? Data()
            let group = args.value("group") ?? client.accessGroups.defaultGroup
            item[kSecAttrAccessGroup as String] = group
            do throws(SecItemError) {
                try client.addItem(item)
            } catch SecItemError.duplicateItem where args.has("update") {
                var query: [String: Any] = [kSecClass as String: itemClass]
                // The class's own primary-key attributes (the group is set below).
                let keyAttributes = Set(ItemClass(rawValue: itemClass)?.classKeyAttributes ?? [])
                for key in keyAttributes { query[key] = given[key] ?? (key == kSecAttrPort as String ? 0 as Any : "" as Any) }
                // The primary key includes the group: only the item in the group the add targets.
                query[kSecAttrAccessGroup as String] = group
                var changes = given.filter { !keyAttributes.contains($0.key) }
                if let secret { changes[kSecValueData as String] = secret }
                if changes.isEmpty { return }
                do throws(SecItemError) {
                    try client.updateItems(query, changes)
                } catch {
                    throw CommandError(error, context: "cannot update the \(noun)")
                }
            } catch SecItemError.duplicateItem {
                let error = CommandError(SecItemError(errSecDuplicateItem), context: "cannot add the \(noun)")
                throw CommandError(error.status, error.message + "; -U updates the existing item instead")
            } catch {
                throw CommandError(error, context: "cannot add the \(noun)")
            }
        }
    }

    static func findVerb(_ name: String, itemClass: String, flags: [AttributeFlag], noun: String) -> Verb {
        Verb(
            name, summary: "Find \(article(noun)) \(noun) item and print its attributes (or its password).",
            synopsis: usageLine(flags, extra: "[-G group] [-g] [-w | -x] [--raw]"),
            discussion: """
                The first item matching every given attribute is printed. As on macOS, -g writes the
                password to standard error after the attributes, as `password: "..."`; -w writes only the
                password to standard output: exactly the stored bytes, then one newline (--raw leaves the
                newline out). -x writes the stored bytes as lowercase hexadecimal (then a newline), for
                binary secrets; `add-generic-password -X` takes it back. Nothing secret is printed otherwise.
                Every access group is searched unless -G names one.
                """,
            options: flags.map { $0.option } + [
                accessGroupOption,
                OptionSpec("showPassword", short: "g", .flag, help: "Show the password (on standard error) with the attributes."),
                OptionSpec("onlyPassword", short: "w", .flag, help: "Print only the password, on standard output: the stored bytes and a newline."),
                OptionSpec("hexPassword", short: "x", .flag, help: "Print only the password, as hexadecimal digits and a newline."),
                OptionSpec("raw", long: "raw", .flag, help: "With -w: print the stored bytes without the trailing newline."),
            ]
        ) { (invocation: Invocation) throws(CommandError) in
            let args = invocation.arguments
            var query = try attributes(args, flags)
            query[kSecClass as String] = itemClass
            if let group = args.value("group") { query[kSecAttrAccessGroup as String] = group }
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            query[kSecAttrSynchronizable as String] = kSecAttrSynchronizableAny
            query[kSecReturnAttributes as String] = true
            if args.has("raw") && !args.has("onlyPassword") { throw CommandError(.usage, "--raw goes with -w") }
            if args.has("hexPassword") && args.has("onlyPassword") { throw CommandError(.usage, "give -w or -x, not both") }
            let wantsSecret = args.has("showPassword") || args.has("onlyPassword") || args.has("hexPassword")
            if wantsSecret { query[kSecReturnData as String] = true }
            let client = try invocation.client()
            var found: [String: Any]
            do throws(SecItemError) {
                found = try client.copyMatchingItems(query) as? [String: Any] ?? [:]
            } catch {
                throw CommandError(error, context: "cannot find the \(noun)")
            }
            // Taken out of the result so this is its only copy, written from where it
            // is, and zeroed when done (best effort: docs/cli.md, "The process").
            var data = found.removeValue(forKey: kSecValueData as String) as? Data ?? Data()
            defer { wipeData(&data) }
            if args.has("onlyPassword") {
                Console.writeData(data)
                if !args.has("raw") { Console.write("\n") }
                return
            }
            if args.has("hexPassword") {
                var digits = Hex.encodeBytes(data) + [0x0A]
                defer { digits.withUnsafeMutableBytes { explicit_bzero($0.baseAddress!, $0.count) } }
                Console.writeBytes(digits)
                return
            }
            Console.write(ItemFormat.describe(found, itemClass: itemClass, backend: "\(client.backend.kind)"))
            if args.has("showPassword") {
                Console.error("password: \(ItemFormat.quoted(data))\n")
            }
        }
    }

    static func deleteVerb(_ name: String, itemClass: String, flags: [AttributeFlag], noun: String) -> Verb {
        Verb(
            name, summary: "Delete \(article(noun)) \(noun) item.",
            synopsis: usageLine(flags, extra: "[-G group]"),
            discussion: """
                As on macOS, the first item matching every given attribute is deleted and its attributes printed.
                Every access group is searched unless -G names one.
                """,
            options: flags.map { $0.option } + [accessGroupOption]
        ) { (invocation: Invocation) throws(CommandError) in
            var query = try attributes(invocation.arguments, flags)
            query[kSecClass as String] = itemClass
            if let group = invocation.arguments.value("group") { query[kSecAttrAccessGroup as String] = group }
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            query[kSecAttrSynchronizable as String] = kSecAttrSynchronizableAny
            query[kSecReturnAttributes as String] = true
            query[kSecReturnPersistentRef as String] = true
            let client = try invocation.client()
            do throws(SecItemError) {
                let found = try client.copyMatchingItems(query) as? [String: Any] ?? [:]
                guard let ref = found[kSecValuePersistentRef as String] as? Data else { throw SecItemError(errSecItemNotFound) }
                try client.deleteItems([kSecValuePersistentRef as String: ref])
                Console.write(ItemFormat.describe(found, itemClass: itemClass, backend: "\(client.backend.kind)"))
                Console.write("password has been deleted.\n")
            } catch {
                throw CommandError(error, context: "cannot delete the \(noun)")
            }
        }
    }
}

/// The text form of an item's attributes, close to macOS `security`'s.
enum ItemFormat {
    static func describe(_ attributes: [String: Any], itemClass: String, backend: String) -> String {
        var out = "keychain: \"\(backend)\"\nclass: \"\(itemClass)\"\nattributes:\n"
        for key in attributes.keys.sorted() where key != kSecValueData as String && key != kSecValuePersistentRef as String && key != kSecClass as String {
            guard let value = attributes[key] else { continue }
            out += "    \"\(key)\"\(typed(value))\n"
        }
        return out
    }

    static func typed(_ value: Any) -> String {
        switch value {
        case let data as Data: return "<blob>=\(quoted(data))"
        case let string as String: return "<blob>=\(quoted(Data(string.utf8)))"
        case let date as Date: return "<timedate>=\"\(timestamp(date))\""
        case let number as Int: return "<sint32>=\(number)"
        case let number as Int64: return "<sint32>=\(number)"
        case let flag as Bool: return "<sint32>=\(flag ? 1 : 0)"
        default: return "<unknown>"
        }
    }

    /// `"text"` when the bytes are printable UTF-8, else `0x…` hex.
    static func quoted(_ data: Data) -> String {
        if let text = String(data: data, encoding: .utf8),
            !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        {
            return "\"\(text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\""))\""
        }
        return "0x" + data.map { String(format: "%02X", $0) }.joined()
    }

    static func timestamp(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMddHHmmss'Z'"
        return formatter.string(from: date)
    }
}

/// Hexadecimal for binary secrets (`-X`, `-x`).
enum Hex {
    /// Lowercase hex digits, two per byte.
    static func encode(_ data: Data) -> String {
        String(decoding: encodeBytes(data), as: UTF8.self)
    }

    /// Lowercase hex digits, two per byte, as bytes (the caller can zero them).
    static func encodeBytes(_ data: Data) -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(data.count * 2 + 1)
        for byte in data {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return out
    }

    /// The bytes an even number of hex digits spell (either case); `nil` otherwise.
    static func decode(_ text: String) -> Data? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out = Data(capacity: chars.count / 2)
        var index = 0
        while index < chars.count {
            guard let high = value(chars[index]), let low = value(chars[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
