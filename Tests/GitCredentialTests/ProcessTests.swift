import Foundation
import SecItemTestSupport
import Testing

/// The built executables, run as git runs them, each test with a private home and keychain.
struct HelperProcess {
    /// The directory holding the package's built executables (next to the test bundle).
    static let binDirectory: URL = {
        let helper = (try? Executables.built("git-credential-secitem")) ?? "/nonexistent/git-credential-secitem"
        return URL(fileURLWithPath: helper).deletingLastPathComponent()
    }()
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scripts")

    typealias Result = ProcessOutput

    let root: URL
    var environment: [String: String]

    /// - Parameter backend: `file` or `secret-service`; a fresh file keychain or a fresh Secret Service namespace.
    init(backend: String) throws {
        _ = try Executables.built("git-credential-secitem")  // fails loudly when it was not built
        root = FileManager.default.temporaryDirectory.appendingPathComponent("secitem-git-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SECITEM_") && !$0.key.hasPrefix("GIT_") }
        env["HOME"] = root.appendingPathComponent("home").path
        env["XDG_DATA_HOME"] = root.appendingPathComponent("data").path
        env["XDG_CONFIG_HOME"] = root.appendingPathComponent("config").path
        env["SECITEM_BACKEND"] = backend
        env["SECITEM_SECRET_SERVICE_NAMESPACE"] = UUID().uuidString
        env["PATH"] = Self.binDirectory.path + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        if backend == "secret-service" {
            try TestService.secretService.require()
        }
        environment = env
    }

    enum Failure: Error { case noSecretService, noGitSuite }

    /// Runs `executable arguments…` (a name in the build directory, or a path) with `stdin`.
    @discardableResult
    func run(_ executable: String, _ arguments: [String], stdin: String = "", environment extra: [String: String?] = [:],
             timeout: Duration = .seconds(120)) throws -> Result
    {
        let path = executable.hasPrefix("/") ? executable : Self.binDirectory.appendingPathComponent(executable).path
        var env = environment
        for (key, value) in extra { env[key] = value }
        return try ChildProcess.run(path, arguments, environment: env, stdin: Data(stdin.utf8), timeout: timeout)
    }

    func helper(_ action: String, _ input: String, options: [String] = []) throws -> Result {
        try run("git-credential-secitem", options + [action], stdin: input)
    }

    func remove() { try? FileManager.default.removeItem(at: root) }
}

enum Backend: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case file
    case secretService = "secret-service"
    var testDescription: String { rawValue }
}

@Suite("git-credential-secitem as a process, on every backend")
struct ProcessTests {
    @Test("store, get, erase; secitem find-internet-password sees what git stored; the CLI verb is the same helper",
          arguments: Backend.allCases)
    func lifecycle(backend: Backend) throws {
        let p = try HelperProcess(backend: backend.rawValue)
        defer { p.remove() }
        let stored = try p.helper("store", "protocol=https\nhost=github.com\nusername=octo@corp:x\npassword=ghp_s3cret\n\n")
        #expect(stored.status == 0, "\(stored.stderr)")
        #expect(stored.stdout.isEmpty && stored.stderr.isEmpty, "\(stored.stderr)")
        let get = try p.helper("get", "protocol=https\nhost=github.com\n")
        #expect(get.status == 0, "\(get.stderr)")
        #expect(get.stdout == "username=octo@corp:x\npassword=ghp_s3cret\n")
        let viaCLI = try p.run("secitem", ["credential-helper", "get"], stdin: "protocol=https\nhost=github.com\n")
        #expect(viaCLI.stdout == get.stdout, "\(viaCLI.stderr)")
        let find = try p.run("secitem", ["find-internet-password", "-s", "github.com", "-w"])
        #expect(find.status == 0, "\(find.stderr)")
        #expect(find.stdout == "ghp_s3cret\n")
        let attributes = try p.run("secitem", ["find-internet-password", "-s", "github.com"])
        for fragment in ["\"ptcl\"<blob>=\"htps\"", "\"acct\"<blob>=\"octo@corp:x\"", "\"atyp\"<blob>=\"dflt\"", "\"port\"<sint32>=0"] {
            #expect(attributes.stdout.contains(fragment), "missing \(fragment) in \(attributes.stdout)")
        }
        let erase = try p.run("secitem", ["credential-helper", "erase"], stdin: "protocol=https\nhost=github.com\nusername=octo@corp:x\n")
        #expect(erase.status == 0, "\(erase.stderr)")
        #expect(try p.helper("get", "protocol=https\nhost=github.com\n").stdout.isEmpty)
        #expect(try p.run("secitem", ["find-internet-password", "-s", "github.com"]).status == 44)
    }

    @Test("very long values round-trip on the real stores; one over the store's attribute limit is refused whole",
          arguments: Backend.allCases)
    func longValues(backend: Backend) throws {
        let p = try HelperProcess(backend: backend.rawValue)
        defer { p.remove() }
        let host = String(repeating: "h", count: 2000) + ".example"
        let user = "user@corp:" + String(repeating: "u", count: 4000)
        let password = String(repeating: "p", count: 60_000)
        let store = try p.helper("store", "protocol=https\nhost=\(host)\nusername=\(user)\npassword=\(password)\n")
        #expect(store.status == 0, "\(store.stderr.prefix(300))")
        let get = try p.helper("get", "protocol=https\nhost=\(host)\n")
        #expect(get.stdout == "username=\(user)\npassword=\(password)\n")
        let huge = String(repeating: "x", count: 20_000)
        let refused = try p.helper("store", "protocol=https\nhost=big.example\nusername=\(huge)\npassword=secret-x\n")
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("cannot store the credential"), "\(refused.stderr.prefix(300))")
        #expect(!refused.stderr.contains("secret-x"))
        #expect(try p.helper("get", "protocol=https\nhost=big.example\n").stdout.isEmpty)
    }

    @Test("a keychain that cannot be opened: a message on stderr, an empty answer, nothing prompted")
    func unusableKeychain() throws {
        let p = try HelperProcess(backend: "file")
        defer { p.remove() }
        let missingKey = p.root.appendingPathComponent("no-such.key").path
        let env: [String: String?] = ["SECITEM_KEY_SOURCE": "key-file", "SECITEM_KEY_FILE": missingKey]
        let get = try p.run("git-credential-secitem", ["get"], stdin: "protocol=https\nhost=h\n", environment: env)
        #expect(get.status == 1)
        #expect(get.stdout.isEmpty)
        #expect(get.stderr.hasPrefix("git-credential-secitem: cannot open the keychain"), "\(get.stderr)")
        #expect(get.stderr.contains("git will ask for the password"), "\(get.stderr)")
        let store = try p.run("git-credential-secitem", ["store"], stdin: "protocol=https\nhost=h\nusername=u\npassword=pw-not-shown\n",
                              environment: env)
        #expect(store.status == 1)
        #expect(!store.stderr.contains("pw-not-shown"))
        // No bus at all and the Secret Service asked for: also a message, not a hang or a prompt.
        let noBus = try p.run("git-credential-secitem", ["--backend=secret-service", "get"], stdin: "protocol=https\nhost=h\n",
                              environment: ["DBUS_SESSION_BUS_ADDRESS": nil, "XDG_RUNTIME_DIR": nil])
        #expect(noBus.status == 1)
        #expect(noBus.stdout.isEmpty)
        #expect(noBus.stderr.contains("cannot open the keychain"), "\(noBus.stderr)")
    }

    @Test("usage: --help, a missing action, an unknown option; unknown actions are ignored")
    func usage() throws {
        let p = try HelperProcess(backend: "file")
        defer { p.remove() }
        let help = try p.run("git-credential-secitem", ["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("credential.helper secitem"))
        #expect(try p.run("secitem", ["help", "credential-helper"]).stdout.contains("--timeout=SECONDS"))
        #expect(try p.run("secitem", ["--help"]).stdout.contains("credential-helper"))
        #expect(try p.run("git-credential-secitem", []).status == 2)
        let unknown = try p.run("git-credential-secitem", ["--frobnicate", "get"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("unknown option '--frobnicate'"))
        let ignored = try p.run("git-credential-secitem", ["capabilities"], stdin: "protocol=https\nhost=h\n")
        #expect(ignored.status == 0 && ignored.stdout.isEmpty && ignored.stderr.isEmpty)
    }

    @Test("a --timeout too large to add to the clock: a clear message and status 2, no crash, nothing stored (issue 27, 10)")
    func hugeTimeout() throws {
        let p = try HelperProcess(backend: "file")
        defer { p.remove() }
        let credential = "protocol=https\nhost=timeout.example\nusername=u\npassword=pw-not-shown\n"
        for timeout in ["9223372036854775807", "9223372036854775808", "3153600001", "-1", "0x10", "99999999999999999999999"] {
            let stored = try p.helper("store", credential, options: ["--timeout=\(timeout)"])
            #expect(stored.status == 2, "--timeout=\(timeout): status \(stored.status) (132 is the overflow trap), \(stored.stderr)")
            #expect(stored.stderr.contains("--timeout needs"), "\(stored.stderr)")
            #expect(!stored.stderr.contains("pw-not-shown"))
        }
        #expect(try p.helper("get", "protocol=https\nhost=timeout.example\n").stdout.isEmpty)
        // The largest accepted timeout (100 years) stores, and get returns the credential.
        #expect(try p.helper("store", credential, options: ["--timeout=3153600000"]).status == 0)
        #expect(try p.helper("get", "protocol=https\nhost=timeout.example\n").stdout.hasPrefix("username=u\npassword=pw-not-shown\npassword_expiry_utc="))
        // The same through the secitem command's verb.
        let viaCLI = try p.run("secitem", ["credential-helper", "--timeout=9223372036854775807", "store"], stdin: credential)
        #expect(viaCLI.status == 2, "\(viaCLI.stderr)")
    }

    @Test("SECITEM_PASSPHRASE and SECITEM_POSTGRESQL_URL are wiped from the helper's /proc/PID/environ, and still used (issue 27, 13)")
    func environmentWiped() throws {
        var p = try HelperProcess(backend: "file")
        defer { p.remove() }
        let marker = "helper-passphrase-\(UUID().uuidString)"
        let urlMarker = "helper-url-secret-\(UUID().uuidString)"
        p.environment["SECITEM_PASSPHRASE"] = marker
        p.environment["SECITEM_KEY_SOURCE"] = "passphrase"
        p.environment["SECITEM_POSTGRESQL_URL"] = "host=/nonexistent dbname=x password=\(urlMarker)"
        #expect(try p.helper("store", "protocol=https\nhost=h\nusername=u\npassword=pw\n").status == 0)
        for command in [["git-credential-secitem", "get"], ["secitem", "credential-helper", "get"]] {
            // Blocked reading git's input: by then the environment must be wiped.
            let child = try ChildProcess(
                HelperProcess.binDirectory.appendingPathComponent(command[0]).path, Array(command.dropFirst()),
                environment: p.environment)
            let pid = child.processIdentifier
            var environ = Data()
            let deadline = Date().addingTimeInterval(20)
            repeat {
                let cmdline = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()
                environ = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))) ?? Data()
                if cmdline.range(of: Data("get".utf8)) != nil, !environ.isEmpty, environ.range(of: Data(marker.utf8)) == nil,
                    environ.range(of: Data(urlMarker.utf8)) == nil
                {
                    break
                }
                usleep(10_000)
            } while Date() < deadline
            #expect(!environ.isEmpty, "\(command)")
            #expect(environ.range(of: Data(marker.utf8)) == nil, "\(command): the passphrase is still in /proc/\(pid)/environ")
            #expect(environ.range(of: Data(urlMarker.utf8)) == nil, "\(command): the URL's password is still in /proc/\(pid)/environ")
            try child.send(Data("protocol=https\nhost=h\n\n".utf8))
            let answer = try child.finish()
            // The passphrase was still used: the keychain opened with it.
            #expect(answer.status == 0, "\(command): \(answer.stderr)")
            #expect(answer.stdout == "username=u\npassword=pw\n", "\(command)")
        }
    }

    @Test("input that git keeps open after the blank line: the helper answers without waiting for the end")
    func blankLineEndsInput() throws {
        let p = try HelperProcess(backend: "file")
        defer { p.remove() }
        #expect(try p.helper("store", "protocol=https\nhost=h\nusername=u\npassword=pw\n").status == 0)
        let child = try ChildProcess(
            HelperProcess.binDirectory.appendingPathComponent("git-credential-secitem").path, ["get"], environment: p.environment)
        try child.send(Data("protocol=https\nhost=h\n\n".utf8))
        // Standard input stays open: both lines of the answer must still come.
        #expect(try child.line(0) == "username=u")
        #expect(try child.line(1) == "password=pw")
        #expect(try child.finish().status == 0)
    }

    @Test("git's own helper tests (t0303-credential-external.sh, with the timeout cases) pass", arguments: Backend.allCases)
    func gitSuite(backend: Backend) throws {
        try TestService.gitTestSuite.require()
        guard let t = ProcessInfo.processInfo.environment["SECITEM_GIT_TEST_SUITE"], !t.isEmpty else {
            throw HelperProcess.Failure.noGitSuite
        }
        let p = try HelperProcess(backend: backend.rawValue)
        defer { p.remove() }
        let result = try p.run(
            "/bin/sh", [HelperProcess.scripts.appendingPathComponent("git-t0303.sh").path, t, HelperProcess.binDirectory.path,
                        p.root.appendingPathComponent("t0303").path], timeout: .seconds(300))
        #expect(result.status == 0, "t0303 failed on \(backend.rawValue):\n\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("# passed all 13 test(s)"), "\(result.stdout)")
        #expect(!result.stdout.contains("skipping timeout tests"))
    }

    @Test("git clone through an HTTP server with basic auth: stores, reuses, erases a rejected password",
          arguments: Backend.allCases)
    func cloneThroughHTTP(backend: Backend) throws {
        let p = try HelperProcess(backend: backend.rawValue)
        defer { p.remove() }
        let result = try p.run(
            "/bin/sh", [HelperProcess.scripts.appendingPathComponent("clone-through-http.sh").path, HelperProcess.binDirectory.path,
                        p.root.appendingPathComponent("clone").path], timeout: .seconds(300))
        #expect(result.status == 0, "on \(backend.rawValue):\n\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("all steps passed"))
    }

    @Test("a credential git-credential-libsecret stored is found by get; erasing it erases the libsecret item")
    func libsecretInterop() throws {
        try TestService.gitTestSuite.require()
        guard let libsecret = ProcessInfo.processInfo.environment["SECITEM_GIT_CREDENTIAL_LIBSECRET"], !libsecret.isEmpty else {
            throw HelperProcess.Failure.noGitSuite
        }
        let p = try HelperProcess(backend: "secret-service")
        defer { p.remove() }
        let host = "libsecret-\(UUID().uuidString.lowercased()).example"
        let credential = "protocol=https\nhost=\(host)\nusername=dave\npassword=ls-pass\n"
        let stored = try p.run(libsecret, ["store"], stdin: credential)
        #expect(stored.status == 0, "\(stored.stderr)")
        defer { _ = try? p.run(libsecret, ["erase"], stdin: "protocol=https\nhost=\(host)\n") }
        // Found through the Secret Service backend, read in place.
        let get = try p.helper("get", "protocol=https\nhost=\(host)\n")
        #expect(get.status == 0, "\(get.stderr)")
        #expect(get.stdout == "username=dave\npassword=ls-pass\n")
        // Not on the file backend: the libsecret item lives in the keyring.
        #expect(try p.run("git-credential-secitem", ["--backend=file", "get"], stdin: "protocol=https\nhost=\(host)\n").stdout.isEmpty)
        // git rejects the password: the helper's erase removes the libsecret item too.
        let erase = try p.helper("erase", credential)
        #expect(erase.status == 0, "\(erase.stderr)")
        #expect(try p.run(libsecret, ["get"], stdin: "protocol=https\nhost=\(host)\n").stdout.isEmpty)
        #expect(try p.helper("get", "protocol=https\nhost=\(host)\n").stdout.isEmpty)
    }

    @Test("GNOME NetworkPassword (GVfs) items are neither returned nor erased; git's own libsecret items are (issue 27, 11)")
    func gvfsItemsLeftAlone() throws {
        let p = try HelperProcess(backend: "secret-service")
        defer { p.remove() }
        let tool = try Executables.which("secret-tool")
        let host = "gvfs-\(UUID().uuidString.lowercased()).example"
        func store(_ label: String, _ secret: String, _ attributes: [String]) throws {
            let stored = try p.run(tool, ["store", "--label=\(label)"] + attributes, stdin: secret)
            #expect(stored.status == 0, "\(stored.stderr)")
        }
        func lookup(_ user: String) throws -> String {
            try p.run(tool, ["lookup", "server", host, "user", user]).stdout
        }
        // What GVfs stores for a WebDAV mount (davs, seen as https) and a GNOME password dialog for https.
        let network = ["xdg:schema", "org.gnome.keyring.NetworkPassword", "server", host]
        try store("dave@\(host)", "gvfs-dav", network + ["protocol", "davs", "user", "dave", "authtype", "basic"])
        try store("erin@\(host)", "gvfs-https", network + ["protocol", "https", "user", "erin", "domain", "CORP"])
        // git-credential-libsecret's own item (git 2.43 and later: schema org.git.Password).
        try store("Git: https://\(host)/", "git-pass", ["xdg:schema", "org.git.Password", "server", host, "protocol", "https", "user", "gina"])
        defer { for user in ["dave", "erin", "gina"] { _ = try? p.run(tool, ["clear", "server", host, "user", user]) } }

        #expect(try p.helper("get", "protocol=https\nhost=\(host)\n").stdout == "username=gina\npassword=git-pass\n")
        for user in ["dave", "erin"] {
            let get = try p.helper("get", "protocol=https\nhost=\(host)\nusername=\(user)\n")
            #expect(get.stdout.isEmpty, "a GNOME NetworkPassword item was returned: \(get.stdout)")
        }
        // An erase without a password (git credential reject with a URL): git's item goes, GVfs's stay.
        let erase = try p.helper("erase", "protocol=https\nhost=\(host)\n")
        #expect(erase.status == 0, "\(erase.stderr)")
        #expect(try lookup("gina").isEmpty)
        #expect(try lookup("dave") == "gvfs-dav", "GVfs's WebDAV password was erased")
        #expect(try lookup("erin") == "gvfs-https", "GNOME's https password was erased")
        // Asked for them (--foreign-items=all): returned, but erased only with their own password.
        let all = ["--foreign-items=all"]
        #expect(try p.helper("get", "protocol=https\nhost=\(host)\nusername=erin\n", options: all).stdout == "password=gvfs-https\n")
        #expect(try p.helper("erase", "protocol=https\nhost=\(host)\nusername=erin\n", options: all).status == 0)
        #expect(try lookup("erin") == "gvfs-https", "erased without the matching password")
        #expect(try p.helper("erase", "protocol=https\nhost=\(host)\nusername=erin\npassword=wrong\n", options: all).status == 0)
        #expect(try lookup("erin") == "gvfs-https")
        #expect(try p.helper("erase", "protocol=https\nhost=\(host)\nusername=erin\npassword=gvfs-https\n", options: all).status == 0)
        #expect(try lookup("erin").isEmpty)
        // --foreign-items=none: not even git's libsecret items.
        try store("Git: https://\(host)/", "git-pass-2", ["xdg:schema", "org.git.Password", "server", host, "protocol", "https", "user", "gina"])
        #expect(try p.helper("get", "protocol=https\nhost=\(host)\n", options: ["--foreign-items=none"]).stdout.isEmpty)
        #expect(try p.helper("get", "protocol=https\nhost=\(host)\n").stdout == "username=gina\npassword=git-pass-2\n")
        #expect(try p.helper("get", "protocol=https\nhost=\(host)\n", options: ["--foreign-items=bogus"]).status == 2)
    }
}
