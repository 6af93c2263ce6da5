import Foundation
import SecItem
import SecItemCore
import SecItemSecretService
import SecItemTestSupport
import Testing

/// Other Secret Service clients read what the backend stores.
@Suite("Secret Service interop")
struct SecretServiceInteropTests {
    @Test("secret-tool lookup service S account A returns the bytes; readable attributes and label")
    func secretTool() throws {
        let client = SharedService.client(try SharedService.backend())
        let service = "interop-\(UUID().uuidString)"
        let secret = Data([0x70, 0x00, 0xFF, 0x0A, 0xC3, 0xA9, 0x21])
        try client.addItem([
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecAttrAccount as String: "alice", kSecValueData as String: secret,
        ])
        let tool = try which("secret-tool")
        let lookup = try SecretServiceWitness.run(tool, ["lookup", "service", service, "account", "alice"], timeout: .seconds(20))
        if SharedService.provider == "gnome-keyring" {
            // With gnome-keyring, secret-tool prints any secret's bytes.
            #expect(lookup.status == 0, "\(lookup.stderr)")
            #expect(lookup.stdoutData == secret)
        } else {
            // KWallet and KeePassXC keep the content type: bytes that are not text stay bytes.
            #expect(lookup.status != 0 && lookup.stderr.contains("textual"), "\(lookup.stderr)")
        }
        // Text is stored as text/plain, which secret-tool prints on every provider.
        try client.addItem([
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecAttrAccount as String: "text", kSecValueData as String: Data("pässwörd 🔑".utf8),
        ])
        let text = try SecretServiceWitness.run(tool, ["lookup", "service", service, "account", "text"], timeout: .seconds(20))
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdoutData == Data("pässwörd 🔑".utf8))

        let search = try SecretServiceWitness.run(tool, ["search", "--all", "service", service, "account", "alice"], timeout: .seconds(20))
        let found = search.stdout + search.stderr
        #expect(found.contains("label = \(service) (alice)"))
        #expect(found.contains("attribute.account = alice"))
        #expect(found.contains("attribute.username = alice"))
        #expect(found.contains("schema = org.secitem.Item"))
        #expect(found.contains("attribute.class = genp"))
        #expect(found.contains("attribute.access-group = test"))
    }

    /// Debian's Python with its `keyring` and `secretstorage` packages (python3-keyring,
    /// python3-secretstorage, installed by scripts/install-deps from the package mirror:
    /// the suite needs no network beyond it). Fails loudly when they are missing.
    static func python() throws -> String {
        let python = "/usr/bin/python3"
        let check = try runCommand(python, ["-c", "import keyring, secretstorage"], timeout: .seconds(60))
        guard check.status == 0 else {
            throw SetupError(
                "\(python) cannot import keyring and secretstorage (\(check.stderr)); run scripts/install-deps "
                    + "(apt-get install python3-keyring python3-secretstorage)")
        }
        return python
    }

    @Test("Python keyring.get_password(S, A) returns the password")
    func pythonKeyring() throws {
        let client = SharedService.client(try SharedService.backend())
        let python = try Self.python()
        let service = "py-\(UUID().uuidString)"
        let password = "pässwörd 🔑 with spaces"
        try client.addItem([
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecAttrAccount as String: "bob", kSecValueData as String: Data(password.utf8),
        ])
        var env = ProcessInfo.processInfo.environment
        env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.SecretService.Keyring"
        let script = """
            import sys, keyring
            value = keyring.get_password(sys.argv[1], sys.argv[2])
            sys.stdout.buffer.write(b"<none>" if value is None else value.encode("utf-8"))
            """
        let result = try SecretServiceWitness.run(python, ["-c", script, service, "bob"], environment: env, timeout: .seconds(60))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == password)
    }
}

/// Two processes add the same primary key at the same moment.
@Suite("Secret Service race")
struct SecretServiceRaceTests {
    @Test(
        "two processes racing to add the same key 50 times: one item, one success each time",
        .disabled(
            if: SharedService.provider == "keepassxc",
            "KeePassXC 2.7.4 exits when two clients create items at once (docs/secret-service-mapping.md, Providers)"))
    func race() throws {
        let namespace = "race-\(UUID().uuidString)"
        let backend = try SharedService.backend(namespace: namespace)
        var env = ProcessInfo.processInfo.environment
        env["SECITEM_SECRET_SERVICE_NAMESPACE"] = namespace
        env["SECITEM_SECRET_SERVICE_TIMEOUT"] = "20"
        let a = try HelperProcess(environment: env)
        let b = try HelperProcess(environment: env)
        for helper in [a, b] {
            let opened = try helper.run("open")
            try #require(opened.kind == "ok", "helper could not open the backend: \(opened.detail)")
        }
        var bothDup = 0
        for round in 0..<50 {
            a.send("add race r\(round)")
            b.send("add race r\(round)")
            let replies = [try a.reply(timeout: .seconds(60)), try b.reply(timeout: .seconds(60))]
            #expect(replies.filter { $0.kind == "err" || $0.kind == "garbled" }.isEmpty, "round \(round): \(replies)")
            let successes = replies.filter { $0.kind == "ok" }.count
            if successes == 0 { bothDup += 1 }
            #expect(successes == 1, "round \(round): \(replies.map(\.kind))")
            let stored = try backend.fetch(
                matching: ItemQuery(
                    itemClass: .genericPassword, attributes: ["svce": .string("race"), "acct": .string("r\(round)")],
                    accessGroups: ["test"]), limit: nil)
            #expect(stored.count == 1, "round \(round): \(stored.count) items")
        }
        #expect(bothDup == 0)
    }
}
