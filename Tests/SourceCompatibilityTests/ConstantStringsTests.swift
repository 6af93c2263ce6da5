// The package's `String` twins of the kSec… constants (`SecConstant`, ConstantStrings.swift)
// must say what the public `CFString` constants (Constants.swift) say.
import Foundation
import Testing

@Suite("SecConstant and the kSec constants")
struct ConstantStringsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

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
        let constants = try pairs("Sources/SecItemSecurity/Constants.swift", #"public let (kSec\w+): CFString = "([^"]*)""#)
        let twins = try pairs("Sources/SecItemSecurity/ConstantStrings.swift", #"package static let (kSec\w+) = "([^"]*)""#)
        #expect(constants.count > 120)
        #expect(constants == twins, "regenerate ConstantStrings.swift from Constants.swift")
    }
}
