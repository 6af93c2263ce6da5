import CSecItemLibsecret
import Foundation
import SecItemCore
import SecItemSQLite
import SecItemSealedStore
import SecItemSecretService
import CSecItemSQLite3

/// Opening a file keychain per key source against that source's own floor, measured in
/// the same run: for `secret-service`, one minimal D-Bus secret fetch of the key item
/// (libsecret's `secret_password_lookupv_binary_sync` on its cached service); for
/// `portal`, one `RetrieveSecret` alone. The open also opens a Secret Service session
/// (or connects to the portal), opens SQLite, reads the header and unwraps the data key.
///
/// Runs under `scripts/with-secret-service` (which starts gnome-keyring and
/// xdg-desktop-portal); otherwise says why each part was skipped.
enum KeySourceBenchmarks {
    static func group(_ options: Options, _ results: inout [Measurement], _ extra: inout [[String: Any]]) {
        let name = "keysource/open"
        guard options.wants(name) || options.wants("keysource") else { return }
        let env = ProcessInfo.processInfo.environment
        guard let bus = env["DBUS_SESSION_BUS_ADDRESS"], !bus.isEmpty, SecretServiceBackend.probe(timeout: .seconds(5)).isUnlocked else {
            print("\(name): skipped: no usable Secret Service on the session bus (run under scripts/with-secret-service)")
            return
        }
        announce(name)
        let samples = options.quick ? 10 : 30
        let dir = NSTemporaryDirectory() + "secitem-bench-keysource-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            results.append(try secretService(dir: dir, samples: samples))
            if env["SECITEM_TEST_PORTAL"] == "1" {
                results.append(try portal(dir: dir, samples: samples))
            } else {
                print("\(name): portal skipped: no xdg-desktop-portal (SECITEM_TEST_PORTAL=1 comes from scripts/with-secret-service)")
            }
        } catch {
            fail(name, error)
        }
        for r in results where r.backend.hasPrefix("file+") && r.op == "open" {
            print(String(format: "%@: %@ open %@ vs its floor (%@) %@: %.2f×", name, r.backend, formatNanoseconds(r.median),
                         r.baseline ?? "", formatNanoseconds(r.baselineMedian ?? 0), r.ratio ?? 0))
        }
    }

    /// A store keyed by `source`, created once; returns its configuration.
    private static func create(_ path: String, _ source: SealedStoreKeySource) throws -> SQLiteBackend.Configuration {
        let configuration = SQLiteBackend.Configuration(path: path, keySource: source)
        try SQLiteBackend(configuration: configuration).close()
        return configuration
    }

    private static func secretService(dir: String, samples: Int) throws -> Measurement {
        let configuration = try create(dir + "/secret-service.db", .secretServiceItem())
        let storeID = try storeIDOf(configuration.path)
        let table = csecitem_strhash_new()!
        defer { g_hash_table_unref(table) }
        csecitem_strhash_insert(table, "xdg:schema", "org.secitem.KeychainKey")
        csecitem_strhash_insert(table, "store", storeID)
        defer { _ = secret_password_clearv_sync(nil, table, nil, nil) }
        let open = try sample(count: samples, warmup: 2) { _ in
            let backend = try SQLiteBackend(configuration: configuration)
            backend.close()
            return 1
        }
        let floor = try sample(count: samples, warmup: 2) { _ in
            var error: UnsafeMutablePointer<GError>?
            guard let value = secret_password_lookupv_binary_sync(nil, table, nil, &error) else {
                throw BenchmarkError("the key item was not found: \(error.map { String(cString: $0.pointee.message) } ?? "")")
            }
            var length: gsize = 0
            _ = secret_value_get(value, &length)
            secret_value_unref(UnsafeMutableRawPointer(value))
            return Int(length)
        }
        return Measurement(
            backend: "file+secret-service", op: "open", items: 0, samples: open, baseline: "1 secret fetch (libsecret)",
            baselineSamples: floor)
    }

    private static func portal(dir: String, samples: Int) throws -> Measurement {
        let info = dir + "/flatpak-info"
        try Data("[Application]\nname=org.secitem.Benchmark\n".utf8).write(to: URL(fileURLWithPath: info))
        let configuration = try create(dir + "/portal.db", try .flatpakPortal(environment: ["SECITEM_FLATPAK_INFO": info]))
        let open = try sample(count: samples, warmup: 2) { _ in
            let backend = try SQLiteBackend(configuration: configuration)
            backend.close()
            return 1
        }
        var timedOut: gboolean = 0
        var error: UnsafeMutablePointer<GError>?
        guard let bus = csecitem_connect(5_000, &timedOut, &error) else { throw BenchmarkError("cannot connect to the bus") }
        defer { g_object_unref(UnsafeMutableRawPointer(bus)) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let floor = try sample(count: samples, warmup: 2) { _ in
            var length: gsize = 0
            var response: guint32 = 0
            let result = buffer.withUnsafeMutableBufferPointer {
                csecitem_portal_retrieve_secret(bus, 20_000, $0.baseAddress, 1024, &length, &response, nil)
            }
            guard result == CSECITEM_PORTAL_OK else { throw BenchmarkError("RetrieveSecret failed (\(result.rawValue))") }
            return Int(length)
        }
        return Measurement(
            backend: "file+portal", op: "open", items: 0, samples: open, baseline: "1 RetrieveSecret", baselineSamples: floor)
    }

    /// The `kek_store` row of a file keychain (the key item's `store` attribute).
    private static func storeIDOf(_ path: String) throws -> String {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { throw BenchmarkError("cannot open \(path)") }
        defer { sqlite3_close(db) }
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'kek_store'", -1, &stmt, nil) == SQLITE_OK else {
            throw BenchmarkError("cannot read \(path)")
        }
        defer { sqlite3_finalize(stmt) }
        guard sqlite3_step(stmt) == SQLITE_ROW, let text = sqlite3_column_text(stmt, 0) else { throw BenchmarkError("no kek_store in \(path)") }
        return String(cString: text)
    }
}
