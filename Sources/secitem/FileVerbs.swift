import Foundation
import SecItem
import SecItemCore
import SecItemTools

/// rekey, verify, upgrade and lock: the sealed stores (the encrypted file, PostgreSQL). They act on
/// the backend --backend, SECITEM_BACKEND or the config file names, and on the file keychain
/// when none is named; a named backend without such a store (Secret Service, memory) is refused.
enum FileVerbs {
    static let all: [Verb] = [rekey, verify, acceptRestore, upgrade, lock]

    static let rekey = Verb(
        "rekey", summary: "Move the file or PostgreSQL keychain to a new passphrase, key file or key source, or rotate its data key.",
        synopsis: "(--new-passphrase | --new-key-file FILE | --new-key-source NAME) [--rewrap-only] | --rotate",
        discussion: """
            The file is opened with its current key, from the usual configuration (SECITEM_KEY_SOURCE,
            SECITEM_KEY_FILE, SECITEM_PASSPHRASE, the config file, or the generated key file). --new-passphrase
            reads the new passphrase from SECITEM_NEW_PASSPHRASE, else a prompt (asked twice), else standard
            input; --new-key-file takes a key file (0600, 32 bytes raw, hex or base64); --new-key-source NAME
            moves the store to any key source (key-file, passphrase, automatic, and those docs/key-sources.md
            adds), configured by its own settings as SECITEM_KEY_SOURCE=NAME would be (a passphrase and a key
            file still come as above). Each generates a new data key and re-encrypts every row in one
            transaction, so an old copy of the file plus the old secret opens nothing written afterwards;
            the new source must give its key back before anything is committed, and the store is opened again
            with it afterwards. Interrupted at any point (a crash, a kill), the store opens with the old key or
            the new one. --rewrap-only instead re-wraps the same data key (fast, but old backups plus the old
            secret still open new items). --rotate replaces the data key and keeps the passphrase or key file.
            On any failure the file is unchanged. Other processes must reopen with the new key; the old key
            leaves the session key cache. With SECITEM_BACKEND=postgresql (or --backend postgresql) the shared
            PostgreSQL keychain is rekeyed or rotated instead, in one transaction (--rewrap-only is refused
            there); other hosts reload the key on their next call (docs/postgresql.md).
            """,
        options: [
            OptionSpec("newPassphrase", long: "new-passphrase", .flag, help: "Protect the file with a new passphrase."),
            OptionSpec("newKeyFile", long: "new-key-file", valueName: "file", help: "Protect the file with this key file."),
            OptionSpec("newKeySource", long: "new-key-source", valueName: "name",
                       help: "Move the file to this key source (SECITEM_KEY_SOURCE's names)."),
            OptionSpec("rewrapOnly", long: "rewrap-only", .flag, help: "Keep the data key; only re-wrap it (see above)."),
            OptionSpec("rotate", long: "rotate", .flag, help: "Replace the data key and re-encrypt every item."),
        ]
    ) { (invocation: Invocation) throws(CommandError) in
        let args = invocation.arguments
        let named = args.value("newKeySource")
        let target: String? = named ?? (args.has("newPassphrase") ? "passphrase" : args.has("newKeyFile") ? "key-file" : nil)
        guard (target != nil) != args.has("rotate") else {
            throw CommandError(.usage, "give exactly one of --new-passphrase, --new-key-file, --new-key-source, --rotate")
        }
        guard !(args.has("newPassphrase") && args.has("newKeyFile")) else {
            throw CommandError(.usage, "give exactly one of --new-passphrase, --new-key-file, --new-key-source, --rotate")
        }
        guard !(args.has("rewrapOnly") && args.has("rotate")) else {
            throw CommandError(.usage, "--rewrap-only goes with --new-passphrase, --new-key-file or --new-key-source, not --rotate")
        }
        if let named {
            let names = FileMaintenance.keySourceNames
            guard names.contains(named) else {
                throw CommandError(.usage, "--new-key-source takes one of \(names.joined(separator: ", "))")
            }
            if args.has("newPassphrase") && named != "passphrase" {
                throw CommandError(.usage, "--new-passphrase goes with --new-key-source passphrase, not \(named)")
            }
            if args.has("newKeyFile") && named != "key-file" {
                throw CommandError(.usage, "--new-key-file goes with --new-key-source key-file, not \(named)")
            }
            if named == "key-file" && !args.has("newKeyFile") {
                throw CommandError(.usage, "--new-key-source key-file needs the new key file: --new-key-file FILE")
            }
        }
        let env = invocation.effectiveEnvironment
        // The backend keeps only the derived keys; the passphrases go once it is done.
        defer { SecretEnvironment.forget(SecItemConfiguration.Variable.passphrase) }
        do throws(SecItemError) {
            guard let target else {
                let path = try FileMaintenance.rotateDataKey(environment: env)
                Console.error("rotated the data key of \(path); every item re-encrypted and verified\n")
                return
            }
            // The new source is what SECITEM_KEY_SOURCE=target selects, with a new passphrase
            // or key file given here in place of the current one.
            var code = SecItemConfiguration.Settings(keySource: target)
            if target == "passphrase" {
                if let value = SecretEnvironment.consume("SECITEM_NEW_PASSPHRASE"), !value.isEmpty {
                    code.passphrase = value
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
                    code.passphrase = secret
                }
            }
            code.keyFile = args.value("newKeyFile")
            // The PostgreSQL backend's own key file names the current key, not the new one.
            var newEnvironment = env
            newEnvironment["SECITEM_POSTGRESQL_KEY_FILE"] = nil
            let newKey = FileMaintenance.NewKey.configured(SecItemConfiguration.resolve(code: code, environment: newEnvironment))
            let rewrapOnly = args.has("rewrapOnly")
            let path = try FileMaintenance.rekey(environment: env, to: newKey, rewrapOnly: rewrapOnly)
            let what = target == "passphrase" ? "passphrase" : target == "key-file" ? "key file" : "key source \(target)"
            let setting = named.map { " (\(SecItemConfiguration.Variable.keySource)=\($0), or key-source = \($0) in the config file)" } ?? ""
            if rewrapOnly {
                Console.error(
                    "secitem: warning: --rewrap-only kept the data key: an old copy of \(path) plus the old \(what) "
                        + "still opens every item, including ones added from now on\n")
                Console.error("re-wrapped the data key of \(path); open it with the new \(what) from now on\(setting)\n")
            } else {
                Console.error(
                    "rekeyed \(path): new data key, every item re-encrypted; open it with the new \(what) from now on\(setting)\n")
            }
        } catch {
            throw CommandError(error, context: "cannot rekey the keychain")
        }
    }

    static let lock = Verb(
        "lock", summary: "Drop the passphrase-derived keys the session key cache holds, so the next call runs scrypt.",
        synopsis: "",
        discussion: """
            A store protected by a passphrase keeps the key derived from it in the kernel's user keyring for
            SECITEM_KEY_CACHE_TIMEOUT seconds (default 300; 0 turns the cache off), so that the next processes
            skip scrypt (docs/key-sources.md). lock invalidates every such key of your user, for every store,
            at once: from then on every process needs the passphrase again and pays scrypt once. Prints how many
            keys it dropped. It does not lock a Secret Service collection.
            """,
        options: []
    ) { (invocation: Invocation) throws(CommandError) in
        do throws(SecItemError) {
            let dropped = try FileMaintenance.lock()
            Console.error("dropped \(dropped) cached key\(dropped == 1 ? "" : "s") from the session key cache\n")
        } catch {
            throw CommandError(error, context: "cannot drop the session key cache")
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
            It also reports the rollback evidence: a store older than (or diverging from) a state this
            host saw before is listed as a problem (exit 1); secitem accept-restore accepts it.
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

    static let acceptRestore = Verb(
        "accept-restore", summary: "Accept the file or PostgreSQL keychain as it is now after a deliberate restore.",
        synopsis: "[--reason TEXT]",
        discussion: """
            Each host keeps a high-water mark of every sealed store it uses (the newest commitment it saw, in
            $XDG_STATE_HOME/secitem/high-water), and refuses a store put back from an older copy with status
            -26275 (errSecDecode) and a message saying what it saw and what it expected. After a deliberate
            restore, run this on every host that refuses it: the store's current commitment becomes the
            host's mark. Where the store's key source keeps its own copy of the mark (a TPM NV counter for
            the tpm2 key source, an item in the login keyring for secret-service), that copy is reset too.
            Prints the mark before and after; logs a line (time, user, store, both marks, --reason) to
            stderr and to accepted.log in the state directory. Changes nothing in the store.
            """,
        options: [
            OptionSpec("reason", long: "reason", valueName: "text", help: "Why, for the log (no secrets)."),
        ]
    ) { (invocation: Invocation) throws(CommandError) in
        do throws(SecItemError) {
            let reason = invocation.arguments.value("reason") ?? ""
            let result = try FileMaintenance.acceptRestore(environment: invocation.effectiveEnvironment, reason: reason)
            Console.write("\(result.path): high-water mark \(result.before ?? "none") -> \(result.now)\n")
            Console.error(
                "secitem: accepted \(result.path) as restored: this host's high-water mark is now \(result.now) "
                    + "(was \(result.before ?? "none"))\(reason.isEmpty ? "" : "; reason: " + reason)\n")
        } catch {
            throw CommandError(error, context: "cannot accept the restore")
        }
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
