import Foundation
import SecItemTestSupport
import Testing

/// What `secitem find-generic-password -w` says on the bus, next to `secret-tool lookup`
/// of the same item on the same daemon (issue 14, start-up): every message on a private
/// bus with a gnome-keyring of its own, recorded by dbus-monitor.
///
/// The lookup must not cost more conversation than secret-tool's: one connection per
/// process, no probe work the backend repeats (the automatic choice's probe reads no
/// lock state), no introspection; beyond secret-tool's calls to the provider, only the
/// collection's alias (sent with the session's opening) and the item's attributes (sent
/// with its secret: the access check needs them), each sent once.
@Suite("secitem on the bus: no more conversation than secret-tool", .serialized)
struct SecretServiceTrafficTests {
    @Test("find -w: one connection, no lock-state read, no calls beyond secret-tool's but the alias and the item's attributes",
          arguments: [nil, "secret-service"])
    func findConversation(backend: String?) throws {
        let session = try PrivateSession(withKeyring: true)
        let cli = try CLI(backend: backend)
        defer { cli.remove() }
        let bus: [String: String?] = [
            "DBUS_SESSION_BUS_ADDRESS": session.address,
            "XDG_RUNTIME_DIR": session.directory.appendingPathComponent("run").path,
        ]
        let service = "traffic-\(UUID().uuidString)"
        let add = try cli.run(["add-generic-password", "-a", "alice", "-s", service, "-w", "-"], stdin: "pw-1", environment: bus)
        #expect(add.status == 0, "\(add.stderr)")
        let tool = try Executables.which("secret-tool")

        let ours = try BusRecording.record(session) {
            let found = try cli.run(["find-generic-password", "-a", "alice", "-s", service, "-w"], environment: bus)
            #expect(found.status == 0, "\(found.stderr)")
            #expect(found.stdout == "pw-1\n")
        }
        let theirs = try BusRecording.record(session) {
            let found = try ChildProcess.run(tool, ["lookup", "service", service, "account", "alice"], environment: session.environment)
            #expect(found.status == 0, "\(found.stderr)")
            #expect(found.stdout == "pw-1")
        }
        let report = "secitem: \(ours.summary)\nsecret-tool: \(theirs.summary)"

        #expect(ours.connections == 1, "one connection per process\n\(report)")
        #expect(theirs.connections == 1, "\(report)")
        #expect(!ours.calls.contains { $0.member == "Introspect" }, "\(report)")
        #expect(!ours.calls.contains { $0.member == "Get" && $0.arguments.contains("Locked") }, "no lock-state read\n\(report)")
        // The bus daemon: the same calls (connecting, the proxy's set-up), bar the
        // proxy's unsubscribing at exit.
        let ourBusCalls = ours.calls.filter { $0.toBus && $0.member != "RemoveMatch" }
        #expect(ourBusCalls.count <= theirs.calls.filter(\.toBus).count, "\(report)")
        // The provider: secret-tool's calls, plus the alias and the item's attributes at most.
        let ourProviderCalls = ours.calls.filter { !$0.toBus }
        let theirProviderCalls = theirs.calls.filter { !$0.toBus }
        #expect(ourProviderCalls.count <= theirProviderCalls.count + 2, "\(report)")
        #expect(ourProviderCalls.filter { $0.member == "ReadAlias" }.count <= 1, "\(report)")
        #expect(ourProviderCalls.filter { $0.member == "OpenSession" }.count == 1, "\(report)")
        #expect(ourProviderCalls.filter { $0.member == "SearchItems" }.count == 1, "\(report)")
        #expect(ourProviderCalls.filter { $0.member == "GetSecrets" }.count == 1, "\(report)")
        // The encrypted session secret-tool negotiates, never "plain".
        let negotiation = ourProviderCalls.first { $0.member == "OpenSession" }?.arguments.first
        #expect(negotiation == theirProviderCalls.first { $0.member == "OpenSession" }?.arguments.first, "\(report)")
        #expect(negotiation == "dh-ietf1024-sha256-aes128-cbc-pkcs7", "\(report)")
    }
}

extension SecretServiceTrafficTests {
    /// The add sends its secret in the backend's own session: no libsecret proxy (its
    /// bus-name watch and `Properties.GetAll` of the service) and no second session.
    @Test("add: one session, no libsecret proxy, one CreateItem; no more calls to the provider than secret-tool store's but the duplicate checks")
    func addConversation() throws {
        let session = try PrivateSession(withKeyring: true)
        let cli = try CLI(backend: "secret-service")
        defer { cli.remove() }
        let bus: [String: String?] = [
            "DBUS_SESSION_BUS_ADDRESS": session.address,
            "XDG_RUNTIME_DIR": session.directory.appendingPathComponent("run").path,
        ]
        let service = "traffic-add-\(UUID().uuidString)"
        let ours = try BusRecording.record(session) {
            let add = try cli.run(["add-generic-password", "-a", "alice", "-s", service, "-w", "-"], stdin: "pw-1", environment: bus)
            #expect(add.status == 0, "\(add.stderr)")
        }
        let theirs = try BusRecording.record(session) {
            let stored = try ChildProcess.run(
                try Executables.which("secret-tool"), ["store", "--label=x", "service", service, "account", "bob"],
                environment: session.environment, stdin: Data("pw-2".utf8))
            #expect(stored.status == 0, "\(stored.stderr)")
        }
        let report = "secitem: \(ours.summary)\nsecret-tool: \(theirs.summary)"
        let provider = ours.calls.filter { !$0.toBus }
        #expect(ours.connections == 1, "\(report)")
        #expect(provider.filter { $0.member == "OpenSession" }.count == 1, "one encryption session\n\(report)")
        #expect(provider.filter { $0.member == "CreateItem" }.count == 1, "\(report)")
        #expect(!provider.contains { $0.member == "GetAll" && $0.path == "/org/freedesktop/secrets" }, "no libsecret proxy\n\(report)")
        #expect(!ours.calls.contains { $0.member == "Introspect" }, "\(report)")
        // The duplicate checks before and after CreateItem (SearchItems, each with at most one
        // read of the collection's lock state, sent with it or after an empty search) are the
        // add's own; beyond them, no more calls to the provider than secret-tool's.
        let checks = provider.filter { $0.member == "SearchItems" }.count
        let lockReads = provider.filter { $0.member == "Get" && $0.arguments.contains("Locked") }.count
        #expect(checks == 2, "\(report)")
        #expect(lockReads <= checks, "\(report)")
        let theirProvider = theirs.calls.filter { !$0.toBus }
        #expect(provider.count - checks - lockReads <= theirProvider.count, "\(report)")
        #expect(ours.calls.filter(\.toBus).count <= theirs.calls.filter(\.toBus).count, "\(report)")
        // What was stored reads back through secret-tool.
        let lookup = try ChildProcess.run(
            try Executables.which("secret-tool"), ["lookup", "service", service, "account", "alice"], environment: session.environment)
        #expect(lookup.stdout == "pw-1", "\(lookup.stderr)")
    }
}

/// Every method call clients made on a private bus while `body` ran, from dbus-monitor.
struct BusRecording {
    struct Call {
        var sender: String
        var destination: String
        var path: String
        var member: String
        /// The string arguments, in order.
        var arguments: [String]
        var toBus: Bool { destination == "org.freedesktop.DBus" }
    }

    /// The clients' calls (the provider's own traffic, replies and signals left out).
    var calls: [Call]
    /// How many connections the clients opened (their `Hello` calls).
    var connections: Int

    var summary: String {
        "\(connections) connection(s), \(calls.count) calls: "
            + calls.map { "\($0.member)\($0.arguments.isEmpty ? "" : "(\($0.arguments.joined(separator: ",")))")" }.joined(separator: " ")
    }

    /// Runs `body` while dbus-monitor records the bus; returns once every connection
    /// opened meanwhile has closed (so nothing the program sent is missing).
    static func record(_ session: PrivateSession, _ body: () throws -> Void) throws -> BusRecording {
        let monitor = try ChildProcess(try Executables.which("dbus-monitor"), ["--address", session.address])
        defer {
            monitor.signal(SIGKILL)
            _ = try? monitor.finish(timeout: .seconds(10))
        }
        // dbus-monitor is recording once the bus has taken its name away (it became a monitor).
        try waitFor(monitor, "the monitor to start") { messages in messages.contains { $0.member == "NameLost" } }
        try body()
        var opened: Set<String> = []
        try waitFor(monitor, "every connection to close") { messages in
            opened = Set(messages.filter { $0.kind == "method call" && $0.member == "Hello" }.map(\.sender))
            let closed = Set(
                messages.filter { $0.member == "NameOwnerChanged" && $0.arguments.count == 3 && $0.arguments[2].isEmpty }
                    .map { $0.arguments[0] })
            return !opened.isEmpty && opened.isSubset(of: closed)
        }
        let calls = parse(monitor.lines).filter { $0.kind == "method call" && opened.contains($0.sender) }
        return BusRecording(
            calls: calls.map {
                Call(sender: $0.sender, destination: $0.destination, path: $0.path, member: $0.member, arguments: $0.arguments)
            }, connections: opened.count)
    }

    private static func waitFor(
        _ monitor: ChildProcess, _ what: String, timeout: Duration = .seconds(20), _ done: ([Message]) -> Bool
    ) throws {
        let deadline = ContinuousClock.now + timeout
        while !done(parse(monitor.lines)) {
            guard monitor.isRunning else { throw TestSetupError("dbus-monitor exited while waiting for \(what)") }
            guard ContinuousClock.now < deadline else { throw TestSetupError("dbus-monitor did not see \(what) within \(timeout)") }
            usleep(5_000)
        }
    }

    struct Message {
        var kind: String
        var sender = ""
        var destination = ""
        var path = ""
        var member = ""
        var arguments: [String] = []
    }

    /// dbus-monitor's text: a header line per message (`method call time=… sender=:1.5 ->
    /// destination=… serial=… path=…; interface=…; member=…`), then its arguments indented
    /// (`   string "…"`).
    static func parse(_ lines: [String]) -> [Message] {
        var messages: [Message] = []
        for line in lines {
            if line.hasPrefix(" ") || line.hasPrefix("\t") {
                let text = line.trimmingCharacters(in: .whitespaces)
                if text.hasPrefix("string \""), text.hasSuffix("\""), !messages.isEmpty {
                    messages[messages.count - 1].arguments.append(String(text.dropFirst(8).dropLast()))
                }
                continue
            }
            guard let kind = ["method call", "method return", "error", "signal"].first(where: { line.hasPrefix($0 + " ") }) else {
                continue
            }
            var message = Message(kind: kind)
            for field in line.split(separator: " ") {
                let parts = field.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2 else { continue }
                let value = parts[1].hasSuffix(";") ? String(parts[1].dropLast()) : parts[1]
                switch parts[0] {
                case "sender": message.sender = value
                case "destination": message.destination = value
                case "path": message.path = value
                case "member": message.member = value
                default: break
                }
            }
            messages.append(message)
        }
        return messages
    }
}
