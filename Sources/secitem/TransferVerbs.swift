import Foundation
import SecItem
import SecItemCore
import SecItemSecretService
import SecItemTools

/// export, import and migrate.
enum TransferVerbs {
    static let all: [Verb] = [export, importVerb, migrate]

    static let selectionOptions: [OptionSpec] = [
        OptionSpec("class", long: "class", valueName: "class", help: "Only this class: genp, inet, cert or keys (default: all)."),
        OptionSpec("account", short: "a", valueName: "account", help: "Only items with this account."),
        OptionSpec("service", short: "s", valueName: "name", help: "Only generic passwords of this service and internet passwords of this server."),
        OptionSpec("label", short: "l", valueName: "label", help: "Only items with this label."),
        OptionSpec("group", long: "group", valueName: "group", help: "Only this access group (default: every group in the store)."),
        OptionSpec("thisDevice", long: "include-this-device-only", .flag, help: "Also take items whose accessibility is …ThisDeviceOnly."),
    ]

    static func selection(_ args: ParsedArguments, environment: [String: String]) throws(CommandError) -> KeychainTransfer.Selection {
        // The operator sees every group; --group narrows.
        var selection = KeychainTransfer.Selection(accessGroups: [])
        selection.coversEveryAccessGroup = true
        if let group = args.value("group") {
            selection.accessGroups = [group]
            selection.coversEveryAccessGroup = false
        }
        if let name = args.value("class") {
            guard let itemClass = ItemClass(rawValue: name), itemClass != .identity else {
                throw CommandError(.usage, "--class must be genp, inet, cert or keys, not '\(name)'")
            }
            selection.classes = [itemClass]
        }
        if let account = args.value("account") { selection.attributes[SecConstant.kSecAttrAccount] = .string(account) }
        if let label = args.value("label") { selection.attributes[SecConstant.kSecAttrLabel] = .string(label) }
        selection.serviceOrServer = args.value("service")
        selection.includeThisDeviceOnly = args.has("thisDevice")
        return selection
    }

    static let skipDamagedOption = OptionSpec(
        "skipDamaged", long: "skip-damaged", .flag,
        help: "Go on when the source has damaged rows (listed on stderr, left behind); without it they make the verb fail.")

    /// Fails (status 1) when `backend` has damaged rows, listing their identities
    /// (never contents) on stderr; with --skip-damaged only warns.
    static func checkDamaged(_ backend: any SecItemBackend, _ args: ParsedArguments, verb: String) throws(CommandError) {
        let damaged: [String]
        do throws(SecItemError) {
            damaged = try KeychainTransfer.damagedRows(in: backend)
        } catch {
            throw CommandError(error, context: "cannot check the \(backend.kind) keychain for damaged rows")
        }
        guard !damaged.isEmpty else { return }
        Console.error("secitem \(verb): the \(backend.kind) keychain has \(damaged.count) problems that searches skip (damaged or missing rows):\n")
        for line in damaged { Console.error("  \(line)\n") }
        guard args.has("skipDamaged") else {
            throw CommandError(
                .failure,
                "items behind \(damaged.count) problems would be left out; nothing done (--skip-damaged goes on without them; `secitem verify` lists them)")
        }
        Console.error("secitem \(verb): going on without them (--skip-damaged)\n")
    }

    /// The export passphrase: SECITEM_EXPORT_PASSPHRASE (taken from the environment
    /// at start-up, dropped here), else a prompt or standard input; never a `String`.
    static func passphrase(confirm: Bool) throws(CommandError) -> Passphrase {
        if let value = SecretEnvironment.consume("SECITEM_EXPORT_PASSPHRASE"), !value.isEmpty { return value }
        let secret = try Console.readSecretPassphrase(
            prompt: "export passphrase: ", confirm: confirm ? "retype export passphrase: " : nil)
        guard !secret.isEmpty else {
            throw CommandError(.usage, "the export passphrase is empty")
        }
        return secret
    }

    static let export = Verb(
        "export", summary: "Write matching items to an export file, encrypted with a passphrase.",
        synopsis: "--output FILE [--plaintext] [--include-this-device-only] [selection] | --type certs|pubKeys [--format pemseq|x509] [--output FILE]",
        discussion: """
            The file is a secitem export (format version 1, docs/cli.md): encrypted with scrypt and
            AES-256-GCM exactly as the file backend is, unless --plaintext asks for clear JSON. The
            passphrase comes from SECITEM_EXPORT_PASSPHRASE, else a prompt on a terminal (asked twice),
            else standard input. Items marked …ThisDeviceOnly are left out unless asked for; the count
            left out is reported on stderr. Every attribute, the data and the persistent reference are kept.
            """,
        options: [
            OptionSpec("output", short: "o", long: "output", valueName: "file", help: "The file to write (must not exist)."),
            OptionSpec("plaintext", long: "plaintext", .flag, help: "Write clear JSON, not encrypted: anyone who reads the file reads the secrets."),
            skipDamagedOption,
            OptionSpec("type", short: "t", long: "type", valueName: "certs|pubKeys", help: "Export certificates or public keys (PEM; not an archive), as macOS security export -t."),
            OptionSpec("format", short: "f", long: "format", valueName: "pemseq|x509", help: "With --type: PEM sequence (default) or one DER certificate."),
        ] + selectionOptions
    ) { (invocation: Invocation) throws(CommandError) in
        let args = invocation.arguments
        if let type = args.value("type") { return try CertificateVerbs.exportObjects(invocation, type: type) }
        guard let output = args.value("output") else { throw CommandError(.usage, "--output FILE is required") }
        let env = invocation.effectiveEnvironment
        let selection = try selection(args, environment: env)
        let client = try invocation.client()
        try checkDamaged(client.backend, args, verb: "export")
        var found: (items: [StoredItem], leftOut: Int)
        do throws(SecItemError) {
            found = try KeychainTransfer.items(in: client.backend, selection, authority: client.accessAuthority, skippingDamaged: args.has("skipDamaged"))
        } catch {
            throw CommandError(error, context: "cannot read the items to export")
        }
        // Decrypted for the archive: zeroed once written (best effort, docs/cli.md "The process").
        defer { found.items.wipeData() }
        let secret = args.has("plaintext") ? nil : try passphrase(confirm: true)
        if let secret {
            do throws(SecItemError) {
                try ExportArchive.checkPassphrase(secret)
            } catch {
                throw CommandError(error, context: "cannot export")
            }
        }
        var progress = Progress("export", total: found.items.count)
        do throws(SecItemError) {
            try ExportArchive.write(found.items, to: output, passphrase: secret) { progress.update($0) }
        } catch {
            progress.finish()
            throw CommandError(error, context: "cannot write \(output)")
        }
        progress.finish()
        var note = "exported \(found.items.count) items from the \(client.backend.kind) keychain to \(output)"
        if args.has("plaintext") { note += " (PLAINTEXT)" }
        if found.leftOut > 0 { note += "; left out \(found.leftOut) ThisDeviceOnly items (--include-this-device-only takes them)" }
        Console.error(note + "\n")
    }

    static let importVerb = Verb(
        "import", summary: "Add every item of an export file to the keychain.",
        synopsis: "--input FILE [--plaintext] [--resume] [--access-group GROUP] | FILE [--label L] [--access-group GROUP]",
        discussion: """
            The whole file is read and checked first: a wrong passphrase (status 51), or a damaged,
            truncated or foreign file (status 1), imports nothing. A plaintext (JSON) export is imported
            only with --plaintext: anyone could have written one. Items are added as they were exported
            (attributes, data, persistent reference) in one batch — on the file backend one transaction,
            all or nothing even if the process is killed; elsewhere undone on failure — and each is read
            back and compared. If any item already exists, nothing is imported (status 45); when those
            are this file's own items (an import that was killed part-way on the Secret Service),
            --resume adds the rest. Each item keeps its access group, unless --access-group puts every
            item in one group (as new items: each gets a new persistent reference; such an import cannot
            be resumed). The passphrase comes from SECITEM_EXPORT_PASSPHRASE, a prompt, or standard input.
            """,
        options: [
            OptionSpec("input", short: "i", long: "input", valueName: "file", help: "The export file to read."),
            OptionSpec("plaintext", long: "plaintext", .flag, help: "Accept a plaintext (JSON) export file."),
            OptionSpec("resume", long: "resume", .flag, help: "Finish an interrupted import: skip items already there with the same identity and contents."),
            OptionSpec("group", short: "G", long: "access-group", valueName: "group", help: "Import every item into this access group instead of its own."),
            OptionSpec("label", short: "l", long: "label", valueName: "label", help: "With FILE: the label of the imported objects."),
        ],
        maxOperands: 1
    ) { (invocation: Invocation) throws(CommandError) in
        // `secitem import FILE`: a PEM, DER or PKCS #12 file, as macOS security import (CertificateVerbs).
        if let file = invocation.arguments.operands.first { return try CertificateVerbs.importFile(invocation, file) }
        guard let input = invocation.arguments.value("input") else { throw CommandError(.usage, "--input FILE is required") }
        let env = invocation.effectiveEnvironment
        do throws(SecItemError) {
            if try !ExportArchive.isEncrypted(input) && !invocation.arguments.has("plaintext") {
                throw SecItemError(
                    errSecDecode,
                    "it is a plaintext (JSON) export, not an encrypted one; anyone who could write it chose its items. Give --plaintext to import it anyway")
            }
        } catch {
            throw CommandError(error, context: "cannot read \(input)")
        }
        var items: [StoredItem] = []
        defer { items.wipeData() }
        do throws(SecItemError) {
            items = try ExportArchive.read(from: input, allowPlaintext: invocation.arguments.has("plaintext")) {
                () throws(SecItemError) in
                do throws(CommandError) {
                    return try passphrase(confirm: false)
                } catch {
                    throw SecItemError(errSecParam, error.message)
                }
            }
        } catch {
            throw CommandError(error, context: "cannot read \(input)")
        }
        let client = try invocation.client()
        var progress = Progress("import", total: items.count)
        let added: Int
        do throws(SecItemError) {
            added = try KeychainTransfer.importItems(
                items, into: client, accessGroup: invocation.arguments.value("group"), resume: invocation.arguments.has("resume")
            ) { progress.update($0) }.added
        } catch {
            progress.finish()
            throw CommandError(error, context: "cannot import into the \(client.backend.kind) keychain")
        }
        progress.finish()
        let resumed = added < items.count ? " (\(items.count - added) were already there from an interrupted import)" : ""
        Console.error("imported \(added) items into the \(client.backend.kind) keychain\(resumed)\n")
    }

    /// migrate --adopt-foreign: copies foreign Secret Service items into a SecItem group of the same store.
    static func adoptForeign(_ invocation: Invocation) throws(CommandError) {
        let args = invocation.arguments
        guard let group = args.value("toGroup"), !group.isEmpty else {
            throw CommandError(.usage, "--adopt-foreign needs --to-group GROUP")
        }
        let foreign = SecretServiceBackend.foreignItemsAccessGroup
        guard group != foreign else { throw CommandError(.usage, "--to-group must be a SecItem group, not \(foreign)") }
        for name in [args.value("from"), args.value("to")].compactMap({ $0 }) where BackendKind(name) != .secretService {
            throw CommandError(.usage, "--adopt-foreign works within the Secret Service, not '\(name)'")
        }
        var env = invocation.environment
        // --move deletes the originals, one by one by persistent reference: the named
        // write the Secret Service backend allows on other tools' items only when asked.
        if args.has("move") { env["SECITEM_SECRET_SERVICE_FOREIGN_WRITES"] = "1" }
        var selection = try selection(args, environment: env)
        selection.accessGroups = [foreign]
        selection.includeThisDeviceOnly = true
        let store = try Invocation.client(SecItemConfiguration.resolve(environment: env).selecting(.secretService))
        let originals: [StoredItem]
        do throws(SecItemError) {
            originals = try KeychainTransfer.items(in: store.backend, selection).items
        } catch {
            throw CommandError(error, context: "cannot read the items other tools stored")
        }
        let adopted = originals.map { original -> StoredItem in
            var copy = original
            copy.id = UUID()
            copy.attributes[SecConstant.kSecAttrAccessGroup] = .string(group)
            return copy
        }
        do throws(SecItemError) {
            try KeychainTransfer.copy(adopted, into: store.backend)
        } catch {
            throw CommandError(error, context: "cannot adopt the items into \(group); the originals are unchanged")
        }
        if args.has("move") {
            do throws(SecItemError) {
                try KeychainTransfer.delete(originals, from: store.backend)
            } catch {
                throw CommandError(error, context: "adopted and verified \(originals.count) items, but deleting the originals failed")
            }
        }
        Console.error("adopted \(originals.count) items other tools stored into \(group), each verified\(args.has("move") ? "; the originals were deleted" : "")\n")
    }

    static let migrate = Verb(
        "migrate", summary: "Copy (or, with --move, move) matching items from one backend to another.",
        synopsis: "--from BACKEND --to BACKEND [--move] [selection]",
        discussion: """
            Items are copied with every attribute, their data and their persistent reference, and each is
            read back from the target and compared. Only when every item is verified does --move delete
            them from the source. If any item already exists in the target nothing is copied (status 45);
            a failure part-way removes what was copied, leaves the source untouched and says how far it got.
            ThisDeviceOnly items are migrated too (they stay on this device). --move to the memory
            backend is refused: it lives only as long as this process. Damaged rows in the source make
            migrate fail unless --skip-damaged is given.

            --adopt-foreign --to-group GROUP [--move]: the items other Secret Service clients stored
            (access group org.secitem.foreign, docs/secret-service-mapping.md) that the selection
            matches are copied as SecItem items into GROUP in the same Secret Service, each with a new
            identity, then read back and compared; with --move the originals are deleted afterwards
            (the other tool no longer finds them).
            """,
        options: [
            OptionSpec("from", long: "from", valueName: "backend", help: "The source: \(SecItemBackendChoice.names.joined(separator: ", "))."),
            OptionSpec("to", long: "to", valueName: "backend", help: "The target: \(SecItemBackendChoice.names.joined(separator: ", "))."),
            OptionSpec("move", long: "move", .flag, help: "Delete the items from the source once all are verified in the target."),
            OptionSpec("resume", long: "resume", .flag, help: "Finish an interrupted migration: skip items already in the target with the same identity and contents."),
            skipDamagedOption,
            OptionSpec(
                "adoptForeign", long: "adopt-foreign", .flag,
                help: "Adopt items other Secret Service clients stored (secret-tool, Python keyring, git's libsecret helper) into --to-group."),
            OptionSpec("toGroup", long: "to-group", valueName: "group", help: "With --adopt-foreign: the SecItem access group the copies go to."),
        ] + selectionOptions.filter { $0.key != "thisDevice" }
    ) { (invocation: Invocation) throws(CommandError) in
        let args = invocation.arguments
        if args.has("adoptForeign") { return try adoptForeign(invocation) }
        guard let from = args.value("from"), let to = args.value("to") else {
            throw CommandError(.usage, "--from and --to are required")
        }
        guard from != to else { throw CommandError(.usage, "--from and --to name the same backend") }
        if args.has("move") && BackendKind(to) == .memory {
            throw CommandError(
                .usage,
                "--move to the memory backend would lose the items: it lives only as long as this process; nothing done")
        }
        let env = invocation.environment
        var selection = try selection(args, environment: env)
        selection.includeThisDeviceOnly = true
        // One resolution for both backends; it (and the passphrase in it) goes once both are open.
        let source: SecItemClient, target: SecItemClient
        do {
            let configuration = SecItemConfiguration.resolve(environment: env)
            source = try Invocation.client(configuration.selecting(BackendKind(from)), keepPassphrase: true)
            target = try Invocation.client(configuration.selecting(BackendKind(to)))
        }
        try checkDamaged(source.backend, args, verb: "migrate")
        var items: [StoredItem] = []
        defer { items.wipeData() }
        do throws(SecItemError) {
            items = try KeychainTransfer.items(in: source.backend, selection, authority: source.accessAuthority, skippingDamaged: args.has("skipDamaged")).items
        } catch {
            throw CommandError(error, context: "cannot read the items from the \(from) keychain")
        }
        var progress = Progress("migrate", total: items.count)
        do throws(SecItemError) {
            try KeychainTransfer.copy(items, into: target.backend, resume: args.has("resume")) { progress.update($0) }
        } catch {
            progress.finish()
            throw CommandError(error, context: "cannot copy from \(from) to \(to); the \(from) keychain is unchanged")
        }
        progress.finish()
        if args.has("move") {
            do throws(SecItemError) {
                try KeychainTransfer.delete(items, from: source.backend)
            } catch {
                throw CommandError(error, context: "copied and verified \(items.count) items, but deleting them from \(from) failed")
            }
        }
        Console.error("\(args.has("move") ? "moved" : "copied") \(items.count) items from \(from) to \(to), each verified\n")
    }
}
