import SecItem
import SecItemCore
import SecItemMemory
import SecItemTools
import Testing

/// `secitem diagnose` lists each backend's environment variables as its provider names
/// them: a registered backend's variables appear without editing the tools, and the ones
/// a provider calls secret are shown as `(set)`.
@Suite("diagnose: environment variables come from the providers")
struct DiagnoseVariablesTests {
    struct VariablesProvider: SecItemBackendProvider {
        var kind: BackendKind { "diagnose-variables-test" }
        var automaticRank: Int? { nil }
        var environmentVariables: [String] { ["DIAGNOSE_TEST_STORE_PATH", "DIAGNOSE_TEST_STORE_TOKEN"] }
        var secretEnvironmentVariables: Set<String> { ["DIAGNOSE_TEST_STORE_TOKEN"] }
        func open(_ configuration: SecItemConfiguration) throws(SecItemError) -> any SecItemBackend { MemoryBackend() }
        func probe(_ configuration: SecItemConfiguration) -> BackendAvailability {
            BackendAvailability(usable: true, summary: "always")
        }
    }

    @Test("a registered provider's variables are listed; its secret ones and the built-ins' as (set)")
    func providerVariables() {
        let environment = [
            "DIAGNOSE_TEST_STORE_PATH": "/srv/store", "DIAGNOSE_TEST_STORE_TOKEN": "token-value-never-shown",
            "SECITEM_KEY_FILE": "/etc/secitem.key", "PGPASSWORD": "pg-password-never-shown",
            "SECITEM_COLLECTION": "login", "SECITEM_CONFIG": "none", "UNRELATED_VARIABLE": "x",
        ]
        let before = BackendDiagnosis.run(environment: environment).environment
        #expect(!before.contains { $0.hasPrefix("DIAGNOSE_TEST_STORE") }, "not listed before its provider is registered: \(before)")

        SecItemBackendRegistry.register(VariablesProvider())
        let lines = BackendDiagnosis.run(environment: environment).environment
        #expect(lines.contains("DIAGNOSE_TEST_STORE_PATH=/srv/store"))
        #expect(lines.contains("DIAGNOSE_TEST_STORE_TOKEN=(set)"))
        #expect(lines.contains("SECITEM_KEY_FILE=/etc/secitem.key"), "the file provider's")
        #expect(lines.contains("SECITEM_COLLECTION=login"), "the Secret Service provider's")
        #expect(lines.contains("PGPASSWORD=(set)"), "the PostgreSQL provider's, secret")
        #expect(lines.contains("SECITEM_CONFIG=none"), "a shared one")
        #expect(!lines.contains { $0.hasPrefix("UNRELATED_VARIABLE") })
        #expect(!lines.joined().contains("never-shown"))
        #expect(Set(lines).count == lines.count, "each variable once: \(lines)")
    }
}
