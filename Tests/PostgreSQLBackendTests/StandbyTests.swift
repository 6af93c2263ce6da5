import Foundation
import SecItemCore
import SecItemPostgreSQL
import SecItemTestSupport
import Testing

/// A primary and a streaming standby started by the test: reads on the standby
/// when the connection string asks for one, writes there refused.
@Suite("PostgreSQL standby reads")
struct StandbyTests {
    func data(_ client: SecItemClient, _ account: String) throws(SecItemError) -> String? {
        do {
            let value = try client.copyMatchingItems(["class": "genp", "svce": "fleet", "acct": account, "r_Data": true])
            return (value as? Data).map { String(decoding: $0, as: UTF8.self) }
        } catch {
            if error.status == errSecItemNotFound { return nil }
            throw error
        }
    }

    @Test("prefer-standby reads from the standby (within the documented bound); writes there are errSecReadOnly and change nothing; a rotation on the primary reaches the reader")
    func readsOnTheStandby() throws {
        _ = try TestServer.directory()
        let pair = try ReplicatedPair()
        // Read-your-writes on the standby: commits wait until the standby applied them.
        _ = try pair.psql(pair.primaryDirectory, "ALTER SYSTEM SET synchronous_commit = remote_apply")
        _ = try pair.psql(pair.primaryDirectory, "SELECT pg_reload_conf()")
        let keys = try KeyDirectory()
        let schema = freshSchema("standby")
        let writer = try PostgreSQLBackend(
            configuration: .init(
                connection: pair.connection(pair.servers, attributes: "read-write"), keySource: .keyFile(keys.keyFile),
                schema: schema))
        let w = SecItemClient(backend: writer, accessGroups: AccessGroups(["fleet"]))
        for i in 0..<5 { try w.addItem(["class": "genp", "svce": "fleet", "acct": "a\(i)", "v_Data": Data("v\(i)".utf8)]) }

        let reader = try PostgreSQLBackend(
            configuration: .init(
                connection: pair.connection(pair.servers, attributes: "prefer-standby"), keySource: .keyFile(keys.keyFile),
                schema: schema))
        let r = SecItemClient(backend: reader, accessGroups: AccessGroups(["fleet"]))
        #expect(reader.endpoint.hasPrefix(pair.standbyDirectory), "prefer-standby connected to \(reader.endpoint)")
        for i in 0..<5 { #expect(try data(r, "a\(i)") == "v\(i)") }

        // A write acknowledged by the primary is visible on the standby at once (remote_apply).
        try w.updateItems(["class": "genp", "svce": "fleet", "acct": "a0"], ["v_Data": Data("new".utf8)])
        #expect(try data(r, "a0") == "new")

        // Writes sent to the standby: errSecReadOnly, nothing changed anywhere.
        func refused(_ what: String, _ attempt: () throws(SecItemError) -> Void) {
            do {
                try attempt()
                Issue.record("\(what) on the standby succeeded")
            } catch {
                #expect(error.status == errSecReadOnly, "\(what): \(error)")
            }
        }
        refused("add") { () throws(SecItemError) in
            try r.addItem(["class": "genp", "svce": "fleet", "acct": "x", "v_Data": Data("x".utf8)])
        }
        refused("update") { () throws(SecItemError) in
            try r.updateItems(["class": "genp", "svce": "fleet", "acct": "a1"], ["v_Data": Data("y".utf8)])
        }
        refused("delete") { () throws(SecItemError) in try r.deleteItems(["class": "genp", "svce": "fleet", "acct": "a2"]) }
        #expect(try data(w, "x") == nil)
        #expect(try data(w, "a1") == "v1")
        #expect(try data(w, "a2") == "v2")
        #expect(try writer.verify() == [])

        // Another host rotates and rekeys on the primary: the standby reader follows (new epoch, key file re-read).
        try writer.rotateDataKey()
        #expect(try data(r, "a3") == "v3")
        try KeyDirectory.writeKey(keys.path + "/new.key")
        try FileManager.default.removeItem(atPath: keys.keyFile)
        try FileManager.default.copyItem(atPath: keys.path + "/new.key", toPath: keys.keyFile)
        try writer.rekey(to: .keyFile(keys.keyFile))
        #expect(try data(r, "a4") == "v4")
        #expect(try reader.verify() == [])

        // read-only with the standby alone: the same.
        let only = try PostgreSQLBackend(
            configuration: .init(
                connection: pair.connection([pair.standbyDirectory], attributes: "read-only"), keySource: .keyFile(keys.keyFile),
                schema: schema))
        #expect(try data(SecItemClient(backend: only, accessGroups: AccessGroups(["fleet"])), "a0") == "new")

        // diagnose: the primary's replication and commit settings; a warning only where a write could be lost.
        func notes(_ connection: String) -> [String] {
            PostgreSQLBackend.inspect(.init(connection: connection, keySource: .keyFile(keys.keyFile), schema: schema)).notes
        }
        let durable = notes(pair.connection([pair.primaryDirectory], attributes: "read-write"))
        #expect(durable.contains { $0.contains("1 standby(s) streaming, 1 synchronous") && $0.contains("synchronous_commit remote_apply") }, "\(durable)")
        #expect(!durable.contains { $0.hasPrefix("warning:") }, "\(durable)")
        let local = notes(pair.connection([pair.primaryDirectory], attributes: "read-write") + " options='-c synchronous_commit=local'")
        #expect(local.contains { $0.hasPrefix("warning: synchronous_commit is local") }, "\(local)")
        let off = notes(pair.connection([pair.primaryDirectory], attributes: "read-write") + " options='-c synchronous_commit=off'")
        #expect(off.contains { $0.hasPrefix("warning: synchronous_commit is off") }, "\(off)")
        let onStandby = notes(pair.connection([pair.standbyDirectory], attributes: "any"))
        #expect(onStandby.contains { $0.contains("this server is a standby") }, "\(onStandby)")
        // Asynchronous: the standby no longer named synchronous.
        _ = try pair.psql(pair.primaryDirectory, "ALTER SYSTEM SET synchronous_standby_names = ''")
        _ = try pair.psql(pair.primaryDirectory, "SELECT pg_reload_conf()")
        let asynchronous = notes(pair.connection([pair.primaryDirectory], attributes: "read-write"))
        #expect(asynchronous.contains { $0.hasPrefix("warning: replication is asynchronous") }, "\(asynchronous)")
    }

    @Test("diagnose on a server without a standby says a failover has nothing to promote")
    func diagnoseWithoutStandby() throws {
        _ = try TestServer.directory()
        let keys = try KeyDirectory()
        let notes = PostgreSQLBackend.inspect(.init(keySource: .keyFile(keys.keyFile), schema: freshSchema("diag"))).notes
        #expect(notes.contains { $0.hasPrefix("replication: 0 standby(s) streaming") }, "\(notes)")
        #expect(notes.contains { $0.hasPrefix("no standby is streaming") }, "\(notes)")
    }
}
