import Foundation
import SecItemTestSupport
import Testing

/// The `secitem` command with its store's key sealed to a TPM (swtpm): each run is a new
/// process that re-creates the TPM's primary key and unseals; `diagnose` names the source.
@Suite(.requires(.softwareTPM), .serialized) struct TPM2CLITests {
    @Test("a TPM-keyed store written by one secitem process is read by the next; a fresh TPM and no TPM are refused with the source named")
    func otherProcesses() throws {
        let tpm = try SoftwareTPM()
        defer { tpm.stop() }
        let cli = try CLI(backend: "file", bus: false)
        let env: [String: String?] = ["SECITEM_KEY_SOURCE": "tpm2", "SECITEM_TPM2_TCTI": tpm.tcti]
        let add = try cli.run(["add-generic-password", "-a", "alice", "-s", "api", "-w", "-"], stdin: "tpm-secret\n", environment: env)
        #expect(add.status == 0, "\(add.stderr)")
        let find = try cli.run(["find-generic-password", "-a", "alice", "-s", "api", "-w"], environment: env)
        #expect(find.stdout == "tpm-secret\n", "\(find.stderr)")

        let diagnose = try cli.run(["diagnose"], environment: env)
        #expect(diagnose.stdout.contains("sealed to the TPM 2.0 at \(tpm.tcti)"), "\(diagnose.stdout)")
        #expect(diagnose.stdout.contains("stops disk theft and a leaked backup"))
        #expect(diagnose.stdout.contains("opened and unlocked"))
        #expect(!diagnose.stdout.contains("tpm-secret"))

        let fresh = try SoftwareTPM()
        defer { fresh.stop() }
        let refused = try cli.run(["find-generic-password", "-a", "alice", "-s", "api", "-w"], environment: ["SECITEM_KEY_SOURCE": "tpm2", "SECITEM_TPM2_TCTI": fresh.tcti])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("sealed by a different TPM"), "\(refused.stderr)")
        fresh.stop()
        let none = try cli.run(["find-generic-password", "-a", "alice", "-s", "api", "-w"], environment: ["SECITEM_KEY_SOURCE": "tpm2", "SECITEM_TPM2_TCTI": fresh.tcti])
        #expect(none.status != 0)
        #expect(none.stderr.contains("key source tpm2"), "\(none.stderr)")
        // The first TPM still opens it: nothing was rewritten by the refusals.
        #expect(try cli.run(["find-generic-password", "-a", "alice", "-s", "api", "-w"], environment: env).stdout == "tpm-secret\n")
    }
}
