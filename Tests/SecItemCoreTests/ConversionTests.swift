import Foundation
import SecItemCore
import Testing

@Suite("Conversions")
struct ConversionTests {
    @Test("UUID from 16 bytes round-trips; any other count is nil")
    func uuidBytes() {
        let id = UUID()
        let bytes = withUnsafeBytes(of: id.uuid) { Array($0) }
        #expect(UUID(bytes: bytes) == id)
        #expect(UUID(bytes: bytes.dropLast()) == nil)
        #expect(UUID(bytes: bytes + [0]) == nil)
        #expect(UUID(bytes: [UInt8](repeating: 0xAB, count: 16))?.uuidString == "ABABABAB-ABAB-ABAB-ABAB-ABABABABABAB")
    }

    @Test("Duration in whole milliseconds truncates")
    func milliseconds() {
        #expect(Duration.milliseconds(800).wholeMilliseconds == 800)
        #expect(Duration.seconds(2).wholeMilliseconds == 2000)
        #expect(Duration.microseconds(1999).wholeMilliseconds == 1)
        #expect(Duration.zero.wholeMilliseconds == 0)
    }
}
