import CSecItemLibsecret
import Foundation
import SecItem
import SecItemCore
import SecItemSecretService

/// The Secret Service backend against raw libsecret calls on the same daemon,
/// doing the same lookups and stores on the same items.
///
/// Runs only when `DBUS_SESSION_BUS_ADDRESS` is set and a provider answers (run
/// the benchmark under `scripts/with-secret-service`); otherwise says why it was
/// skipped. Items live in a fresh namespace of the default collection. The
/// daemon rewrites its keyring file on every write, so writes cost tens of
/// milliseconds and grow with the keyring: few samples here, and the growth is
/// reported (first and last 50 adds while filling).
enum SecretServiceBenchmarks {
    static func group(_ options: Options, _ results: inout [Measurement], _ extra: inout [[String: Any]]) {
        let items = options.quick ? 100 : 1_000
        let name = "secret-service/\(items)"
        guard options.wants(name) else { return }
        guard let bus = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"], !bus.isEmpty else {
            print("\(name): skipped: DBUS_SESSION_BUS_ADDRESS is not set (run under scripts/with-secret-service)")
            return
        }
        let probe = SecretServiceBackend.probe(timeout: .seconds(5))
        guard probe.isUnlocked else {
            print("\(name): skipped: no usable Secret Service on the session bus (\(probe))")
            return
        }
        announce(name)
        do {
            let (measured, growth) = try run(items: items, samples: options.quick ? 10 : 20)
            results += measured
            extra.append(["backend": "secret-service", "op": "add-while-filling", "items": items,
                          "first_50_median_ns": growth.first, "last_50_median_ns": growth.last])
            print(String(format: "%@: the daemon's write cost grows with the keyring: add median %.1f ms for the first 50 items, %.1f ms for the last 50",
                         name, Double(growth.first) / 1e6, Double(growth.last) / 1e6))
        } catch {
            fail(name, error)
        }
    }

    static func run(items: Int, samples: Int) throws -> ([Measurement], (first: UInt64, last: UInt64)) {
        let namespace = "secitem-bench-\(UUID().uuidString)"
        let backend = try SecretServiceBackend(configuration: .init(namespace: namespace))
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["bench"]))
        var workload = Workload(client: client, items: items, samples: samples, warmup: 2)
        // Filled through the backend (no bulk path exists: the daemon writes its file per item), timed.
        var fill: [UInt64] = []
        for i in 0..<items {
            let start = nowNanoseconds()
            try client.addItem(Workload.addQuery(i, items: items))
            fill.append(nowNanoseconds() - start)
        }
        let growth = (Measurement.percentile(Array(fill.prefix(50)), 0.5), Measurement.percentile(Array(fill.suffix(50)), 0.5))
        defer { _ = try? client.deleteItems([kSecClass as String: kSecClassGenericPassword]) }

        let raw = try RawSecretService(namespace: namespace)
        guard try raw.lookup(account: Workload.account(items - 1)) == 32 else {
            throw BenchmarkError("raw libsecret does not find the items the backend stored")
        }
        let baselines = Baselines.direct("libsecret", raw, workload, newPrefix: "raw-new-")
        workload.warmup = 2
        var measured = try interleaved(workload, rounds: max(1, samples / 10), backend: "secret-service", baselines: baselines)
        // An update of the data moves kSecAttrModificationDate too: the same state
        // change done raw is two writes, and the Secret Service has no call doing both.
        let filter = Workload.opFilter
        if filter.map({ "update".contains($0) }) ?? true {
            Workload.opFilter = "update"
            defer { Workload.opFilter = filter }
            var sameChange = Baselines()
            sameChange.update = .init(name: "libsecret, secret+mdat") { k in
                try raw.updateWithModificationDate(
                    account: Workload.account(workload.existing(k)), data: [UInt8](Workload.data(k &+ 2)))
            }
            measured += try interleaved(workload, rounds: max(1, samples / 10), backend: "secret-service", baselines: sameChange)
                .map { var m = $0; m.op = "update-2-writes"; return m }
        }
        return (measured, growth)
    }
}

/// libsecret called directly (the `…v_sync` password API and
/// `secret_service_search_sync`), on the items the backend stored, with the same
/// attribute sets: what any Secret Service client has to pay.
final class RawSecretService: RawStore {
    private let service: OpaquePointer
    private let namespace: String
    private let template: [String: String]

    init(namespace: String) throws {
        self.namespace = namespace
        var error: UnsafeMutablePointer<GError>?
        var timedOut: gboolean = 0
        guard csecitem_secret_load(nil, 0) != 0 else { throw BenchmarkError("libsecret cannot be loaded") }
        guard let bus = csecitem_connect(5_000, &timedOut, &error) else { throw Self.error(error, "connecting") }
        defer { g_object_unref(UnsafeMutableRawPointer(bus)) }
        guard let service = csecitem_service_open(bus, nil, 5_000, nil, nil, &timedOut, &error) else {
            throw Self.error(error, "opening the service")
        }
        self.service = service
        // The attribute set of one of the backend's items: new items get the same shape.
        var first: [String: String]?
        try Self.search(service, ["secitem-namespace": namespace, "account": Workload.account(0)]) {
            first = $0
        }
        guard let first else { throw BenchmarkError("no items in namespace") }
        template = first
    }

    deinit { g_object_unref(UnsafeMutableRawPointer(service)) }

    /// The search the backend makes for a lookup by service and account.
    private func lookupAttributes(_ account: String) -> [String: String] {
        [
            "xdg:schema": template["xdg:schema"] ?? "", "secitem-namespace": namespace, "class": "genp",
            "access-group": template["access-group"] ?? "", "synchronizable": template["synchronizable"] ?? "",
            "service": Workload.service, "account": account,
        ]
    }

    func lookup(account: String) throws -> Int {
        let table = Self.table(lookupAttributes(account))
        defer { g_hash_table_unref(table) }
        var error: UnsafeMutablePointer<GError>?
        guard let value = secret_password_lookupv_binary_sync(nil, table, nil, &error) else {
            if error != nil { throw Self.error(error, "looking up") }
            return -1
        }
        var length: gsize = 0
        _ = secret_value_get(value, &length)
        secret_value_unref(UnsafeMutableRawPointer(value))
        return Int(length)
    }

    /// A new item with the backend's attribute set (new UUID, primary key, account, label).
    func add(account: String, label: String, data: [UInt8]) throws {
        var attributes = template
        attributes["uuid"] = UUID().uuidString
        attributes["primary-key"] = UUID().uuidString + UUID().uuidString
        attributes["account"] = account
        attributes["username"] = account
        attributes["label"] = label
        try store(attributes, label: label, data: data)
    }

    /// Finds the item (as the backend's lookup does) and sets its secret: one daemon write.
    func update(account: String, data: [UInt8]) throws -> Int {
        try update(account: account, data: data, newModificationDate: false)
    }

    /// ``update(account:data:)``, then the item's attributes with a new
    /// `modification-date`: the state change a SecItemUpdate of the data makes
    /// (kSecAttrModificationDate advances), two daemon writes.
    func updateWithModificationDate(account: String, data: [UInt8]) throws -> Int {
        try update(account: account, data: data, newModificationDate: true)
    }

    private func update(account: String, data: [UInt8], newModificationDate: Bool) throws -> Int {
        let table = Self.table(lookupAttributes(account))
        defer { g_hash_table_unref(table) }
        var error: UnsafeMutablePointer<GError>?
        let list = secret_service_search_sync(service, nil, table, SECRET_SEARCH_NONE, nil, &error)
        if error != nil { throw Self.error(error, "searching") }
        defer { g_list_free_full(list) { g_object_unref($0) } }
        guard let item = list?.pointee.data.map(OpaquePointer.init) else { return 0 }
        let value = csecitem_value_new(data, gsize(data.count))
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        guard secret_item_set_secret_sync(item, value, nil, &error) != 0 else { throw Self.error(error, "setting a secret") }
        guard newModificationDate, let current = secret_item_get_attributes(item) else { return 1 }
        var attributes = Self.dictionary(current)
        g_hash_table_unref(current)
        attributes["modification-date"] = "\(Date().timeIntervalSinceReferenceDate)"
        let changed = Self.table(attributes)
        defer { g_hash_table_unref(changed) }
        guard secret_item_set_attributes_sync(item, nil, changed, nil, &error) != 0 else {
            throw Self.error(error, "setting attributes")
        }
        return 1
    }

    func delete(account: String) throws -> Int {
        let table = Self.table(["xdg:schema": template["xdg:schema"] ?? "", "secitem-namespace": namespace, "account": account])
        defer { g_hash_table_unref(table) }
        var error: UnsafeMutablePointer<GError>?
        let removed = secret_password_clearv_sync(nil, table, nil, &error)
        if error != nil { throw Self.error(error, "deleting") }
        return removed != 0 ? 1 : 0
    }

    /// Every item with `label`, with its attributes: the number of attributes read.
    func count(label: String) throws -> Int {
        var attributes = lookupAttributes("")
        attributes["account"] = nil
        attributes["label"] = label
        var count = 0
        try Self.search(service, attributes) { count += $0.count }
        return count
    }

    private func store(_ attributes: [String: String], label: String, data: [UInt8]) throws {
        let table = Self.table(attributes)
        defer { g_hash_table_unref(table) }
        let value = csecitem_value_new(data, gsize(data.count))
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        var error: UnsafeMutablePointer<GError>?
        guard secret_password_storev_binary_sync(nil, table, "default", label, value, nil, &error) != 0 else {
            throw Self.error(error, "storing")
        }
    }

    private static func search(_ service: OpaquePointer, _ attributes: [String: String], _ each: ([String: String]) -> Void) throws {
        let table = table(attributes)
        defer { g_hash_table_unref(table) }
        var error: UnsafeMutablePointer<GError>?
        let list = secret_service_search_sync(
            service, nil, table, SECRET_SEARCH_ALL, nil, &error)
        if error != nil { throw Self.error(error, "searching") }
        var node = list
        while let n = node {
            if let item = n.pointee.data, let found = secret_item_get_attributes(OpaquePointer(item)) {
                each(dictionary(found))
                g_hash_table_unref(found)
            }
            node = n.pointee.next
        }
        g_list_free_full(list) { g_object_unref($0) }
    }

    private static func table(_ attributes: [String: String]) -> OpaquePointer {
        let table = csecitem_strhash_new()!
        for (k, v) in attributes { csecitem_strhash_insert(table, k, v) }
        return table
    }

    private static func dictionary(_ table: OpaquePointer) -> [String: String] {
        var out: [String: String] = [:]
        var iter = GHashTableIter()
        var key: gpointer?, value: gpointer?
        g_hash_table_iter_init(&iter, table)
        while g_hash_table_iter_next(&iter, &key, &value) != 0 {
            if let key, let value {
                out[String(cString: key.assumingMemoryBound(to: CChar.self))] = String(cString: value.assumingMemoryBound(to: CChar.self))
            }
        }
        return out
    }

    private static func error(_ error: UnsafeMutablePointer<GError>?, _ what: String) -> BenchmarkError {
        defer { if let error { g_error_free(error) } }
        let message = error.map { String(cString: $0.pointee.message) } ?? "failed without a GError"
        return BenchmarkError("libsecret \(what): \(message)")
    }
}
