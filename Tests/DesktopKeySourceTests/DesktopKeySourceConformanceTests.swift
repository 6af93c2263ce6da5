import Foundation
import SecItemConformance
import SecItemCore
import SecItemSQLite
import SecItemSealedStore
import SecItemSecretService
import SecItemTestSupport
import Testing

/// The file backend keyed by each desktop key source, through the conformance kit:
/// a fresh store (and so a fresh key item, or a fresh portal salt) per case.
enum DesktopKeySource: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case secretService = "file (secret-service key)"
    case portal = "file (portal key)"

    var testDescription: String { rawValue }

    var service: TestService { self == .secretService ? .secretService : .secretPortal }

    static let root: String = {
        let path = NSTemporaryDirectory() + "secitem-conformance-keysource-\(getpid())"
        atexit { try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "secitem-conformance-keysource-\(getpid())") }
        return path
    }()

    func makeBackend() throws -> SQLiteBackend {
        let dir = Self.root + "/" + UUID().uuidString
        let source: SealedStoreKeySource
        switch self {
        case .secretService: source = .secretServiceItem(timeout: .seconds(20))
        case .portal:
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try Data("[Application]\nname=org.secitem.tests.Conformance\n".utf8).write(to: URL(fileURLWithPath: dir + "/flatpak-info"))
            source = try .flatpakPortal(environment: ["SECITEM_FLATPAK_INFO": dir + "/flatpak-info"], timeout: .seconds(20))
        }
        return try SQLiteBackend(configuration: .init(path: dir + "/keychain.db", keySource: source))
    }
}

@Suite("Desktop key sources: conformance")
struct DesktopKeySourceConformanceTests {
    @Test("conformance", arguments: DesktopKeySource.allCases, ConformanceSuite.cases)
    func conformance(source: DesktopKeySource, test: ConformanceCase) async throws {
        try source.service.require()
        try await test.run(options: ConformanceOptions(threads: 8, operationsPerThread: 100)) { try source.makeBackend() }
    }
}
