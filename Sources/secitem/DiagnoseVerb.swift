import Foundation
import SecItem
import SecItemTools
import SecItemPolkit

/// diagnose: which backend the process would use, why, and what is wrong with the others.
enum DiagnoseVerb {
    static let verb = Verb(
        "diagnose", summary: "Say which backend is used, why, and why each other one is or is not usable.",
        synopsis: "",
        discussion: """
            Nothing is created and no secret is printed: a passphrase shows as (set). The Secret Service
            is probed with a short bound (SECITEM_PROBE_TIMEOUT seconds per step, default 0.8); the file
            backend is opened only when its file exists. "access control" says whether the system bus,
            polkit, an authentication agent and logind are reachable, and whether the session is locked
            (items needing user presence, and WhenUnlocked items, depend on them); nobody is asked
            anything. Exits 0 when the backend that would be used is usable, 53 otherwise.
            """,
        options: []
    ) { (invocation: Invocation) throws(CommandError) in
        let diagnosis = BackendDiagnosis.run(environment: invocation.effectiveEnvironment)
        var out = "backend: \(diagnosis.chosen ?? "none")\(diagnosis.chosenUsable ? "" : " (NOT USABLE)")\n"
        out += "reason: \(diagnosis.reason)\n\n"
        for finding in diagnosis.findings {
            let mark = finding.backend == diagnosis.chosen ? "chosen" : (finding.usable ? "usable" : "not usable")
            out += "\(finding.backend): \(mark)\n"
            for note in finding.notes { out += "  \(note)\n" }
        }
        // Protected items: who can be asked (docs/secitem-semantics.md §9). Nothing is asked here.
        let access = PolkitAccessAuthority.processDefault.report()
        out += "\naccess control:\n"
        out += "  system bus: \(access.systemBus)\n"
        out += "  polkit: \(access.polkit)\n"
        out += "  authentication agent: \(access.agent)\n"
        out += "  session lock: \(access.session)\n"
        out += "\nconfiguration:\n"
        for line in diagnosis.configuration { out += "  \(line)\n" }
        out += "settings:\n"
        if diagnosis.settings.isEmpty { out += "  (none given: every setting has its default)\n" }
        for line in diagnosis.settings { out += "  \(line)\n" }
        out += "process: \(ProcessHardening.summary)\n"
        out += "environment:\n"
        if diagnosis.environment.isEmpty { out += "  (no SECITEM_ variables set)\n" }
        for line in diagnosis.environment { out += "  \(line)\n" }
        Console.write(out)
        if !diagnosis.chosenUsable {
            throw CommandError(.notAvailable, "the \(diagnosis.chosen ?? "chosen") backend is not usable: see above")
        }
    }
}
