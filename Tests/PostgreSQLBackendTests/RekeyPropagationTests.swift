import Foundation
import Glibc
import SecItemCore
import SecItemPostgreSQL
import SecItemSealedStore
import SecItemTestSupport
import Testing

/// A rekey on one host while others read and write (docs/postgresql.md, "Transactions":
/// the propagation bound): every host goes on without reopening, none reads or writes
/// with the old key after the rekey committed.
@Suite("PostgreSQL rekey propagation")
struct RekeyPropagationTests {
    static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    @Test("4 processes reading and writing while another host rekeys: no error, every value right, each host on the new key from its first call after the COMMIT; nothing under the old key")
    func rekeyUnderLoad() throws {
        _ = try TestServer.directory()
        let keys = try KeyDirectory()
        let schema = freshSchema("rekeyload")
        let backend = try PostgreSQLBackend(configuration: .init(keySource: .keyFile(keys.keyFile), schema: schema))
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["fleet"]))
        let shared = 20
        for k in 0..<shared {
            try client.addItem(["class": "genp", "svce": "fleet", "acct": "shared-\(k)", "v_Data": Data("shared-value-\(k)".utf8)])
        }
        let seed = UInt64.random(in: 1...UInt64.max / 2)
        print("RekeyPropagationTests.rekeyUnderLoad: seed \(seed)")
        let stop = keys.path + "/stop"
        let hosts = try (0..<4).map { i in
            try helper(["mixed", schema, "h\(i)", stop, "\(shared)", "\(seed &+ UInt64(i))"], keyFile: keys.keyFile)
        }
        defer { _ = FileManager.default.createFile(atPath: stop, contents: nil) }
        func opsDone() -> Int { hosts.map { $0.lines.filter { $0.hasPrefix("op ") }.count }.min() ?? 0 }
        let warm = ContinuousClock.now + .seconds(20)
        while opsDone() < 30, ContinuousClock.now < warm { usleep(10_000) }

        // The operator's procedure: the new key file on every host (they keep running on
        // the key they hold), then the rekey from one.
        let oldKey = keys.path + "/old.key"
        try FileManager.default.copyItem(atPath: keys.keyFile, toPath: oldKey)
        let staged = keys.path + "/new.key"
        try KeyDirectory.writeKey(staged)
        try FileManager.default.removeItem(atPath: keys.keyFile)
        try FileManager.default.copyItem(atPath: staged, toPath: keys.keyFile)
        let rekeyStart = Self.now()
        try backend.rekey(to: .keyFile(keys.keyFile))
        let committed = Self.now()
        let before = hosts.map { $0.lines.filter { $0.hasPrefix("op ") }.count }
        let after = ContinuousClock.now + .seconds(20)
        while zip(hosts, before).contains(where: { $1 + 30 > $0.lines.filter { $0.hasPrefix("op ") }.count }), ContinuousClock.now < after {
            usleep(10_000)
        }
        _ = FileManager.default.createFile(atPath: stop, contents: nil)

        var firstAfter: [Int64] = []
        var models: [String: String] = [:]
        for (i, host) in hosts.enumerated() {
            let (lines, status) = try finish(host)
            #expect(status == 0, "host \(i) exited with \(status)")
            let bad = lines.filter { $0.hasPrefix("bad ") || $0.hasPrefix("error ") }
            #expect(bad.isEmpty, "host \(i): \(bad.prefix(5))")
            let ops = lines.filter { $0.hasPrefix("op ") }.map { $0.split(separator: " ") }
            // Each call that started after the COMMIT succeeded and read right (above): it
            // used the new keys, the only ones that open the re-encrypted rows. The first
            // one paid the reload; its duration is the propagation cost.
            let later = ops.filter { Int64($0[2])! > committed }
            #expect(later.count >= 30, "host \(i) made \(later.count) calls after the rekey")
            if let first = later.first { firstAfter.append(Int64(first[3])! - Int64(first[2])!) }
            #expect(ops.contains { Int64($0[2])! < rekeyStart }, "host \(i) made no call before the rekey")
            if let model = lines.first(where: { $0.hasPrefix("model ") }) {
                for pair in model.dropFirst(6).split(separator: " ") {
                    let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                    models[parts[0]] = parts[1]
                }
            }
        }
        print(
            "RekeyPropagationTests: rekey took \((committed - rekeyStart) / 1_000_000) ms; each host's first call after it: "
                + firstAfter.map { "\($0 / 1_000_000) ms" }.joined(separator: ", "))

        // Nothing written under the old key: a host holding only the new key reads every
        // value each host acknowledged last, and the commitment verifies.
        let fresh = try PostgreSQLBackend(configuration: .init(keySource: .keyFile(staged), schema: schema))
        let reader = SecItemClient(backend: fresh, accessGroups: AccessGroups(["fleet"]))
        #expect(models.count >= 4)
        for (account, value) in models.sorted(by: { $0.key < $1.key }) {
            let data = try reader.copyMatchingItems(["class": "genp", "svce": "fleet", "acct": account, "r_Data": true]) as? Data
            if data.map({ String(decoding: $0, as: UTF8.self) }) != value {
                Issue.record("\(account) holds \(data.map { String(decoding: $0, as: UTF8.self) } ?? "nothing"), expected \(value)")
                break
            }
        }
        #expect(try fresh.verify() == [])
        let oldKeyError = thrownSecItemError { _ = try PostgreSQLBackend(configuration: .init(keySource: .keyFile(oldKey), schema: schema)) }
        #expect(oldKeyError?.status == errSecAuthFailed, "the old key still opens the keychain: \(String(describing: oldKeyError))")
    }
}
