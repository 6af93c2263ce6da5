import Foundation
import Testing

/// The attribute codes (`"agrp"`, `"pdmn"`, `"v_Data"`, `"m_LimitAll"`, …) are written
/// out in one place — `Constants.swift` (the public `kSec…` constants),
/// `ConstantStrings.swift` (their `SecConstant` twins) and `Schema.swift` (the
/// per-class tables and the codes Apple names only privately) — and everywhere else
/// by name. A bare code elsewhere is how a typo or a second definition creeps in
/// (issue 11, §5), so this test reads the package's own sources and fails on one.
@Suite("Named attribute codes")
struct NamedCodesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The files that define the codes.
    static let definingFiles: Set<String> = [
        "Sources/SecItemSecurity/Constants.swift",
        "Sources/SecItemSecurity/ConstantStrings.swift",
        "Sources/SecItemModel/Schema.swift",
    ]

    /// Codes that are also ordinary words of another vocabulary used in the sources: a
    /// SQL column or JSON key (`class`), CLI option and value names (`class`, `type`,
    /// `path`, `port`), libpq keywords (`port`), URL schemes (`http`, `imap`, …, the keys
    /// of the scheme → `kSecAttrProtocol` tables). Not searched for.
    static let otherWords: Set<String> = [
        "class", "type", "path", "port", "http", "ftps", "imap", "smtp", "pop3", "ldap", "nntp", "ircs",
    ]

    /// Bare codes that must stay, each with why.
    static let allowed: [String: Set<String>] = [
        // `Keychain.Accessibility`'s raw values (public API): a raw value must be a literal.
        "Sources/SecItemKeychain/Keychain.swift": ["ak", "ck", "aku", "cku", "akpu"],
        // Test data of the kit: an account named "acct", a certificate labelled "cert".
        "Sources/SecItemConformance/GroupCases.swift": ["acct", "cert"],
        // Apple's algorithm names (`algid:sign:…`), parsed word by word: not attributes.
        "Sources/SecItem/Keys/KeyAlgorithmPlan.swift": ["sign"],
    ]

    /// Every code: the values of the `SecConstant` twins and the private names, and every
    /// four-letter string of the schema's tables; numbers (`kSecAttrKeyTypeRSA` is "42") aside.
    static func codes() throws -> Set<String> {
        var codes = Set<String>()
        for file in ["Sources/SecItemSecurity/ConstantStrings.swift", "Sources/SecItemModel/Schema.swift"] {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            for pattern in [#"package static let kSec\w+ = "([^"]+)""#, #""([a-z]{4})""#] {
                let regex = try NSRegularExpression(pattern: pattern)
                for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    codes.insert(String(text[Range(match.range(at: 1), in: text)!]))
                }
            }
        }
        return codes.filter { Int($0) == nil }.subtracting(otherWords)
    }

    /// The Swift files of Sources/ and Backends/, relative to the package root.
    static func sourceFiles() -> [String] {
        var files: [String] = []
        for folder in ["Sources", "Backends"] {
            let base = root.appendingPathComponent(folder)
            guard let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) else { continue }
            for case let url as URL in walker where url.pathExtension == "swift" {
                files.append(folder + "/" + url.path.dropFirst(base.path.count + 1))
            }
        }
        return files.sorted()
    }

    @Test("no bare attribute code outside Constants.swift, ConstantStrings.swift and Schema.swift")
    func noBareCodes() throws {
        let codes = try Self.codes()
        // The test must see the codes it guards and the files it reads.
        #expect(codes.isSuperset(of: ["agrp", "pdmn", "accc", "mdat", "svce", "acct", "v_Data", "r_Attributes", "m_LimitAll", "ak", "alis"]))
        let files = Self.sourceFiles()
        #expect(files.contains("Sources/SecItemAPI/SecItemClient.swift") && files.count > 100)

        let literal = try NSRegularExpression(pattern: #""([^"\\\s]{1,20})""#)
        var found: [String] = []
        for file in files where !Self.definingFiles.contains(file) {
            let text = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                if line.drop(while: { $0 == " " }).hasPrefix("//") { continue }
                let line = String(line)
                for match in literal.matches(in: line, range: NSRange(line.startIndex..., in: line)) {
                    let value = String(line[Range(match.range(at: 1), in: line)!])
                    guard codes.contains(value), !(Self.allowed[file]?.contains(value) ?? false) else { continue }
                    found.append("\(file):\(number + 1): \"\(value)\"")
                }
            }
        }
        #expect(found.isEmpty, "bare attribute codes (use SecConstant.kSec… or the public kSec… constant):\n\(found.joined(separator: "\n"))")
    }
}
