import Foundation
import SecItem
import SecItemCore

/// set-access-group: move items from one access group to another.
enum GroupVerbs {
    static let setAccessGroup = Verb(
        "set-access-group", summary: "Move matching items to another access group.",
        synopsis: "--to GROUP [-G GROUP] [--class class] [-a account] [-s service] [-l label]",
        discussion: """
            Every item matching the selection (in every group, or only in the group -G names) is moved to
            the group --to names: an Update of kSecAttrAccessGroup as String, so each item keeps its data,
            attributes, creation date and persistent reference. For example, items an earlier version
            stored in the group 'default' become one program's own with
            `secitem set-access-group -G default --to com.example.app`.
            All or nothing: if any item's primary key is already taken in the target group, nothing
            is moved (status 45). Nothing matching is status 44. Prints how many items moved from which group.
            """,
        options: [
            OptionSpec("to", long: "to", valueName: "group", help: "The group to move the items to."),
            OptionSpec("group", short: "G", long: "access-group", valueName: "group", help: "Only items in this group (default: every group)."),
            OptionSpec("class", long: "class", valueName: "class", help: "Only this class: genp, inet, cert or keys (default: all)."),
            OptionSpec("account", short: "a", valueName: "account", help: "Only items with this account."),
            OptionSpec("service", short: "s", valueName: "name", help: "Only generic passwords of this service and internet passwords of this server."),
            OptionSpec("label", short: "l", valueName: "label", help: "Only items with this label."),
        ]
    ) { (invocation: Invocation) throws(CommandError) in
        let args = invocation.arguments
        guard let target = args.value("to"), !target.isEmpty else { throw CommandError(.usage, "--to GROUP is required") }
        var classes = [kSecClassGenericPassword as String, kSecClassInternetPassword as String, kSecClassCertificate as String, kSecClassKey as String]
        if let name = args.value("class") {
            guard classes.contains(name) else {
                throw CommandError(.usage, "--class must be genp, inet, cert or keys, not '\(name)'")
            }
            classes = [name]
        }
        let client = try invocation.client()

        // What moves: each class's matching items, by group (the target's own are left alone).
        var batches: [(query: [String: Any], group: String, refs: [Data])] = []
        for itemClass in classes {
            var query: [String: Any] = [kSecClass as String: itemClass, kSecAttrSynchronizable as String: kSecAttrSynchronizableAny as String]
            if let account = args.value("account") { query[kSecAttrAccount as String] = account }
            if let label = args.value("label") { query[kSecAttrLabel as String] = label }
            if let name = args.value("service") {
                if itemClass == kSecClassGenericPassword as String {
                    query[kSecAttrService as String] = name
                } else if itemClass == kSecClassInternetPassword as String {
                    query[kSecAttrServer as String] = name
                } else {
                    continue
                }
            }
            if let group = args.value("group") { query[kSecAttrAccessGroup as String] = group }
            // A class without the attribute asked for has no matching item.
            let keys = ItemClass(rawValue: itemClass)?.attributeKeys ?? []
            guard query.keys.allSatisfy({ $0 == kSecClass as String || $0 == kSecAttrSynchronizable as String || $0 == kSecAttrAccessGroup as String || keys.contains($0) })
            else { continue }
            var search = query
            search[kSecMatchLimit as String] = kSecMatchLimitAll as String
            search[kSecReturnAttributes as String] = true
            search[kSecReturnPersistentRef as String] = true
            let found: [[String: Any]]
            do throws(SecItemError) {
                found = try client.copyMatchingItems(search) as? [[String: Any]] ?? []
            } catch SecItemError.itemNotFound {
                continue
            } catch {
                throw CommandError(error, context: "cannot search the \(itemClass) items")
            }
            var byGroup: [String: [Data]] = [:]
            for item in found {
                guard let group = item[kSecAttrAccessGroup as String] as? String, group != target,
                    let ref = item[kSecValuePersistentRef as String] as? Data
                else { continue }
                byGroup[group, default: []].append(ref)
            }
            for (group, refs) in byGroup.sorted(by: { $0.key < $1.key }) {
                var inGroup = query
                inGroup[kSecAttrAccessGroup as String] = group
                batches.append((inGroup, group, refs))
            }
        }
        guard !batches.isEmpty else {
            throw CommandError(.notFound, "no matching item outside '\(target)'; nothing moved")
        }

        // Each batch is one atomic update; a failure part-way moves the earlier batches back.
        var moved: [(group: String, refs: [Data])] = []
        for batch in batches {
            do throws(SecItemError) {
                try client.updateItems(batch.query, [kSecAttrAccessGroup as String: target])
                moved.append((batch.group, batch.refs))
            } catch {
                var restored = 0
                for (group, refs) in moved.reversed() {
                    for ref in refs {
                        if (try? client.updateItems([kSecValuePersistentRef as String: ref], [kSecAttrAccessGroup as String: group])) != nil {
                            restored += 1
                        }
                    }
                }
                let total = moved.reduce(0) { $0 + $1.refs.count }
                let undo = total == restored ? "nothing moved" : "\(total - restored) of \(total) items moved earlier could not be moved back"
                throw CommandError(error, context: "cannot move the items of '\(batch.group)' to '\(target)'; \(undo)")
            }
        }
        var counts: [String: Int] = [:]
        for (group, refs) in moved { counts[group, default: 0] += refs.count }
        let from = counts.sorted { $0.key < $1.key }.map { "\($0.value) from '\($0.key)'" }.joined(separator: ", ")
        let total = counts.values.reduce(0, +)
        Console.error("moved \(total) item\(total == 1 ? "" : "s") to '\(target)' (\(from))\n")
    }
}
