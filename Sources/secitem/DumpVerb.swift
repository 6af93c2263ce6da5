import Foundation
import SecItem

/// dump-keychain: every item's attributes; the secrets only with -d and a confirmation.
enum DumpVerb {
    static let verb = Verb(
        "dump-keychain", summary: "List every item's attributes (and, with -d, its data).",
        synopsis: "[-d] [--yes]",
        discussion: """
            Items of every class in the access groups this process is entitled to are listed, oldest
            first. -d also prints each item's data; it asks for confirmation on standard error and reads
            the answer from standard input (y or yes), unless --yes is given.
            """,
        options: [
            OptionSpec("data", short: "d", .flag, help: "Also print each item's data (asks for confirmation)."),
            OptionSpec("yes", long: "yes", .flag, help: "Do not ask for confirmation before printing data."),
        ]
    ) { (session: Session) throws(CommandError) in
        let args = session.arguments
        let withData = args.has("data")
        if withData && !args.has("yes") {
            guard Console.confirm("Print the secrets of every item to standard output?") else {
                throw CommandError(.failure, "not confirmed; nothing printed")
            }
        }
        let client = try session.client()
        for itemClass in [kSecClassGenericPassword, kSecClassInternetPassword, kSecClassCertificate, kSecClassKey] {
            var query: [String: Any] = [
                kSecClass: itemClass, kSecMatchLimit: kSecMatchLimitAll,
                kSecAttrSynchronizable: kSecAttrSynchronizableAny, kSecReturnAttributes: true,
            ]
            if withData { query[kSecReturnData] = true }
            let items: [[String: Any]]
            do throws(SecItemError) {
                items = try client.copyMatchingItems(query) as? [[String: Any]] ?? []
            } catch SecItemError.itemNotFound {
                continue
            } catch {
                throw CommandError(error, context: "cannot list the \(itemClass) items")
            }
            for item in items {
                Console.write(ItemFormat.describe(item, itemClass: itemClass, backend: client.backend.name))
                if withData {
                    Console.write("data:\n\(ItemFormat.quoted(item[kSecValueData] as? Data ?? Data()))\n")
                }
            }
        }
    }
}
