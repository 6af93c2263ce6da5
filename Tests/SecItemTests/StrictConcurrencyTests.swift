import Foundation
import SecItemTestSupport
import Testing

/// Apple code compiled in Swift 6 mode compiles here exactly when it compiles on Apple's SDK
/// (issue 26). There `CFString` is a Core Foundation class without a `Sendable` conformance,
/// and the `kSec…` constants are imported C globals that any context may read: so reading a
/// constant, or its `String`, anywhere compiles; keeping the `CFString` itself in a static
/// or a global, or capturing it in a `@Sendable` closure, does not. Each snippet is a user's
/// file typechecked with `swiftc -swift-version 6` against the modules this package built.
@Suite("Swift 6 strict concurrency, as on Apple's SDK")
struct StrictConcurrencyTests {
    /// Compiles on Apple's SDK in Swift 6 mode, and must here.
    static let compiles = """
        import Foundation
        import SecItem

        enum Keys {
            static let service = kSecClassGenericPassword as String
            static let account = String(kSecAttrAccount)
        }

        struct TokenStore: Sendable {
            let service: String

            func save(_ token: Data) async -> OSStatus {
                await Task.detached { @Sendable in
                    let query = [kSecClass: kSecClassGenericPassword, kSecAttrService: service, kSecAttrAccount: "token",
                                 kSecValueData: token] as CFDictionary
                    return SecItemAdd(query, nil)
                }.value
            }
        }

        let countAll: @Sendable () -> Int = {
            var result: CFTypeRef?
            let status = SecItemCopyMatching(
                [kSecClass: kSecClassGenericPassword, kSecMatchLimit: kSecMatchLimitAll, kSecReturnAttributes: true] as CFDictionary,
                &result)
            return status == noErr ? (result as? [[String: Any]])?.count ?? 0 : 0
        }

        actor Vault {
            func read(_ account: String) -> Data? {
                var result: CFTypeRef?
                let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: account,
                                            kSecReturnData as String: true]
                return SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess ? result as? Data : nil
            }
        }

        @MainActor enum ScreenKeys {
            static let itemClass = kSecClassGenericPassword
        }

        """

    /// Each fails on Apple's SDK in Swift 6 mode (CFString is not Sendable), and must here,
    /// with the same diagnostic.
    static let rejected: [(code: String, diagnostic: String)] = [
        (
            "import SecItem\nenum Keys {\n    static let service = kSecClassGenericPassword\n}\n",
            "static property 'service' is not concurrency-safe because non-'Sendable' type 'CFString'"
        ),
        (
            "import SecItem\nlet synchronizableAny = kSecAttrSynchronizableAny\n",
            "let 'synchronizableAny' is not concurrency-safe because non-'Sendable' type 'CFString'"
        ),
        (
            "import SecItem\nfunc f() {\n    let itemClass = kSecClassGenericPassword\n    let g: @Sendable () -> Void = { _ = itemClass }\n    g()\n}\n",
            "capture of 'itemClass' with non-Sendable type 'CFString'"
        ),
    ]

    static func typecheck(_ code: String, in directory: URL, name: String) throws -> ProcessOutput {
        let file = directory.appendingPathComponent("\(name).swift")
        try Data(code.utf8).write(to: file)
        return try ChildProcess.run(
            try Executables.which("swiftc"), ["-typecheck", "-parse-as-library"] + (try ReadmeSnippetTests.compilerFlags()) + [file.path],
            timeout: .seconds(300))
    }

    @Test("reading constants anywhere, their Strings in statics, queries in @Sendable closures and actors compile")
    func accepted() throws {
        let directory = try Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try Self.typecheck(Self.compiles, in: directory, name: "Accepted")
        #expect(result.status == 0, "\(result.stderr)\(result.stdout)")
    }

    @Test("a CFString kept in a static or a global, or captured by a @Sendable closure, is an error as on Apple")
    func rejectedAsOnApple() throws {
        let directory = try Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for (index, snippet) in Self.rejected.enumerated() {
            let result = try Self.typecheck(snippet.code, in: directory, name: "Rejected\(index)")
            #expect(result.status != 0, "compiled, but Apple's SDK rejects it:\n\(snippet.code)")
            #expect(result.stderr.contains(snippet.diagnostic), "expected \"\(snippet.diagnostic)\", got:\n\(result.stderr)")
        }
    }

    static func scratchDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secitem-swift6-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }
}
