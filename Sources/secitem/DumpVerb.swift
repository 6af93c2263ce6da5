import Foundation
import SecItem
import SecItemTools

/// dump-keychain: every item's attributes; the secrets only with -d and a confirmation.
enum DumpVerb {
    static let verb = Verb(
        "dump-keychain", summary: "List every item's attributes (and, with -d, its data).",
        synopsis: "[-G group] [-d] [--yes]",
        discussion: """
            Items of every class in every access group (only the group -G names, when given) are listed,
            oldest first; each item's group is its agrp (kSecAttrAccessGroup) attribute. -d also prints each item's data; it asks for confirmation on standard error and reads
            the answer from standard input (y or yes), unless --yes is given.
            """,
        options: [
            PasswordVerbs.accessGroupOption,
            OptionSpec("data", short: "d", .flag, help: "Also print each item's data (asks for confirmation)."),
            OptionSpec("yes", long: "yes", .flag, help: "Do not ask for confirmation before printing data."),
            TransferVerbs.skipDamagedOption,
        ]
    ) { (invocation: Invocation) throws(CommandError) in
        let args = invocation.arguments
        let withData = args.has("data")
        if withData && !args.has("yes") {
            guard Console.confirm("Print the secrets of every item to standard output?") else {
                throw CommandError(.failure, "not confirmed; nothing printed")
            }
        }
        let client = try invocation.client()
        let damaged: [String]
        do throws(SecItemError) {
            damaged = try KeychainTransfer.damagedRows(in: client.backend)
        } catch {
            throw CommandError(error, context: "cannot check the keychain for damaged rows")
        }
        for itemClass in [kSecClassGenericPassword, kSecClassInternetPassword, kSecClassCertificate, kSecClassKey] {
            var query: [String: Any] = [
                kSecClass as String: itemClass, kSecMatchLimit as String: kSecMatchLimitAll,
                kSecAttrSynchronizable as String: kSecAttrSynchronizableAny, kSecReturnAttributes as String: true,
            ]
            if withData { query[kSecReturnData as String] = true }
            if let group = args.value("group") { query[kSecAttrAccessGroup as String] = group }
            let items: [[String: Any]]
            do throws(SecItemError) {
                items = try client.copyMatchingItems(query) as? [[String: Any]] ?? []
            } catch SecItemError.itemNotFound {
                continue
            } catch SecItemError.decode where !damaged.isEmpty {
                continue  // only damaged candidates in this class: reported below
            } catch {
                throw CommandError(error, context: "cannot list the \(itemClass) items")
            }
            for item in items {
                Console.write(ItemFormat.describe(item, itemClass: itemClass as String, backend: "\(client.backend.kind)"))
                if withData {
                    Console.write("data:\n\(ItemFormat.quoted(item[kSecValueData as String] as? Data ?? Data()))\n")
                }
            }
        }
        // After the readable items, so they are all printed; then the damage, and a failing status.
        if !damaged.isEmpty {
            Console.error("secitem dump-keychain: \(damaged.count) problems that searches skip (damaged or missing rows):\n")
            for line in damaged { Console.error("  \(line)\n") }
            if !args.has("skipDamaged") {
                throw CommandError(.failure, "items behind \(damaged.count) problems are missing from the listing (--skip-damaged exits 0 anyway)")
            }
        }
    }
}
