// Issue 15, point 6: what `import SecItem` exports is Security's names and `SecItem…` names.
// `Sources/SecItem/Exports.swift` re-exports the core declaration by declaration; these
// tests read the sources so that a name added to the core cannot silently go unexported,
// and a generic name cannot slip into the umbrella.
import Foundation
import Testing

@Suite("What import SecItem exports")
struct ExportsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Security's and Core Foundation's spelling (`kSec…`, `errSec…`, `Sec…`, `CF…`, `kCF…`,
    /// `OSStatus`, `noErr`); `SecItem…` names match it too.
    static func isSecurityStyle(_ name: String) -> Bool {
        name.range(of: #"^(k?Sec|errSec|k?CF)[A-Z]"#, options: .regularExpression) != nil
            || ["OSStatus", "noErr"].contains(name)
    }

    /// Top-level `public` declarations (`public let x`, `public struct X`, …) of the swift files in `folder`.
    static func publicNames(in folder: String) throws -> [String] {
        let dir = root.appendingPathComponent(folder)
        var names: [String] = []
        let files = try FileManager.default.subpathsOfDirectory(atPath: dir.path)
        for file in files where file.hasSuffix(".swift") {
            let text = try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8)
            let pattern = #"(?m)^(?:nonisolated\(unsafe\) )?public (?:final )?(?:let|var|func|typealias|struct|enum|protocol|class|actor) ([A-Za-z_][A-Za-z0-9_]*)"#
            let regex = try NSRegularExpression(pattern: pattern)
            for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                names.append(String(text[Range(match.range(at: 1), in: text)!]))
            }
        }
        return names
    }

    /// The names `Exports.swift` re-exports (`@_exported public import var SecItemCore.kSecClass`).
    static func exportedNames() throws -> [String] {
        let text = try String(
            contentsOf: root.appendingPathComponent("Sources/SecItem/Exports.swift"), encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("@_exported"), let dot = line.lastIndex(of: ".") else { return nil }
            return String(line[line.index(after: dot)...]).trimmingCharacters(in: .whitespaces)
        }
    }

    @Test("every Security-style name the core declares is exported by SecItem")
    func coreSecurityNamesAreExported() throws {
        let exported = Set(try Self.exportedNames())
        let core = try Self.publicNames(in: "Sources/SecItemCore").filter(Self.isSecurityStyle)
        #expect(core.count > 150, "the core's Security names were found")
        let missing = core.filter { !exported.contains($0) }.sorted()
        #expect(missing.isEmpty, "add to Sources/SecItem/Exports.swift: \(missing)")
    }

    @Test("SecItem exports nothing but Security-style and SecItem-prefixed names")
    func onlySecurityNamesAreExported() throws {
        let exported = try Self.exportedNames()
        #expect(!exported.isEmpty)
        let generic = exported.filter { !Self.isSecurityStyle($0) }
        #expect(generic.isEmpty, "not Security's names: \(generic)")
        let own = try Self.publicNames(in: "Sources/SecItem").filter { !Self.isSecurityStyle($0) }
        #expect(own.isEmpty, "module SecItem declares generic public names: \(own.sorted())")
    }

    @Test("the package's String twins of the kSec constants (SecConstant) match the public ones")
    func stringTwinsMatch() throws {
        func pairs(_ file: String, _ pattern: String) throws -> [String: String] {
            let text = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
            let regex = try NSRegularExpression(pattern: pattern)
            var out: [String: String] = [:]
            for m in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                out[String(text[Range(m.range(at: 1), in: text)!])] = String(text[Range(m.range(at: 2), in: text)!])
            }
            return out
        }
        let constants = try pairs("Sources/SecItemCore/Constants.swift", #"public let (kSec\w+): CFString = "([^"]*)""#)
        let twins = try pairs("Sources/SecItemCore/ConstantStrings.swift", #"package static let (kSec\w+) = "([^"]*)""#)
        #expect(constants.count > 120)
        #expect(constants == twins, "regenerate ConstantStrings.swift from Constants.swift")
    }
}
