import Foundation
import SecItemGitCredential
import Testing

@Suite("git credential protocol: reading git's input and writing the answer")
struct ProtocolTests {
    func parse(_ text: String) throws -> GitCredential {
        try GitCredential.parse(Array(text.utf8))
    }

    @Test("every attribute git sends; unknown ones ignored; the blank line ends the input")
    func attributes() throws {
        let c = try parse("""
            protocol=https
            host=example.com:8443
            path=org/repo.git
            username=alice@example.com
            password=p=ss:word
            password_expiry_utc=1999999999
            oauth_refresh_token=refresh
            capability[]=authtype
            capability[]=state
            wwwauth[]=Basic realm="x"
            authtype=Bearer
            credential=abc
            state[]=other:1
            future_attribute=whatever

            protocol=http
            """)
        #expect(c.scheme == "https")
        #expect(c.host == "example.com")
        #expect(c.port == 8443)
        #expect(c.hostAndPort == "example.com:8443")
        #expect(c.path == "org/repo.git")
        #expect(c.username == "alice@example.com")
        #expect(c.password == Data("p=ss:word".utf8))
        #expect(c.passwordExpiryUTC == 1_999_999_999)
        #expect(c.oauthRefreshToken == Data("refresh".utf8))
        #expect(c.capabilities == ["authtype", "state"])
        #expect(c.wwwAuth == ["Basic realm=\"x\""])
        #expect(c.authType == "Bearer")
        #expect(c.credential == Data("abc".utf8))
        #expect(c.state == ["other:1"])
    }

    @Test("end of input without a blank line, CRLF line ends, a later line replaces, an empty key[]= empties a list")
    func lineRules() throws {
        let c = try parse("protocol=http\r\nhost=a\r\nhost=b\ncapability[]=x\ncapability[]=\ncapability[]=y\nusername=")
        #expect(c.scheme == "http")
        #expect(c.host == "b")
        #expect(c.port == nil)
        #expect(c.capabilities == ["y"])
        #expect(c.username == "")
        #expect(try parse("").scheme == nil)
        #expect(try parse("\nprotocol=http\n").scheme == nil)
    }

    @Test("hosts with ports, IPv6 literals, and ports that are not ports")
    func hosts() throws {
        #expect(try parse("host=[::1]:8080\n").host == "[::1]")
        #expect(try parse("host=[::1]:8080\n").port == 8080)
        #expect(try parse("host=[fe80::1]\n").port == nil)
        #expect(try parse("host=h:1\n").port == 1)
        #expect(try parse("host=h:65535\n").port == 65535)
        for bad in ["host=h:0", "host=h:65536", "host=h:", "host=h:x", "host=h:+80", "host=[::1]x"] {
            #expect(throws: GitCredentialInputError.self, "\(bad)") { try parse(bad + "\n") }
        }
    }

    @Test("refused: no '=', a NUL byte, a CR inside an attribute, non-UTF-8 text, overlong lines and input")
    func refused() throws {
        #expect(throws: GitCredentialInputError.self) { try parse("protocol=https\nhost=x\npassword=abc\ndef\n") }
        #expect(throws: GitCredentialInputError.self) { try parse("host=a\u{0}b\n") }
        #expect(throws: GitCredentialInputError.self) { try parse("host=a\rb\n") }
        #expect(throws: GitCredentialInputError.self) { try GitCredential.parse([0x68, 0x6F, 0x73, 0x74, 0x3D, 0xFF, 0x0A]) }
        let long = "password=" + String(repeating: "x", count: GitCredential.maximumLineLength) + "\n"
        #expect(throws: GitCredentialInputError.self) { try parse(long) }
        let fits = "password=" + String(repeating: "x", count: GitCredential.maximumLineLength - 9) + "\n"
        #expect(try parse(fits).password?.count == GitCredential.maximumLineLength - 9)
        let many = String(repeating: "x=" + String(repeating: "y", count: 60_000) + "\n", count: 20)
        #expect(throws: GitCredentialInputError.self) { try parse(many) }
        // A password that is not UTF-8 is kept byte for byte.
        let binary = try GitCredential.parse(Array("password=".utf8) + [0xFF, 0xFE, 0x0A])
        #expect(binary.password == Data([0xFF, 0xFE]))
    }

    @Test("a refusal never repeats a value; descriptions never show a secret")
    func noSecretsInText() throws {
        do throws(GitCredentialInputError) {
            _ = try GitCredential.parse(Array("password=hunter2\nhunter3\n".utf8))
            Issue.record("accepted a line without '='")
        } catch {
            #expect(!error.message.contains("hunter"))
        }
        var c = try parse("protocol=https\nhost=h\nusername=u\npassword=hunter2\noauth_refresh_token=tok3n\ncredential=cr3d\n")
        c.passwordExpiryUTC = 5
        for text in [c.description, c.debugDescription, String(describing: c), String(reflecting: c), "\(Mirror(reflecting: c).children.map { "\($0.value)" })"] {
            #expect(!text.contains("hunter2") && !text.contains("tok3n") && !text.contains("cr3d"), "\(text)")
        }
        #expect(c.description.contains("https://h"))
    }

    @Test("the answer: key=value lines; a value with a newline is refused whole")
    func answer() throws {
        var c = GitCredential(username: "u@x:y", password: Data("pw".utf8), passwordExpiryUTC: 42, oauthRefreshToken: Data("t".utf8))
        let text = String(decoding: try c.encodeAnswer(extraLines: [("capability[]", "state")]), as: UTF8.self)
        #expect(text == "username=u@x:y\npassword=pw\npassword_expiry_utc=42\noauth_refresh_token=t\ncapability[]=state\n")
        c.password = Data("a\nb".utf8)
        #expect(throws: GitCredentialInputError.self) { try c.encodeAnswer() }
    }

    @Test("the command line: options before the action; unknown options refused")
    func commandLine() throws {
        let o = try GitCredentialCommand.parse(["--timeout=30", "--backend", "file", "get"])
        #expect(o == GitCredentialCommand.Options(timeout: 30, backend: "file", action: "get"))
        #expect(try GitCredentialCommand.parse(["store"]).action == "store")
        #expect(try GitCredentialCommand.parse(["--help"]).help)
        for bad in [
            ["--timeout=0", "get"], ["--timeout=x", "get"], ["--frobnicate", "get"], ["get", "store"], ["--backend"],
            ["--timeout=9223372036854775807", "store"], ["--timeout=3153600001", "store"], ["--timeout=-5", "store"],
        ] {
            #expect(throws: GitCredentialInputError.self, "\(bad)") { try GitCredentialCommand.parse(bad) }
        }
    }
}
