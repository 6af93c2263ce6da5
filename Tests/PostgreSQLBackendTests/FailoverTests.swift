import Foundation
import SecItemConformance
import SecItemCore
import SecItemPostgreSQL
import SecItemTestSupport
import Testing

/// Failover at scale: writer and reader processes against a primary and a
/// synchronous standby; the primary SIGKILLed at seeded instants, the standby
/// promoted, the old primary re-attached as the new standby (pg_rewind, else a
/// fresh base backup), round after round.
@Suite("PostgreSQL failover")
struct FailoverTests {
    @Test("4 writers and 2 readers, the primary SIGKILLed and the standby promoted round after round: every acknowledged write present byte for byte, none twice, the commitment verifies after each round",
        .disabled("unfinished: a round's re-attach (pg_rewind, then the base-backup fallback) failed once; issue 29"))
    func failoverRounds() throws {
        _ = try TestServer.directory()
        let rounds = Int(ProcessInfo.processInfo.environment["SECITEM_TEST_FAILOVER_ROUNDS"] ?? "") ?? 20
        var rng = SeededRandom()
        print("FailoverTests.failoverRounds seed \(rng.seed) (replay: SECITEM_TEST_SEED=\(rng.seed)), \(rounds) rounds")
        let pair = try ReplicatedPair()
        let keys = try KeyDirectory()
        let schema = freshSchema("failover")
        let url = pair.connection(pair.servers, attributes: "read-write")
        // The rollback evidence is off here, on purpose: PostgreSQL makes a commit visible
        // on the primary while it waits for the synchronous standby, so a host can read a
        // generation that a failover then loses (never acknowledged to its writer), and
        // its high-water mark then refuses the promoted store (errSecDecode, generation
        // N+1 seen, N found). Found by this suite (seed 16687763643157286571); how the
        // evidence should treat a failover is open (issue 29). Everything else is checked.
        let backend = try PostgreSQLBackend(
            configuration: .init(connection: url, keySource: .keyFile(keys.keyFile), schema: schema, rollbackCheck: .off))
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["fleet"]))
        let stop = keys.path + "/stop"
        let env = ["SECITEM_POSTGRESQL_URL": url, "SECITEM_POSTGRESQL_STATEMENT_TIMEOUT": "15", "SECITEM_ROLLBACK_CHECK": "off"]
        let writers = try (0..<4).map { try helper(["until", schema, "w\($0)", stop], keyFile: keys.keyFile, env) }
        let readers = try (0..<2).map { _ in
            try helper(
                ["scan", schema, stop], keyFile: keys.keyFile,
                ["SECITEM_POSTGRESQL_URL": pair.connection(pair.servers, attributes: "prefer-standby"), "SECITEM_ROLLBACK_CHECK": "off"])
        }
        defer { _ = FileManager.default.createFile(atPath: stop, contents: nil) }
        let start = ContinuousClock.now
        for round in 0..<rounds {
            // A seeded instant: after each writer's next acknowledgement, then 0–400 ms.
            let acked = writers.map { $0.lines.filter { $0.hasPrefix("ack ") }.count }
            let deadline = ContinuousClock.now + .seconds(30)
            while zip(writers, acked).contains(where: { w, a in w.lines.filter { $0.hasPrefix("ack ") }.count <= a })
                && ContinuousClock.now < deadline
            {
                usleep(10_000)
            }
            usleep(UInt32.random(in: 0...400_000, using: &rng))
            try pair.failover()
            let problems = try backend.verify()
            #expect(problems.isEmpty, "round \(round), seed \(rng.seed): \(problems)")
        }
        let elapsed = ContinuousClock.now - start
        _ = FileManager.default.createFile(atPath: stop, contents: nil)
        var acknowledged: [String] = []
        var unacknowledged: [String] = []
        for (n, writer) in writers.enumerated() {
            for line in try finish(writer, timeout: .seconds(60)).lines {
                let parts = line.split(separator: " ")
                if parts.first == "ack" { acknowledged.append("w\(n)-\(parts[1])") }
                if parts.first == "fail" { unacknowledged.append("w\(n)-\(parts[1])") }
            }
        }
        for reader in readers {
            let lines = try finish(reader, timeout: .seconds(60)).lines
            #expect(!lines.contains { $0.hasPrefix("bad ") }, "a reader saw: \(lines.filter { $0.hasPrefix("bad ") }.prefix(3))")
            #expect(lines.last?.hasPrefix("scans ") == true)
        }
        let all = try client.copyMatchingItems(
            ["class": "genp", "svce": "fleet", "m_Limit": "m_LimitAll", "r_Attributes": true, "r_Data": true])
        var present: [String: [String]] = [:]
        for entry in all as? [[String: Any]] ?? [] {
            guard let account = entry["acct"] as? String else { continue }
            present[account, default: []].append((entry["v_Data"] as? Data).map { String(decoding: $0, as: UTF8.self) } ?? "")
        }
        let lost = acknowledged.filter { present[$0] != ["value-\($0)"] }
        #expect(lost.isEmpty, "seed \(rng.seed): \(lost.count) acknowledged write(s) lost or changed: \(lost.prefix(5))")
        #expect(present.values.allSatisfy { $0.count == 1 }, "an item is there twice")
        let appliedAnyway = unacknowledged.filter { present[$0] != nil }.count
        #expect(try backend.verify() == [])
        print(
            "failover: \(rounds) rounds in \(elapsed), \(acknowledged.count) acknowledged writes all present, "
                + "\(unacknowledged.count) failed (\(appliedAnyway) of them applied anyway: COMMIT sent, answer lost)")
        #expect(acknowledged.count >= rounds * 4)
    }
}
