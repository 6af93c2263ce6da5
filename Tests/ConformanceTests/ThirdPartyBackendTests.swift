import Testing
import SecItemConformance
import SecItemTestSupport
import Foundation

/// What a backend author outside this package needs: the store depends on
/// SecItemCore, its test on the conformance kit, and neither pulls in libsecret,
/// OpenSSL, SQLite or libpq. Proved by building and testing the package in
/// `Tests/Fixtures/ThirdPartyBackend` (which depends on this one by path) the way its
/// author would, and by reading SwiftPM's own view of the targets. The core is two
/// targets: SecItemCore and CSecItemLinkHook, its three lines of C with no library
/// (the built-in settings' registration hook, docs/architecture.md).
@Suite("A backend outside the package")
struct ThirdPartyBackendTests {
    /// This checkout (the fixture and `swift package describe` run against it).
    static let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let fixture = checkout.appendingPathComponent("Tests/Fixtures/ThirdPartyBackend")
    /// The fixture's own build directory, kept between runs (incremental: a cold
    /// build is about 50 s on a loaded 2-core machine, a warm one a few seconds).
    static let scratch = checkout.appendingPathComponent(".build/fixtures/ThirdPartyBackend")

    static func swift(_ arguments: [String], timeout: Duration = .seconds(900)) throws -> ProcessOutput {
        let result = try ChildProcess.run(try Executables.which("swift"), arguments, timeout: timeout)
        try #require(result.status == 0, "swift \(arguments.joined(separator: " ")) failed:\n\(result.stdout)\n\(result.stderr)")
        return result
    }

    /// The core's targets: SecItemCore, the modules it re-exports (Apple's names, the item model,
    /// the `SecItem…` API) and the settings' link-time hook (C, no library).
    static let core: Set<String> = ["SecItemCore", "SecItemAPI", "SecItemModel", "SecItemSecurity", "CSecItemLinkHook"]

    /// Every target `target` depends on, directly or not, per `swift package describe`.
    static func closure(of target: String, in targets: [String: [String]]) -> Set<String> {
        var seen = Set<String>()
        var pending = targets[target] ?? []
        while let next = pending.popLast() {
            if seen.insert(next).inserted { pending += targets[next] ?? [] }
        }
        return seen
    }

    @Test("the kit depends on SecItemCore only, the core's tests on the core, the memory backend and the kit")
    func dependencyClosures() throws {
        let described = try Self.swift([
            "package", "--package-path", Self.checkout.path, "--scratch-path",
            Self.checkout.appendingPathComponent(".build/fixtures/describe").path, "describe", "--type", "json",
        ])
        struct Package: Decodable {
            struct Target: Decodable {
                let name: String
                let target_dependencies: [String]?
                let product_dependencies: [String]?
            }
            let targets: [Target]
        }
        let package = try JSONDecoder().decode(Package.self, from: described.stdoutData)
        var targets: [String: [String]] = [:]
        for target in package.targets {
            targets[target.name] = target.target_dependencies ?? []
            #expect(target.product_dependencies == nil, "\(target.name) depends on another package")
        }
        try #require(targets["SecItemConformance"] != nil && targets["SecItemCoreTests"] != nil, "targets renamed?")
        #expect(Self.closure(of: "SecItemConformance", in: targets) == Self.core)
        #expect(Self.closure(of: "SecItemCoreTests", in: targets).isSubset(of: Self.core.union(["SecItemMemory", "SecItemConformance"])))
    }

    @Test("a backend package outside this one builds against SecItemCore and the kit alone and passes every case")
    func outOfTreeBackend() throws {
        let location = ["--package-path", Self.fixture.path, "--scratch-path", Self.scratch.path]
        _ = try Self.swift(["build", "--build-tests"] + location)
        // SwiftPM's plan for what `swift test` builds, each target with everything it depends on.
        let plan = Self.scratch.appendingPathComponent("debug/description.json")
        let description = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: plan)) as? [String: Any], "no build plan at \(plan.path)")
        let dependencies = try #require(
            description["targetDependencyMap"] as? [String: [String]], "SwiftPM's build plan has no targetDependencyMap")
        let built = try #require(dependencies["ThirdPartyBackendPackageTests"], "the fixture's test product is not in the plan")
        #expect(
            Set(built).subtracting(["ThirdPartyBackendPackageDiscoveredTests", "ArrayBackendTests", "ArrayBackend"])
                == Self.core.union(["SecItemConformance"]),
            "the fixture's tests build \(built.sorted())")

        let run = try Self.swift(["test", "--skip-build"] + location)
        let cases = ConformanceSuite.cases.count
        #expect(
            run.stdout.contains("Test \"conformance\" with \(cases) test cases passed"),
            "expected all \(cases) kit cases to pass:\n\(run.stdout.suffix(2000))")
    }
}
