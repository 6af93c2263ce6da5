import ArrayBackend
import SecItemConformance
import Testing

/// The whole conformance kit on a fresh store per case: the one test a backend needs.
@Test("conformance", arguments: ConformanceSuite.cases)
func conformance(_ test: ConformanceCase) async throws {
    try await test.run { ArrayBackend() }
}
