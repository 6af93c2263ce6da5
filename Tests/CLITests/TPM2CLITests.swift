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

    @Test("an older copy of a TPM-keyed store put back after the state directory was deleted: secitem refuses it (the TPM counter), verify says so, accept-restore accepts it")
    func rollbackCounter() throws {
        let tpm = try SoftwareTPM()
        defer { tpm.stop() }
        let cli = try CLI(backend: "file", bus: false)
        let db = cli.root.appendingPathComponent("k.db").path
        let env: [String: String?] = ["SECITEM_KEY_SOURCE": "tpm2", "SECITEM_TPM2_TCTI": tpm.tcti, "SECITEM_FILE": db]
        let add = try cli.run(["add-generic-password", "-a", "alice", "-s", "api", "-w", "-"], stdin: "v1\n", environment: env)
        #expect(add.status == 0, "\(add.stderr)")
        let old = db + ".old"
        try FileManager.default.copyItem(atPath: db, toPath: old)
        let update = try cli.run(["add-generic-password", "-U", "-a", "alice", "-s", "api", "-w", "-"], stdin: "v2\n", environment: env)
        #expect(update.status == 0, "\(update.stderr)")
        let state = cli.root.appendingPathComponent("state").path
        try FileManager.default.removeItem(atPath: state)
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: db + suffix) }
        try FileManager.default.copyItem(atPath: old, toPath: db)

        let refused = try cli.run(["find-generic-password", "-a", "alice", "-s", "api", "-w"], environment: env)
        #expect(refused.status != 0 && refused.stdout.isEmpty, "\(refused.stdout)")
        #expect(refused.stderr.contains("rolled back") && refused.stderr.contains("TPM"), "\(refused.stderr)")
        let verify = try cli.run(["verify"], environment: env)
        #expect(verify.status != 0 && verify.stdout.contains("rolled back"), "\(verify.stdout)\(verify.stderr)")
        let accepted = try cli.run(["accept-restore", "--reason", "restored on purpose (TPM CLI test)"], environment: env)
        #expect(accepted.status == 0, "\(accepted.stderr)")
        let found = try cli.run(["find-generic-password", "-a", "alice", "-s", "api", "-w"], environment: env)
        #expect(found.stdout == "v1\n", "\(found.stderr)")
        let log = (try? String(contentsOfFile: state + "/secitem/high-water/accepted.log", encoding: .utf8)) ?? ""
        #expect(log.contains("restored on purpose (TPM CLI test)"), "\(log)")
    }
}
