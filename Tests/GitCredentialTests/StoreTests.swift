import Foundation
import SecItem
import SecItemCore
import SecItemGitCredential
import SecItemMemory
import SecItemTestSupport
import Synchronization
import Testing

/// A settable clock for expiry tests.
final class TestClock: Sendable {
    private let value = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { value.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { value.withLock { $0 += seconds } }
}

/// The helper over an isolated memory keychain, driven with git's own input text.
struct Helper {
    let client = SecItemClient(backend: MemoryBackend(), accessGroups: AccessGroups(["git-tests"]))
    let clock = TestClock()
    var options = GitCredentialCommand.Options()

    func run(_ action: String, _ input: String) -> GitCredentialCommand.Outcome {
        let clock = self.clock
        return GitCredentialCommand.run(
            options: options, action: action, input: Array(input.utf8), environment: [:], client: client, now: { clock.now })
    }

    /// The answer to `get`, as text.
    func get(_ input: String) -> String {
        let outcome = run("get", input)
        #expect(outcome.status == 0, "\(outcome.messages)")
        return String(decoding: outcome.answer, as: UTF8.self)
    }

    func store(_ input: String) {
        let outcome = run("store", input)
        #expect(outcome.status == 0, "\(outcome.messages)")
        #expect(outcome.messages.isEmpty, "\(outcome.messages)")
    }

    func erase(_ input: String) {
        let outcome = run("erase", input)
        #expect(outcome.status == 0, "\(outcome.messages)")
    }

    /// Every internet password in the keychain, attributes and data.
    func items() throws -> [[String: Any]] {
        let query: [String: Any] = [
            kSecClass as String: kSecClassInternetPassword, kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true,
            kSecReturnData as String: true,
        ]
        var result: CFTypeRef?
        let status = client.copyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return [] }
        try #require(status == errSecSuccess)
        return result as? [[String: Any]] ?? []
    }
}

@Suite("git credential helper: what get, store and erase do to the keychain")
struct StoreTests {
    @Test("stored exactly as git-credential-osxkeychain stores an internet password")
    func osxkeychainLayout() throws {
        let helper = Helper()
        helper.store("protocol=https\nhost=git.example.com:8443\npath=team/repo.git\nusername=alice\npassword=s3cret\n")
        let items = try helper.items()
        #expect(items.count == 1)
        let item = try #require(items.first)
        #expect(item[kSecAttrServer as String] as? String == "git.example.com")
        #expect(item[kSecAttrProtocol as String] as? String == kSecAttrProtocolHTTPS as String)
        #expect(item[kSecAttrPort as String] as? Int == 8443)
        #expect(item[kSecAttrPath as String] as? String == "team/repo.git")
        #expect(item[kSecAttrAccount as String] as? String == "alice")
        #expect(item[kSecAttrAuthenticationType as String] as? String == kSecAttrAuthenticationTypeDefault as String)
        #expect(item[kSecValueData as String] as? Data == Data("s3cret".utf8))
        // Found by an ordinary internet-password query, as `security find-internet-password` would.
        let found = try helper.client.copyMatchingItems([
            kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "git.example.com", kSecReturnData as String: true,
        ])
        #expect(found as? Data == Data("s3cret".utf8))
    }

    @Test("expiry and refresh token ride in the data after the password, as osxkeychain appends them")
    func metadataInData() throws {
        let helper = Helper()
        helper.store("protocol=https\nhost=h\nusername=u\npassword=pw\npassword_expiry_utc=1900000000\noauth_refresh_token=rt\n")
        let data = try #require(try helper.items().first?[kSecValueData as String] as? Data)
        #expect(String(decoding: data, as: UTF8.self) == "pw\npassword_expiry_utc=1900000000\noauth_refresh_token=rt")
        #expect(helper.get("protocol=https\nhost=h\n") == "username=u\npassword=pw\npassword_expiry_utc=1900000000\noauth_refresh_token=rt\n")
    }

    @Test("a credential whose password_expiry_utc has passed is not returned; --timeout sets one")
    func expiry() throws {
        var helper = Helper()
        let now = Int(helper.clock.now.timeIntervalSince1970)
        helper.store("protocol=https\nhost=h\nusername=old\npassword=pw\npassword_expiry_utc=\(now + 10)\n")
        #expect(helper.get("protocol=https\nhost=h\n").contains("password=pw"))
        helper.clock.advance(10)
        #expect(helper.get("protocol=https\nhost=h\n") == "")
        // Another, unexpired credential for the same host is returned instead.
        helper.store("protocol=https\nhost=h\nusername=new\npassword=pw2\n")
        #expect(helper.get("protocol=https\nhost=h\n") == "username=new\npassword=pw2\n")
        helper.options.timeout = 60
        helper.store("protocol=https\nhost=t\nusername=u\npassword=pw\n")
        #expect(helper.get("protocol=https\nhost=t\n") == "username=u\npassword=pw\npassword_expiry_utc=\(now + 70)\n")
        helper.clock.advance(60)
        #expect(helper.get("protocol=https\nhost=t\n") == "")
    }

    @Test("a timeout given in code beyond the clock's range: errSecParam, nothing stored, no overflow trap (issue 27, 10)")
    func hugeTimeoutInCode() throws {
        for timeout in [Int.max, Int.max - 1, GitCredentialCommand.maximumTimeout + 1, 0, -1, Int.min] {
            var helper = Helper()
            helper.options.timeout = timeout
            let outcome = helper.run("store", "protocol=https\nhost=h\nusername=u\npassword=pw-x\n")
            #expect(outcome.status == 1, "timeout \(timeout)")
            #expect(outcome.messages.contains { $0.contains("timeout") }, "\(outcome.messages)")
            #expect(try helper.items().isEmpty)
        }
        var helper = Helper()
        helper.options.timeout = GitCredentialCommand.maximumTimeout
        helper.store("protocol=https\nhost=h\nusername=u\npassword=pw\n")
        let expiry = Int(helper.clock.now.timeIntervalSince1970) + GitCredentialCommand.maximumTimeout
        #expect(helper.get("protocol=https\nhost=h\n") == "username=u\npassword=pw\npassword_expiry_utc=\(expiry)\n")
    }

    @Test("store of an existing credential replaces it in place: one item, the new password")
    func replace() throws {
        let helper = Helper()
        helper.store("protocol=https\nhost=h\nusername=u\npassword=one\n")
        helper.store("protocol=https\nhost=h\nusername=u\npassword=two\npassword_expiry_utc=1900000000\n")
        helper.store("protocol=https\nhost=h\nusername=u\npassword=three\n")
        let items = try helper.items()
        #expect(items.count == 1)
        #expect(items.first?[kSecValueData as String] as? Data == Data("three".utf8))
        #expect(helper.get("protocol=https\nhost=h\nusername=u\n") == "password=three\n")
    }

    @Test("git's matching: protocol, host and port, path only when given, username only when given")
    func matching() throws {
        let helper = Helper()
        helper.store("protocol=https\nhost=h\nusername=u\npassword=plain\n")
        helper.store("protocol=https\nhost=h:8443\nusername=u\npassword=port\n")
        helper.store("protocol=https\nhost=p\npath=a.git\nusername=u\npassword=path-a\n")
        #expect(helper.get("protocol=http\nhost=h\n") == "")
        #expect(helper.get("protocol=https\nhost=h\n") == "username=u\npassword=plain\n")
        #expect(helper.get("protocol=https\nhost=h:8443\n") == "username=u\npassword=port\n")
        #expect(helper.get("protocol=https\nhost=h:9999\n") == "")
        #expect(helper.get("protocol=https\nhost=p\npath=a.git\n") == "username=u\npassword=path-a\n")
        #expect(helper.get("protocol=https\nhost=p\npath=b.git\n") == "")
        #expect(helper.get("protocol=https\nhost=p\n") == "username=u\npassword=path-a\n")
        #expect(helper.get("protocol=https\nhost=h\nusername=v\n") == "")
        #expect(helper.get("host=h\n") == "")
        #expect(helper.get("protocol=https\n") == "")
    }

    @Test("with several users for a host, get without a username returns the newest")
    func newest() throws {
        let helper = Helper()
        helper.store("protocol=https\nhost=h\nusername=first\npassword=1\n")
        helper.clock.advance(1)
        // "Newest" is the keychain's modification date (the wall clock, not the helper's):
        // the second store must come at a later instant than the first.
        let firstStored = Date()
        try Wait.until("the wall clock to pass the first store") { Date() > firstStored }
        helper.store("protocol=https\nhost=h\nusername=second\npassword=2\n")
        #expect(helper.get("protocol=https\nhost=h\n") == "username=second\npassword=2\n")
        #expect(helper.get("protocol=https\nhost=h\nusername=first\n") == "password=1\n")
    }

    @Test("erase removes exactly the matching credential, and with a password only if it matches")
    func erase() throws {
        let helper = Helper()
        helper.store("protocol=https\nhost=h\nusername=a\npassword=pa\n")
        helper.store("protocol=https\nhost=h\nusername=b\npassword=pb\n")
        helper.store("protocol=https\nhost=h:8443\nusername=a\npassword=pa\n")
        helper.store("protocol=http\nhost=h\nusername=a\npassword=pa\n")
        helper.store("protocol=https\nhost=other\nusername=a\npassword=pa\n")
        // Not the stored password: nothing goes.
        helper.erase("protocol=https\nhost=h\nusername=a\npassword=wrong\n")
        #expect(try helper.items().count == 5)
        helper.erase("protocol=https\nhost=h\nusername=a\npassword=pa\n")
        #expect(try helper.items().count == 4)
        #expect(helper.get("protocol=https\nhost=h\nusername=a\n") == "")
        #expect(helper.get("protocol=https\nhost=h\nusername=b\n") == "password=pb\n")
        #expect(helper.get("protocol=https\nhost=h:8443\nusername=a\n") == "password=pa\n")
        #expect(helper.get("protocol=http\nhost=h\nusername=a\n") == "password=pa\n")
        // A blank or host-less erase erases nothing.
        helper.erase("")
        helper.erase("username=b\n")
        helper.erase("protocol=https\n")
        #expect(try helper.items().count == 4)
        // Protocol and host alone: every user of that host and port.
        helper.erase("protocol=https\nhost=h\n")
        #expect(try helper.items().count == 3)
    }

    @Test("usernames with @ and :, very long values, and an empty username and password round-trip")
    func unusualValues() throws {
        let helper = Helper()
        helper.store("protocol=https\nhost=h\nusername=me@corp.example:team\npassword=pa:ss@w=rd\n")
        #expect(helper.get("protocol=https\nhost=h\nusername=me@corp.example:team\n") == "password=pa:ss@w=rd\n")
        let longHost = String(repeating: "h", count: 4000) + ".example"
        let longUser = String(repeating: "u", count: 8000)
        let longPath = String(repeating: "p/", count: 4000) + "r.git"
        let longPassword = String(repeating: "x", count: 60_000)
        helper.store("protocol=https\nhost=\(longHost)\npath=\(longPath)\nusername=\(longUser)\npassword=\(longPassword)\n")
        #expect(helper.get("protocol=https\nhost=\(longHost)\npath=\(longPath)\n") == "username=\(longUser)\npassword=\(longPassword)\n")
        helper.store("protocol=https\nhost=sso\nusername=\npassword=\n")
        #expect(helper.get("protocol=https\nhost=sso\n") == "username=\npassword=\n")
    }

    @Test("a stored password holding a newline is never sent to git; bad input stores nothing")
    func newlines() throws {
        let helper = Helper()
        try helper.client.addItem([
            kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "nl", kSecAttrProtocol as String: kSecAttrProtocolHTTPS,
            kSecAttrAccount as String: "u", kSecAttrAuthenticationType as String: kSecAttrAuthenticationTypeDefault,
            kSecValueData as String: Data("line1\ninjected=1".utf8),
        ])
        #expect(helper.get("protocol=https\nhost=nl\n") == "")
        // A continuation line without '=' (a newline in a password) refuses the whole input.
        let outcome = helper.run("store", "protocol=https\nhost=h\nusername=u\npassword=abc\ndef\n")
        #expect(outcome.status == 1)
        #expect(outcome.messages.joined().contains("not key=value"))
        #expect(!outcome.messages.joined().contains("abc") && !outcome.messages.joined().contains("def"))
        #expect(try helper.items().count == 1)
    }

    @Test("other protocols, incomplete credentials and unknown actions: nothing stored, nothing answered")
    func ignored() throws {
        let helper = Helper()
        helper.store("protocol=https\nhost=h\nusername=u\npassword=p\n")
        #expect(helper.run("store", "protocol=cert\npath=/etc/cert.pem\npassword=p\n").status == 0)
        #expect(helper.run("store", "protocol=https\nhost=h2\npassword=p\n").messages.joined().contains("nothing stored"))
        #expect(helper.run("frobnicate", "protocol=https\nhost=h\n").answer.isEmpty)
        #expect(helper.run("frobnicate", "protocol=https\nhost=h\n").status == 0)
        #expect(helper.get("protocol=cert\npath=/etc/cert.pem\n") == "")
        #expect(try helper.items().count == 1)
    }

    @Test("with git's state capability the answer is marked, and git's store of that answer is skipped")
    func state() throws {
        let helper = Helper()
        helper.store("protocol=https\nhost=h\nusername=u\npassword=p\n")
        #expect(helper.get("capability[]=state\nprotocol=https\nhost=h\n")
            == "username=u\npassword=p\ncapability[]=state\nstate[]=secitem:seen=1\n")
        let before = try #require(try helper.items().first?[kSecAttrModificationDate as String] as? Date)
        helper.store("capability[]=state\nprotocol=https\nhost=h\nusername=u\npassword=p\nstate[]=secitem:seen=1\n")
        #expect(try helper.items().first?[kSecAttrModificationDate as String] as? Date == before)
    }
}
