import Foundation
import SecItemCore
import Testing

/// `trimmingSpaces()` stands in for Foundation's `trimmingCharacters(in: .whitespaces)`
/// on the start-up path (access groups, config file lines): it must remove exactly the same.
@Suite("Trimming spaces")
struct TrimmingTests {
    static let samples = [
        "", " ", "\t", "a", " a ", "\ta b\t", "\u{00A0}group\u{3000}", "\u{2003} x \u{2009}", "\n a \n", "a\r",
        " \u{200B}a\u{200B} ", "é ", " 👩‍👩‍👧 ", "\u{1680}\u{202F}\u{205F}mid dle\u{2000}\u{200A}", "\u{200C}x\u{FEFF}", "\u{85}y\u{2028}",
    ]

    @Test("same result as trimmingCharacters(in: .whitespaces)", arguments: samples)
    func sameAsFoundation(text: String) {
        #expect(text.trimmingSpaces() == text.trimmingCharacters(in: .whitespaces))
        #expect(text[...].trimmingSpaces() == text.trimmingCharacters(in: .whitespaces))
    }
}
