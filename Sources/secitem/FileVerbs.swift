import Foundation
import SecItem
import SecItemCore
import SecItemTools

/// rekey, verify and upgrade: the sealed stores (the encrypted file, PostgreSQL). They act on
/// the backend --backend, SECITEM_BACKEND or the config file names, and on the file keychain
/// when none is named; a named backend without such a store (Secret Service, memory) is refused.
enum FileVerbs {
    static let all: [Verb] = [rekey, verify, upgrade]

    static let rekey = Verb(
        "rekey", summary: "Change the file or PostgreSQL keychain's passphrase or key file, or rotate its data key.",
        synopsis: "(--new-passphrase | --new-key-file FILE) [--rewrap-only] | --rotate",
        discussion: """
            The file is opened with its current key, from the usual configuration (SECITEM_KEY_FILE,
            SECITEM_PASSPHRASE, the config file, or the generated key file). --new-passphrase reads the
            new passphrase from SECITEM_NEW_PASSPHRASE, else a prompt (asked twice), else standard input;
            --new-key-file takes a key file (0600, 32 bytes raw, hex or base64). Either generates a new
            data key and re-encrypts every row in one transaction, so an old copy of the file plus the old
            secret opens nothing written afterwards. --rewrap-only instead re-wraps the same data key (fast,
            but old backups plus the old secret still open new items). --rotate replaces the data key and
            keeps the passphrase or key file. On any failure the file is unchanged. Other processes must
            reopen with the new key. With SECITEM_BACKEND=postgresql (or --backend postgresql) the shared
            PostgreSQL keychain is rekeyed or rotated instead, in one transaction (--rewrap-only is refused
            there); other hosts reload the key on their next call (docs/postgresql.md).
            """,
        options: [
            OptionSpec("newPassphrase", long: "new-passphrase", .flag, help: "Protect the file with a new passphrase."),
            OptionSpec("newKeyFile", long: "new-key-file", valueName: "file", help: "Protect the file with this key file."),
            OptionSpec("rewrapOnly", long: "rewrap-only", .flag, help: "Keep the data key; only re-wrap it (see above)."),
            OptionSpec("rotate", long: "rotate", .flag, help: "Replace the data key and re-encrypt every item."),
        ]
    ) { (invocation: Invocation) throws(CommandError) in
        let args = invocation.arguments
        let chosen = [args.has("newPassphrase"), args.has("newKeyFile"), args.has("rotate")].filter { $0 }.count
        guard chosen == 1 else { throw CommandError(.usage, "give exactly one of --new-passphrase, --new-key-file, --rotate") }
        guard !(args.has("rewrapOnly") && args.has("rotate")) else {
            throw CommandError(.usage, "--rewrap-only goes with --new-passphrase or --new-key-file, not --rotate")
        }
        let env = invocation.effectiveEnvironment
        // The backend keeps only the derived keys; the passphrases go once it is done.
        defer { SecretEnvironment.forget(SecItemConfiguration.Variable.passphrase) }
        do throws(SecItemError) {
            if args.has("rotate") {
                let path = try FileMaintenance.rotateDataKey(environment: env)
                Console.error("rotated the data key of \(path); every item re-encrypted and verified\n")
                return
            }
            let newKey: FileMaintenance.NewKey
            if let keyFile = args.value("newKeyFile") {
                newKey = .keyFile(keyFile)
            } else if let value = SecretEnvironment.consume("SECITEM_NEW_PASSPHRASE"), !value.isEmpty {
                newKey = .passphrase(value)
            } else {
                let secret: Passphrase
                do throws(CommandError) {
                    secret = try Console.readSecretPassphrase(prompt: "new passphrase: ", confirm: "retype new passphrase: ")
                } catch {
                    throw SecItemError(errSecParam, error.message)
                }
                guard !secret.isEmpty else {
                    throw SecItemError(errSecParam, "the new passphrase is empty")
                }
                newKey = .passphrase(secret)
            }
            let rewrapOnly = args.has("rewrapOnly")
            let path = try FileMaintenance.rekey(environment: env, to: newKey, rewrapOnly: rewrapOnly)
            let what = args.has("newKeyFile") ? "key file" : "passphrase"
            if rewrapOnly {
                Console.error(
                    "secitem: warning: --rewrap-only kept the data key: an old copy of \(path) plus the old \(what) "
                        + "still opens every item, including ones added from now on\n")
                Console.error("re-wrapped the data key of \(path); open it with the new \(what) from now on\n")
            } else {
                Console.error(
                    "rekeyed \(path): new data key, every item re-encrypted; open it with the new \(what) from now on\n")
            }
        } catch {
            throw CommandError(error, context: "cannot rekey the keychain")
        }
    }

    static let verify = Verb(
        "verify", summary: "Check the file or PostgreSQL keychain and list damaged, missing or replayed rows.",
        synopsis: "[--expect-commitment VALUE]",
        discussion: """
            Checks the file's structure and schema, opens every row, and compares the set of rows with the
            file's keyed commitment: a row deleted, restored from an older copy or copied in from another
            file is named. Prints the commitment value (generation:hex), which changes with every write;
            kept somewhere the file's attacker cannot write, --expect-commitment VALUE detects a rollback
            of the whole file to an older copy (which the file alone cannot reveal). Exits 0 when all is
            well, 1 when something was found (listed on stdout, without contents). With
            SECITEM_BACKEND=postgresql (or --backend postgresql) the shared PostgreSQL keychain is checked
            the same way, its tables too (rules, triggers, policies added outside secitem), and
            --expect-commitment detects a rollback of its schema to an older dump (docs/postgresql.md).
            """,
        options: [
            OptionSpec("expectCommitment", long: "expect-commitment", valueName: "value",
                       help: "Fail unless the file's commitment is exactly this value."),
        ]
    ) { (invocation: Invocation) throws(CommandError) in
        let result: (path: String, damaged: [String], commitment: String)
        do throws(SecItemError) {
            result = try FileMaintenance.verify(environment: invocation.effectiveEnvironment)
        } catch {
            throw CommandError(error, context: "cannot verify the keychain")
        }
        if !result.commitment.isEmpty { Console.write("\(result.path): commitment \(result.commitment)\n") }
        if let expected = invocation.arguments.value("expectCommitment"), expected != result.commitment {
            Console.write("\(result.path): the commitment is \(result.commitment.isEmpty ? "absent (format 1)" : result.commitment), "
                          + "not the expected \(expected): the keychain was rolled back or replaced\n")
            throw CommandError(.failure, "\(result.path) does not hold the expected commitment")
        }
        if result.damaged.isEmpty {
            Console.write("\(result.path): ok\n")
            return
        }
        Console.write("\(result.path): \(result.damaged.count) problems\n")
        for line in result.damaged { Console.write("  \(line)\n") }
        throw CommandError(.failure, "\(result.damaged.count) problems in \(result.path)")
    }

    static let upgrade = Verb(
        "upgrade", summary: "Upgrade a format-1 or format-2 file keychain to format 3 now (its first write would).",
        synopsis: "",
        discussion: """
            Re-encrypts every item under a new data key, each row's position bound into its box (format 3;
            a format-1 file's rows also move to the format-2 table), in one transaction: a crash leaves the
            old file whole. A file with damaged rows is not upgraded (see verify). Exits 0 when the file is
            format 3 afterwards.
            """,
        options: []
    ) { (invocation: Invocation) throws(CommandError) in
        do throws(SecItemError) {
            let result = try FileMaintenance.upgrade(environment: invocation.effectiveEnvironment)
            Console.write("\(result.path): \(result.upgraded ? "upgraded to format 3" : "already in the current format")\n")
        } catch {
            throw CommandError(error, context: "cannot upgrade the keychain")
        }
    }
}
