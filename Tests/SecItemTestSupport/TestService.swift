import Foundation
public import Testing

/// A service some tests need, which `scripts/test` starts around `swift test`.
///
/// A plain `swift test` on a machine without them is honest: a test or suite marked
/// ``Testing/Trait/requires(_:)`` is skipped, and Swift Testing prints the reason.
/// With `SECITEM_REQUIRE_SERVICES=1` (set by `scripts/test`, and so by CI) nothing is
/// skipped: a missing service fails the tests that need it, loudly.
public enum TestService: Sendable, CaseIterable {
    /// A private D-Bus session with gnome-keyring-daemon (`scripts/with-secret-service`).
    case secretService
    /// A private PostgreSQL server on a Unix socket (`scripts/with-postgresql`).
    case postgresql
    /// A private system bus with mock polkit and logind (`scripts/with-system-bus`).
    case systemBus
    /// git's own credential-helper tests and its libsecret helper (`scripts/git-test-suite`).
    case gitTestSuite
    /// xdg-desktop-portal with gnome-keyring's Secret portal on the Secret Service's bus
    /// (`scripts/with-secret-service`).
    case secretPortal
    /// Debian's swtpm and tpm2-tools: each suite starts its own TPM (``SoftwareTPM``).
    case softwareTPM

    /// Whether a missing service fails the tests instead of skipping them (`SECITEM_REQUIRE_SERVICES=1`).
    public static var required: Bool { required(in: ProcessInfo.processInfo.environment) }

    /// Whether `environment` asks for every service (`SECITEM_REQUIRE_SERVICES=1`).
    public static func required(in environment: [String: String]) -> Bool { environment["SECITEM_REQUIRE_SERVICES"] == "1" }

    /// Why the service cannot be reached, or `nil` when it is there.
    public var missing: String? { missing(in: ProcessInfo.processInfo.environment) }

    /// Why the service cannot be reached from a process with `environment`, or `nil`.
    public func missing(in environment: [String: String]) -> String? {
        func set(_ name: String) -> Bool { !(environment[name] ?? "").isEmpty }
        switch self {
        case .secretService:
            guard environment["SECITEM_TEST_SECRET_SERVICE"] == "1", set("DBUS_SESSION_BUS_ADDRESS") else {
                return "needs the private Secret Service of scripts/with-secret-service (or run scripts/test)"
            }
        case .postgresql:
            guard set("SECITEM_TEST_POSTGRESQL_DIR"), set("PGHOST") else {
                return "needs the private PostgreSQL server of scripts/with-postgresql (or run scripts/test)"
            }
        case .systemBus:
            guard environment["SECITEM_TEST_SYSTEM_BUS"] == "1" else {
                return "needs the private system bus with mock polkit and logind of scripts/with-system-bus (or run scripts/test)"
            }
        case .secretPortal:
            guard environment["SECITEM_TEST_PORTAL"] == "1", set("DBUS_SESSION_BUS_ADDRESS") else {
                return "needs xdg-desktop-portal with gnome-keyring's Secret portal, started by scripts/with-secret-service (or run scripts/test)"
            }
        case .gitTestSuite:
            guard set("SECITEM_GIT_TEST_SUITE"), set("SECITEM_GIT_CREDENTIAL_LIBSECRET") else {
                return "needs git's test suite and its libsecret helper (scripts/git-test-suite; run scripts/test)"
            }
        case .softwareTPM:
            for program in ["swtpm", "tpm2_pcrextend"] where (try? Executables.which(program)) == nil {
                return "needs \(program) (Debian's swtpm and tpm2-tools; scripts/install-deps installs them)"
            }
        }
        return nil
    }
}

extension TestService {
    /// Inside a test: returns when the service is there. Otherwise cancels the test
    /// (Swift Testing reports it skipped, with the reason), or with
    /// `SECITEM_REQUIRE_SERVICES=1` records an issue and throws.
    public func require(sourceLocation: SourceLocation = #_sourceLocation) throws {
        try require(environment: ProcessInfo.processInfo.environment, sourceLocation: sourceLocation)
    }

    /// ``require(sourceLocation:)`` as in a process with `environment`.
    public func require(environment: [String: String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard let missing = missing(in: environment) else { return }
        if Self.required(in: environment) {
            Issue.record("SECITEM_REQUIRE_SERVICES=1, and this test \(missing)", sourceLocation: sourceLocation)
            throw Missing(reason: missing)
        }
        try Test.cancel("skipped: this test \(missing)", sourceLocation: sourceLocation)
    }

    /// What ``require(sourceLocation:)`` throws when a required service is missing.
    public struct Missing: Error, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test or suite when every service in `services` is there; otherwise skips
    /// it with the reason printed, unless `SECITEM_REQUIRE_SERVICES=1`, where it runs
    /// (and fails on the missing service).
    public static func requires(_ services: TestService...) -> Self {
        let decision = TestService.decision(services, environment: ProcessInfo.processInfo.environment)
        return .enabled(if: decision.runs, Comment(rawValue: decision.reason ?? ""))
    }
}

extension TestService {
    /// Whether a test needing `services` runs in a process with `environment`, and the
    /// reason it is skipped ("skipped: this test needs …") when it does not: it runs when
    /// every service is there, or when `SECITEM_REQUIRE_SERVICES=1` (then it fails on the
    /// missing one).
    public static func decision(_ services: [TestService], environment: [String: String]) -> (runs: Bool, reason: String?) {
        let missing = services.compactMap { $0.missing(in: environment) }
        guard !missing.isEmpty else { return (true, nil) }
        return (required(in: environment), "skipped: " + missing.joined(separator: "; "))
    }
}
