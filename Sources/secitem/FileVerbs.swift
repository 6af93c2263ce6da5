import Foundation
import SecItem
import SecItemTools

/// rekey and verify for the file backend.
enum FileVerbs {
    static let all: [Verb] = [rekey, verify]

    static let rekey = Verb(
        "rekey", summary: "Change the file keychain's passphrase or key file, or rotate its data key.",
        synopsis: "(--new-passphrase | --new-key-file FILE | --rotate)",
        discussion: """
            The file is opened with its current key, from the usual configuration (SECITEM_KEY_FILE,
            SECITEM_PASSPHRASE, the config file, or the generated key file). --new-passphrase reads the
            new passphrase from SECITEM_NEW_PASSPHRASE, else a prompt (asked twice), else standard input;
            --new-key-file takes a key file (0600, 32 bytes raw, hex or base64). Either re-wraps the data
            key in one transaction. --rotate replaces the data key and re-encrypts every row in one
            transaction; on any failure the file is unchanged. Other processes must reopen with the new key.
            """,
        options: [
            OptionSpec("newPassphrase", long: "new-passphrase", .flag, help: "Protect the file with a new passphrase."),
            OptionSpec("newKeyFile", long: "new-key-file", valueName: "file", help: "Protect the file with this key file."),
            OptionSpec("rotate", long: "rotate", .flag, help: "Replace the data key and re-encrypt every item."),
        ]
    ) { (session: Session) throws(CommandError) in
        let args = session.arguments
        let chosen = [args.has("newPassphrase"), args.has("newKeyFile"), args.has("rotate")].filter { $0 }.count
        guard chosen == 1 else { throw CommandError(.usage, "give exactly one of --new-passphrase, --new-key-file, --rotate") }
        let env = session.environment
        do throws(SecItemError) {
            if args.has("rotate") {
                let path = try FileMaintenance.rotateDataKey(environment: env)
                Console.error("rotated the data key of \(path); every item re-encrypted and verified\n")
                return
            }
            let newKey: FileMaintenance.NewKey
            if let keyFile = args.value("newKeyFile") {
                newKey = .keyFile(keyFile)
            } else if let value = env["SECITEM_NEW_PASSPHRASE"], !value.isEmpty {
                newKey = .passphrase(value)
            } else {
                let data: Data
                do throws(CommandError) {
                    data = try Console.readSecret(prompt: "new passphrase: ", confirm: "retype new passphrase: ")
                } catch {
                    throw SecItemError(errSecParam, error.message)
                }
                guard !data.isEmpty, let text = String(data: data, encoding: .utf8) else {
                    throw SecItemError(errSecParam, "the new passphrase is empty")
                }
                newKey = .passphrase(text)
            }
            let path = try FileMaintenance.rekey(environment: env, to: newKey)
            Console.error("rekeyed \(path); open it with the new \(args.has("newKeyFile") ? "key file" : "passphrase") from now on\n")
        } catch {
            throw CommandError(error, context: "cannot rekey the file keychain")
        }
    }

    static let verify = Verb(
        "verify", summary: "Check the file keychain and list damaged rows.",
        synopsis: "",
        discussion: "Exits 0 when every row is intact, 1 when some are damaged (listed on stdout, without contents).",
        options: []
    ) { (session: Session) throws(CommandError) in
        let result: (path: String, damaged: [String])
        do throws(SecItemError) {
            result = try FileMaintenance.verify(environment: session.environment)
        } catch {
            throw CommandError(error, context: "cannot verify the file keychain")
        }
        if result.damaged.isEmpty {
            Console.write("\(result.path): ok\n")
            return
        }
        Console.write("\(result.path): \(result.damaged.count) damaged rows\n")
        for line in result.damaged { Console.write("  \(line)\n") }
        throw CommandError(.failure, "\(result.damaged.count) damaged rows in \(result.path)")
    }
}
