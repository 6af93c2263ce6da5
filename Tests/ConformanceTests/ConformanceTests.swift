import Testing
import SecItemConformance
import SecItemCore
import SecItemMemory

/// The backends the conformance suite runs on. Adding a backend is one case here.
enum BackendUnderTest: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory

    var testDescription: String { rawValue }

    var options: ConformanceOptions {
        switch self {
        case .memory: return ConformanceOptions(threads: 8, operationsPerThread: 1000)
        }
    }

    func makeBackend() throws -> any SecItemBackend {
        switch self {
        case .memory: return MemoryBackend()
        }
    }
}

@Suite("Conformance")
struct ConformanceTests {
    @Test("conformance", arguments: BackendUnderTest.allCases, ConformanceSuite.cases)
    func conformance(backend: BackendUnderTest, test: ConformanceCase) async throws {
        try await test.run(options: backend.options) { try backend.makeBackend() }
    }
}
