import Foundation
import SecItem
import SecItemCore
import SecItemSQLite
import SecItemSealedStore
import SecItemTestSupport
import SecItemConformance
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The session key cache end to end (the kernel's real user keyring, the built `secitem`)
/// and `secitem rekey` between key sources. One test at a time: `secitem lock` drops every
/// cached key of the user, which would turn another of these tests' hits into misses.
@Suite(.serialized) struct KeyCacheTests {
    // MARK: Counting scrypt

    /// A preloaded library that counts `EVP_PBE_scrypt` calls of a process into the file
    /// `SCRYPT_COUNT_FILE` names: what says, from outside and with no hook in `secitem`,
    /// whether a process ran scrypt. Built once per test run with the C compiler.
    static let scryptCounter: Result<String, TestSetupError> = {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("secitem-scrypt-counter-\(getpid())")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let source = dir.appendingPathComponent("counter.c").path
        let library = dir.appendingPathComponent("counter.so").path
        let code = """
            #define _GNU_SOURCE
            #include <dlfcn.h>
            #include <fcntl.h>
            #include <stddef.h>
            #include <stdint.h>
            #include <stdlib.h>
            #include <unistd.h>
            typedef int (*scrypt_fn)(const char *, size_t, const unsigned char *, size_t, uint64_t, uint64_t, uint64_t,
                                     uint64_t, unsigned char *, size_t);
            int EVP_PBE_scrypt(const char *pass, size_t passlen, const unsigned char *salt, size_t saltlen, uint64_t n,
                               uint64_t r, uint64_t p, uint64_t maxmem, unsigned char *key, size_t keylen) {
                const char *path = getenv("SCRYPT_COUNT_FILE");
                if (path != NULL && key != NULL) {
                    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
                    if (fd >= 0) {
                        if (write(fd, "s", 1) != 1) _exit(99);
                        close(fd);
                    }
                }
                scrypt_fn real = (scrypt_fn)dlvsym(RTLD_NEXT, "EVP_PBE_scrypt", "OPENSSL_3.0.0");
                if (real == NULL) real = (scrypt_fn)dlsym(RTLD_NEXT, "EVP_PBE_scrypt");
                if (real == NULL) _exit(98);
                return real(pass, passlen, salt, saltlen, n, r, p, maxmem, key, keylen);
            }
            """
        do {
            try Data(code.utf8).write(to: URL(fileURLWithPath: source))
            let compiler = try (try? Executables.which("cc")) ?? Executables.which("clang")
            let built = try ChildProcess.run(compiler, ["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o", library, source, "-ldl"])
            guard built.status == 0 else { return .failure(TestSetupError("cannot build the scrypt counter: \(built.stderr)")) }
            return .success(library)
        } catch let error as TestSetupError {
            return .failure(error)
        } catch {
            return .failure(TestSetupError("\(error)"))
        }
    }()

    /// Runs `secitem arguments` with the counter preloaded.
    /// - Returns: What it left, how many times it ran scrypt, and how long it took.
    func counted(_ cli: CLI, _ arguments: [String], environment: [String: String?] = [:])
        throws -> (result: CLI.Result, scrypts: Int, seconds: Double)
    {
        let library = try Self.scryptCounter.get()
        let countFile = cli.root.appendingPathComponent("scrypt-count-\(UUID().uuidString)").path
        var env = environment
        env["LD_PRELOAD"] = library
        env["SCRYPT_COUNT_FILE"] = countFile
        let start = ContinuousClock.now
        let result = try cli.run(arguments, environment: env)
        let elapsed = ContinuousClock.now - start
        let count = (try? Data(contentsOf: URL(fileURLWithPath: countFile)).count) ?? 0
        try? FileManager.default.removeItem(atPath: countFile)
        return (result, count, Double(elapsed.components.attoseconds) / 1e18 + Double(elapsed.components.seconds))
    }

    /// A CLI whose file store has a passphrase from a passphrase file (as a script would use it).
    func passphraseCLI(_ passphrase: String = "correct horse battery") throws -> (CLI, [String: String?]) {
        let cli = try CLI(backend: "file", bus: false)
        let file = cli.root.appendingPathComponent("passphrase").path
        try Data(passphrase.utf8).write(to: URL(fileURLWithPath: file))
        chmod(file, 0o600)
        return (cli, ["SECITEM_PASSPHRASE_FILE": file])
    }

    @Test("the second secitem find -w in a new process runs no scrypt; secitem lock makes the next one run it again")
    func secondCallSkipsScrypt() throws {
        let (cli, env) = try passphraseCLI()
        defer { cli.remove() }
        #expect(try cli.run(["add-generic-password", "-a", "me2", "-s", "cached", "-w", "-"], stdin: "x", environment: env).status == 0)
        #expect(try cli.run(["lock"]).status == 0)
        let first = try counted(cli, ["find-generic-password", "-a", "me2", "-s", "cached", "-w"], environment: env)
        #expect(first.result.status == 0, "\(first.result.stderr)")
        #expect(first.result.stdout == "x\n")
        #expect(first.scrypts == 1)
        let second = try counted(cli, ["find-generic-password", "-a", "me2", "-s", "cached", "-w"], environment: env)
        #expect(second.result.stdout == "x\n")
        #expect(second.scrypts == 0, "the second process ran scrypt")
        let third = try counted(cli, ["find-generic-password", "-a", "me2", "-s", "cached", "-w"], environment: env)
        #expect(third.scrypts == 0)
        let lock = try cli.run(["lock"])
        #expect(lock.status == 0)
        // At least this store's key: the user keyring is the user's, and other tests running
        // beside this suite cache the keys of their own passphrase stores there too.
        let dropped = lock.stderr.split(separator: " ").drop { $0 != "dropped" }.dropFirst().first.flatMap { Int($0) }
        #expect((dropped ?? 0) >= 1, "\(lock.stderr)")
        let after = try counted(cli, ["find-generic-password", "-a", "me2", "-s", "cached", "-w"], environment: env)
        #expect(after.result.stdout == "x\n")
        #expect(after.scrypts == 1, "secitem lock did not force scrypt")
        print("key cache: find -w with scrypt \(Int(first.seconds * 1000)) ms, cached \(Int(second.seconds * 1000)) and \(Int(third.seconds * 1000)) ms, after lock \(Int(after.seconds * 1000)) ms")
    }

    @Test("a wrong passphrase is refused while the right one's key is cached; SECITEM_KEY_CACHE_TIMEOUT=0 caches nothing")
    func wrongPassphraseAndOff() throws {
        let (cli, env) = try passphraseCLI()
        defer { cli.remove() }
        #expect(try cli.run(["add-generic-password", "-a", "me", "-s", "w", "-w", "-"], stdin: "y", environment: env).status == 0)
        #expect(try counted(cli, ["find-generic-password", "-s", "w", "-w"], environment: env).scrypts == 0)
        let wrong = try counted(cli, ["find-generic-password", "-s", "w", "-w"], environment: ["SECITEM_PASSPHRASE": "not it"])
        #expect(wrong.result.status == 51, "\(wrong.result.stderr)")
        #expect(wrong.result.stdout.isEmpty)
        #expect(wrong.scrypts == 1)
        #expect(try cli.run(["lock"]).status == 0)
        var off = env
        off["SECITEM_KEY_CACHE_TIMEOUT"] = "0"
        for _ in 0..<2 {
            let run = try counted(cli, ["find-generic-password", "-s", "w", "-w"], environment: off)
            #expect(run.result.stdout == "y\n")
            #expect(run.scrypts == 1)
        }
        var soon = env
        soon["SECITEM_KEY_CACHE_TIMEOUT"] = "soon"
        let bad = try cli.run(["find-generic-password", "-s", "w", "-w"], environment: soon)
        #expect(bad.status != 0, "\(bad.stderr)")
        #expect(bad.stderr.contains("SECITEM_KEY_CACHE_TIMEOUT"))
        #expect(bad.stdout.isEmpty)
    }

    // MARK: The kernel's side

    /// A passphrase store's header whose scrypt cost is out of range: any attempt to run
    /// scrypt for it fails at once (`errSecParam`), so opening it succeeds only from the cache.
    private func unscryptableHeader() throws -> (KeychainHeader, SecretBytes) {
        let kek = try SecretBytes(random: 32)
        var header = KeychainHeader(
            protection: .passphrase, scrypt: ScryptParameters(logN: 22, r: 32, p: 16), salt: Array(repeating: 3, count: 16),
            wrappedDataKey: [], epoch: 1)
        try header.wrap(try SecretBytes(random: 32), kek: kek)
        return (header, kek)
    }

    @Test("a cached key opens the store without scrypt; once expired, the key is derived again")
    func expiry() throws {
        let store = "/tmp/secitem-expiry-\(UUID().uuidString)"
        let context = KeySourceContext(store: store, keyCacheTimeout: 1)
        let (header, kek) = try unscryptableHeader()
        defer { SessionKeyCache.drop(store: store, header: header) }
        let name = SessionKeyCache.name(store: store, header: header)
        Passphrase("pw").withUTF8 { SessionKeyCache.store(name, kek: kek, proof: $0, timeout: 1) }
        // Within the second: a hit, no scrypt (which would throw for this header).
        let hit = try KeyEncryptionKey.forExisting(.passphrase("pw"), context, header: header)
        #expect(hit.kek.equals(kek))
        // The kernel expires it: wait until it no longer finds the key.
        try Wait.until("the kernel to expire the cached key", interval: .milliseconds(20)) {
            SessionKeyCache.serial(store: store, header: header) == nil
        }
        #expect(Passphrase("pw").withUTF8 { SessionKeyCache.lookup(name, proof: $0) } == nil)
        // Expired: the source derives again (here scrypt refuses the cost: proof that it ran).
        do {
            _ = try KeyEncryptionKey.forExisting(.passphrase("pw"), context, header: header)
            Issue.record("an expired key opened the store")
        } catch {
            #expect(error.status == errSecParam)
            #expect(error.detail?.contains("scrypt") == true)
        }
    }

    @Test("another user id can neither read nor find the cached key", .enabled(if: getuid() == 0, "needs root to switch user ids"))
    func anotherUserCannotRead() throws {
        let store = "/tmp/secitem-uid-\(UUID().uuidString)"
        let (header, kek) = try unscryptableHeader()
        defer { SessionKeyCache.drop(store: store, header: header) }
        let name = SessionKeyCache.name(store: store, header: header)
        Passphrase("pw").withUTF8 { SessionKeyCache.store(name, kek: kek, proof: $0, timeout: 60) }
        let serial = try #require(SessionKeyCache.serial(store: store, header: header))
        let keyctl = try Executables.which("keyctl")
        let setpriv = try Executables.which("setpriv")
        // The owner can (the control: the command below would show a readable key).
        let own = try ChildProcess.run(keyctl, ["pipe", "\(serial)"])
        #expect(own.status == 0, "\(own.stderr)")
        #expect(own.stdoutData.count == 65)
        let asNobody = ["--reuid=65534", "--regid=65534", "--clear-groups", "--"]
        let read = try ChildProcess.run(setpriv, asNobody + [keyctl, "pipe", "\(serial)"])
        #expect(read.status != 0)
        #expect(read.stdoutData.isEmpty)
        #expect(read.stderr.contains("Permission denied"), "\(read.stderr)")
        let describe = try ChildProcess.run(setpriv, asNobody + [keyctl, "describe", "\(serial)"])
        #expect(describe.status != 0)
        let search = try ChildProcess.run(setpriv, asNobody + [keyctl, "search", "@u", "user", name])
        #expect(search.status != 0)
        let listed = try ChildProcess.run(setpriv, asNobody + ["/bin/cat", "/proc/keys"])
        #expect(listed.status == 0)
        #expect(!listed.stdout.contains(String(serial, radix: 16)) && !listed.stdout.contains(name))
        // And its permissions say so: possessor and user, nothing for group or other.
        let rdescribe = try ChildProcess.run(keyctl, ["rdescribe", "\(serial)"])
        let fields = rdescribe.stdout.split(separator: ";")
        #expect(fields.count >= 5 && fields[0] == "user" && fields[3] == "3f3f0000", "\(rdescribe.stdout)")
    }

    // MARK: rekey between sources

    @Test("rekey moves a store between key sources and back, every item kept, the old key refused each time")
    func rekeyBetweenSources() throws {
        let (cli, passphraseEnv) = try passphraseCLI("first passphrase")
        defer { cli.remove() }
        for i in 0..<3 {
            #expect(try cli.run(["add-generic-password", "-a", "a\(i)", "-s", "moved", "-w", "-"], stdin: "v\(i)", environment: passphraseEnv).status == 0)
        }
        func secrets(_ env: [String: String?]) throws -> [String]? {
            var out: [String] = []
            for i in 0..<3 {
                let found = try cli.run(["find-generic-password", "-a", "a\(i)", "-s", "moved", "-w"], environment: env)
                guard found.status == 0 else { return nil }
                out.append(found.stdout)
            }
            return out
        }
        let expected = ["v0\n", "v1\n", "v2\n"]
        let keyFile = cli.root.appendingPathComponent("store.key").path
        try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: URL(fileURLWithPath: keyFile))
        chmod(keyFile, 0o600)
        let keyFileEnv: [String: String?] = ["SECITEM_KEY_FILE": keyFile]

        // passphrase → key file
        let toFile = try cli.run(["rekey", "--new-key-source", "key-file", "--new-key-file", keyFile], environment: passphraseEnv)
        #expect(toFile.status == 0, "\(toFile.stderr)")
        #expect(try secrets(keyFileEnv) == expected)
        #expect(try cli.run(["find-generic-password", "-a", "a0", "-s", "moved"], environment: passphraseEnv).status == 51)
        // key file → passphrase (a new one)
        var second: [String: String?] = keyFileEnv
        second["SECITEM_NEW_PASSPHRASE"] = "second passphrase"
        let toPassphrase = try cli.run(["rekey", "--new-key-source", "passphrase"], environment: second)
        #expect(toPassphrase.status == 0, "\(toPassphrase.stderr)")
        let secondEnv: [String: String?] = ["SECITEM_PASSPHRASE": "second passphrase"]
        #expect(try secrets(secondEnv) == expected)
        #expect(try cli.run(["find-generic-password", "-a", "a0", "-s", "moved"], environment: keyFileEnv).status == 51)
        #expect(try cli.run(["find-generic-password", "-a", "a0", "-s", "moved"], environment: passphraseEnv).status == 51)
        // passphrase → the generated key file, and back to a key file
        let toAutomatic = try cli.run(["rekey", "--new-key-source", "automatic"], environment: secondEnv)
        #expect(toAutomatic.status == 0, "\(toAutomatic.stderr)")
        #expect(try secrets([:]) == expected)
        #expect(try cli.run(["find-generic-password", "-a", "a0", "-s", "moved"], environment: secondEnv).status == 51)
        let back = try cli.run(["rekey", "--new-key-file", keyFile])
        #expect(back.status == 0, "\(back.stderr)")
        #expect(try secrets(keyFileEnv) == expected)
        let verify = try cli.run(["verify"], environment: keyFileEnv)
        #expect(verify.status == 0 && verify.stdout.hasSuffix(": ok\n"), "\(verify.stdout)")

        // Refusals change nothing: an unknown source, a key source without its setting,
        // mismatched options.
        for (arguments, status) in [
            (["rekey", "--new-key-source", "nosuch"], 2), (["rekey", "--new-key-source", "key-file"], 2),
            (["rekey", "--new-passphrase", "--new-key-source", "key-file"], 2), (["rekey", "--new-key-source", "passphrase", "--rotate"], 2),
        ] {
            let refused = try cli.run(arguments, environment: keyFileEnv)
            #expect(refused.status == Int32(status), "\(arguments): \(refused.stderr)")
        }
        #expect(try secrets(keyFileEnv) == expected)
    }

    @Test("diagnose names the key source, what it protects against, and the key cache")
    func diagnose() throws {
        let (cli, env) = try passphraseCLI()
        defer { cli.remove() }
        let passphrase = try cli.run(["diagnose"], environment: env)
        #expect(passphrase.stdout.contains("key source: passphrase: stops disk theft"), "\(passphrase.stdout)")
        #expect(passphrase.stdout.contains("not malware running as you"))
        #expect(passphrase.stdout.contains("key cache: the derived key stays 300 s"))
        var off = env
        off["SECITEM_KEY_CACHE_TIMEOUT"] = "0"
        #expect(try cli.run(["diagnose"], environment: off).stdout.contains("key cache: off"))
        let automatic = try cli.run(["diagnose"])
        #expect(automatic.stdout.contains("key source: automatic: stops a copy of the database alone"), "\(automatic.stdout)")
        #expect(!automatic.stdout.contains("key cache:"))
    }

    // MARK: Interrupted rekey

    @Test("a rekey killed at any instant leaves a store that opens with the old key or the new one, never neither")
    func interruptedRekey() throws {
        var random = SeededRandom()
        print("interruptedRekey: seed \(random.seed) (SECITEM_TEST_SEED replays)")
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        let keyFile = cli.root.appendingPathComponent("old.key").path
        try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: URL(fileURLWithPath: keyFile))
        chmod(keyFile, 0o600)
        let pristine = cli.root.appendingPathComponent("pristine.db").path
        let itemCount = 1500
        do {
            let backend = try SQLiteBackend(configuration: SQLiteBackend.Configuration(path: pristine, keySource: .keyFile(keyFile)))
            defer { backend.close() }
            let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["rekey"]))
            try backend.inBulkTransaction {
                for i in 0..<itemCount {
                    _ = try client.addItem([
                        kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "a\(i)",
                        kSecAttrService as String: "interrupted", kSecValueData as String: Data("secret \(i)".utf8),
                    ])
                }
            }
        }
        func count(_ path: String, _ source: SealedStoreKeySource) -> Int? {
            guard let backend = try? SQLiteBackend(configuration: SQLiteBackend.Configuration(path: path, keySource: source)) else {
                return nil
            }
            defer { backend.close() }
            let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["rekey"]))
            let all = try? client.copyMatchingItems([
                kSecClass as String: kSecClassGenericPassword, kSecMatchLimit as String: kSecMatchLimitAll,
                kSecReturnData as String: true,
            ])
            return (all as? [Data])?.count
        }
        let newPassphrase = "the new passphrase"
        func copy(_ round: Int) throws -> String {
            let path = cli.root.appendingPathComponent("round-\(round).db").path
            try FileManager.default.copyItem(atPath: pristine, toPath: path)
            return path
        }
        func rekey(_ path: String) throws -> ChildProcess {
            try cli.start(
                ["rekey", "--new-key-source", "passphrase"],
                environment: ["SECITEM_FILE": path, "SECITEM_KEY_FILE": keyFile, "SECITEM_NEW_PASSPHRASE": newPassphrase,
                              "SECITEM_KEY_CACHE_TIMEOUT": "0"])
        }
        // One whole rekey: how long it takes, and that it moves the store.
        let whole = try copy(0)
        let start = ContinuousClock.now
        let done = try rekey(whole).finish()
        let duration = ContinuousClock.now - start
        #expect(done.status == 0, "\(done.stderr)")
        #expect(count(whole, .passphrase(newPassphrase)) == itemCount)
        #expect(count(whole, .keyFile(keyFile)) == nil)
        // Then kill rekeys at random instants across that span.
        var outcomes = (old: 0, new: 0)
        let rounds = 8
        for round in 1...rounds {
            let path = try copy(round)
            let fraction = Double(random.next() % 1000) / 1000 * 1.1
            let child = try rekey(path)
            usleep(UInt32(max(0, Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18) * fraction * 1_000_000))
            child.signal(SIGKILL)
            _ = try? child.finish()
            let old = count(path, .keyFile(keyFile))
            let new = count(path, .passphrase(newPassphrase))
            #expect((old == itemCount) != (new == itemCount), "round \(round) at \(Int(fraction * 100))%: old key \(old.map(String.init) ?? "refused"), new key \(new.map(String.init) ?? "refused")")
            if old == itemCount { outcomes.old += 1 }
            if new == itemCount { outcomes.new += 1 }
        }
        print("interruptedRekey: one rekey of \(itemCount) items took \(duration); \(rounds) kills left \(outcomes.old) stores on the old key, \(outcomes.new) on the new, none on neither")
    }
}
