public import SecItemCore
package import Foundation

/// The conformance kit: one body of tests that every ``SecItemBackend`` must pass.
///
/// Each case gets a fresh, empty backend from the factory it is run with, and
/// drives it through ``SecItemClient`` exactly as user code drives the global
/// `SecItem…` functions. A backend is done when every case passes:
///
/// ```swift
/// @Test(arguments: ConformanceSuite.cases)
/// func conformance(_ test: ConformanceCase) async throws {
///     try await test.run { try MyBackend(…fresh empty store…) }
/// }
/// ```
///
/// Failures throw ``ConformanceFailure`` describing what was expected and what
/// happened; the kit depends on no test framework.
public enum ConformanceSuite {
    /// Every case, in a stable order.
    public static var cases: [ConformanceCase] {
        BasicCases.all + ResultShapeCases.all + UpdateDeleteCases.all + ScopeCases.all + GroupCases.all + InputCases.all
            + ValueCases.all + ConcurrencyCases.all + AccessControlCases.all + KeyCases.all
            + CertificateCases.all + ReadCountCases.all
    }

    /// The groups the kit's client is entitled to; the first is the default.
    public static let entitledGroups = ["conformance.group.a", "conformance.group.b"]
    /// A group the client is not entitled to.
    public static let foreignGroup = "conformance.not-entitled"
}

/// Knobs for backends whose writes are expensive (a desktop keyring daemon).
public struct ConformanceOptions: Sendable {
    /// Threads in the concurrency case.
    public var threads: Int
    /// Mixed operations per thread in the concurrency case.
    public var operationsPerThread: Int

    /// The default is 8 threads × 1000 operations; slow stores pass less.
    public init(threads: Int = 8, operationsPerThread: Int = 1000) {
        self.threads = threads
        self.operationsPerThread = operationsPerThread
    }
}

/// One named conformance check.
public struct ConformanceCase: Sendable, CustomStringConvertible {
    /// A readable name, such as "update collision changes nothing".
    public let name: String
    let body: @Sendable (ConformanceContext) async throws -> Void

    package init(_ name: String, _ body: @escaping @Sendable (ConformanceContext) async throws -> Void) {
        self.name = name
        self.body = body
    }

    public var description: String { name }

    /// Runs the case against a fresh store made by `makeBackend`.
    /// - Throws: ``ConformanceFailure`` when the backend misbehaves, or what `makeBackend` throws.
    public func run(options: ConformanceOptions = .init(), makeBackend: () throws -> any SecItemBackend) async throws {
        let backend = try makeBackend()
        try await body(ConformanceContext(backend: backend, options: options))
    }
}

/// A conformance check that failed: what was expected, what happened, and where.
public struct ConformanceFailure: Error, CustomStringConvertible {
    public let message: String
    public let file: StaticString
    public let line: UInt

    public var description: String { "\(message) [\(file):\(line)]" }
}

/// What a case works with: a client over the backend under test, entitled to
/// ``ConformanceSuite/entitledGroups``, and helpers that throw on a mismatch.
public struct ConformanceContext: Sendable {
    public let backend: any SecItemBackend
    public let client: SecItemClient
    public let options: ConformanceOptions

    init(backend: any SecItemBackend, options: ConformanceOptions) {
        self.backend = backend
        self.client = SecItemClient(backend: backend, accessGroups: AccessGroups(ConformanceSuite.entitledGroups))
        self.options = options
    }

    // MARK: Calls, Apple-style

    package func add(_ q: [String: Any]) -> OSStatus { client.add(q, nil) }

    package func add(_ q: [String: Any], result: inout AnyObject?) -> OSStatus { client.add(q, &result) }

    package func copy(_ q: [String: Any]) -> (OSStatus, AnyObject?) {
        var result: AnyObject?
        let status = client.copyMatching(q, &result)
        return (status, result)
    }

    package func update(_ q: [String: Any], _ changes: [String: Any]) -> OSStatus { client.update(q, changes) }

    package func delete(_ q: [String: Any]) -> OSStatus { client.delete(q) }

    // MARK: Expectations

    package func fail(_ message: String, file: StaticString = #filePath, line: UInt = #line) -> ConformanceFailure {
        ConformanceFailure(message: message, file: file, line: line)
    }

    package func expect(_ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #filePath, line: UInt = #line)
        throws
    {
        if !condition { throw fail(message(), file: file, line: line) }
    }

    package func expectStatus(
        _ actual: OSStatus, _ expected: OSStatus, _ what: @autoclosure () -> String, file: StaticString = #filePath,
        line: UInt = #line
    ) throws {
        if actual != expected {
            throw fail("\(what()): expected status \(expected), got \(actual)", file: file, line: line)
        }
    }

    /// Every item in the store, for checking that a failed call changed nothing.
    package func snapshot() throws -> Set<StoredItem> {
        var all = Set<StoredItem>()
        for itemClass in ItemClass.allCases where itemClass != .identity {
            let query = ItemQuery(
                itemClass: itemClass, accessGroups: Set(ConformanceSuite.entitledGroups + [ConformanceSuite.foreignGroup]),
                synchronizable: .any)
            do {
                all.formUnion(try backend.fetch(matching: query, limit: nil))
            } catch {
                throw fail("snapshot fetch failed: \(error)")
            }
        }
        return all
    }

    /// Runs `body`, which must fail with `expected`, and checks the store did not change.
    package func expectRejected(
        _ expected: OSStatus, _ what: String, file: StaticString = #filePath, line: UInt = #line,
        _ body: () -> OSStatus
    ) throws {
        let before = try snapshot()
        let status = body()
        try expectStatus(status, expected, what, file: file, line: line)
        let after = try snapshot()
        try expect(before == after, "\(what): the store changed although the call failed", file: file, line: line)
    }

    /// A generic password query for service/account.
    package func genp(_ service: String, _ account: String, _ extra: [String: Any] = [:]) -> [String: Any] {
        Self.genericPasswordQuery(service, account, extra)
    }

    /// A generic password's dictionary: `kSecClass`, service, account, then `extra`.
    /// The one query builder of the package's tests (`SecItemTestSupport.Query` forwards here).
    package static func genericPasswordQuery(_ service: String, _ account: String, _ extra: [String: Any] = [:])
        -> [String: Any]
    {
        var q: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecAttrAccount as String: account,
        ]
        q.merge(extra) { _, new in new }
        return q
    }

    /// Adds a generic password and requires success.
    package func addGenp(
        _ service: String, _ account: String, data: Data? = Data("secret".utf8), _ extra: [String: Any] = [:],
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        var q = genp(service, account, extra)
        if let data { q[kSecValueData as String] = data }
        try expectStatus(add(q), errSecSuccess, "add \(service)/\(account)", file: file, line: line)
    }

    /// The data stored for service/account, or the failing status.
    package func readData(_ service: String, _ account: String, _ extra: [String: Any] = [:]) -> (OSStatus, Data?) {
        let (status, result) = copy(genp(service, account, extra.merging([kSecReturnData as String: true]) { $1 }))
        return (status, result as? Data)
    }

    /// Attributes of the single item matching `query`.
    package func attributes(_ query: [String: Any], file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        var q = query
        q[kSecReturnAttributes as String] = true
        let (status, result) = copy(q)
        try expectStatus(status, errSecSuccess, "read attributes", file: file, line: line)
        guard let dict = result as? [String: Any] else { throw fail("attributes: not a dictionary", file: file, line: line) }
        return dict
    }

    /// The number of items matching `query` (0 when none).
    package func count(_ query: [String: Any], file: StaticString = #filePath, line: UInt = #line) throws -> Int {
        var q = query
        q[kSecMatchLimit as String] = kSecMatchLimitAll
        q[kSecReturnPersistentRef as String] = true
        let (status, result) = copy(q)
        if status == errSecItemNotFound { return 0 }
        try expectStatus(status, errSecSuccess, "count", file: file, line: line)
        guard let refs = result as? [Data] else { throw fail("count: not an array of refs", file: file, line: line) }
        return refs.count
    }
}
