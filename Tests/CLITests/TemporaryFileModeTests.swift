import Foundation
import Glibc
import SecItemConformance
import SecItemTestSupport
import Synchronization
import Testing
#if SECITEM_THREAD_SANITIZER
import SecItemCore  // its ThreadSanitizerMutex is this module's Mutex there
#endif

/// Watches a directory tree while a command runs and records every file or
/// directory that appears in it with any group or other permission bit, at any
/// moment: inotify (IN_CREATE and friends, new subdirectories watched as they
/// appear) and, between events, a tight rescan of the whole tree with `lstat`.
///
/// A file created with the umask's mode and tightened later is seen in that window;
/// entries present before the watch began are not judged.
final class ModeWatcher: @unchecked Sendable {
    // @unchecked: `state` is a Mutex; `thread` is touched by start/stop on the test's thread only.
    struct Violation: Sendable, CustomStringConvertible {
        var path: String
        var mode: UInt32
        var description: String { "\(path) mode \(String(mode & 0o7777, radix: 8))" }
    }

    private let root: String
    private let before: Set<String>
    private let state = Mutex<(stop: Bool, seen: Set<String>, violations: [Violation], done: Bool)>((false, [], [], false))
    private var thread: Thread?

    init(_ root: String) {
        self.root = root
        before = Set(Self.tree(root))
    }

    /// Every path under `root` (not `root` itself).
    static func tree(_ root: String) -> [String] {
        var out: [String] = []
        var pending = [root]
        while let dir = pending.popLast() {
            guard let handle = opendir(dir) else { continue }
            defer { closedir(handle) }
            while let entry = readdir(handle) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
                }
                if name == "." || name == ".." { continue }
                let path = dir + "/" + name
                out.append(path)
                if entry.pointee.d_type == UInt8(DT_DIR) { pending.append(path) }
            }
        }
        return out
    }

    private func judge(_ path: String) {
        guard !before.contains(path) else { return }
        var info = stat()
        guard lstat(path, &info) == 0 else { return }  // already gone
        state.withLock { s in
            s.seen.insert(path)
            if info.st_mode & 0o077 != 0 { s.violations.append(Violation(path: path, mode: info.st_mode)) }
        }
    }

    private let fd: Int32 = inotify_init1(Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC))
    private let watches = Mutex<[Int32: String]>([:])

    private func watch(_ dir: String) {
        let mask = UInt32(IN_CREATE | IN_MOVED_TO | IN_ATTRIB | IN_MODIFY | IN_CLOSE_WRITE | IN_OPEN)
        let wd = inotify_add_watch(fd, dir, mask)
        if wd >= 0 { watches.withLock { $0[wd] = dir } }
    }

    func start() {
        precondition(fd >= 0, "inotify_init1 failed")
        watch(root)
        for path in Self.tree(root) {
            var info = stat()
            if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { watch(path) }
        }
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            // Until stopped, then once more: what the command did last is judged too.
            var last = false
            while !last {
                last = state.withLock({ $0.stop })
                let fd = self.fd
                var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                _ = poll(&pfd, 1, 1)
                while true {
                    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                    guard n > 0 else { break }
                    var offset = 0
                    while offset < n {
                        let (wd, eventMask, length) = buffer.withUnsafeBytes { raw -> (Int32, UInt32, Int) in
                            let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                            return (event.wd, event.mask, Int(event.len))
                        }
                        let nameStart = offset + MemoryLayout<inotify_event>.size
                        let name = buffer[nameStart..<nameStart + length].prefix { $0 != 0 }
                        offset = nameStart + length
                        guard let dir = watches.withLock({ $0[wd] }), !name.isEmpty else { continue }
                        let path = dir + "/" + String(decoding: name, as: UTF8.self)
                        judge(path)
                        if eventMask & UInt32(IN_ISDIR) != 0, eventMask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
                            watch(path)
                            // What was made in it before the watch began.
                            for inner in Self.tree(path) { judge(inner) }
                        }
                    }
                }
                // The tight rescan between events.
                for path in Self.tree(root) { judge(path) }
            }
            close(self.fd)
            state.withLock { $0.done = true }
        }
        self.thread = thread
        thread.start()
    }

    /// Stops watching; returns what was seen and what was loose.
    func stop() -> (seen: Set<String>, violations: [Violation]) {
        state.withLock { $0.stop = true }
        while !state.withLock({ $0.done }) { usleep(1000) }
        return state.withLock { ($0.seen, $0.violations) }
    }
}

/// Issue 14, "Leaking": every file the command or the file backend writes is
/// private (no group or other bits) from its first byte, whatever the umask.
@Suite("Temporary and new files are 0600 from their first byte (umask 000, watched while written)")
struct TemporaryFileModeTests {
    static let exportPass: [String: String?] = ["SECITEM_EXPORT_PASSPHRASE": "a long export passphrase"]

    /// Runs `secitem arguments…` under `umask 000`, with the tree at `watched` under watch.
    static func runWatched(
        _ cli: CLI, _ arguments: [String], watching watched: String, environment extra: [String: String?] = [:],
        stdin: Data? = nil
    ) throws -> (result: ProcessOutput, seen: Set<String>, violations: [ModeWatcher.Violation]) {
        var env = cli.environment
        for (key, value) in extra { env[key] = value }
        let watcher = ModeWatcher(watched)
        watcher.start()
        let child = try ChildProcess(
            "/bin/sh", ["-c", "umask 000 && exec \"$0\" \"$@\"", CLI.executable.path] + arguments, environment: env)
        if let stdin { try child.send(stdin) }
        child.closeInput()
        let result = try child.finish(timeout: .seconds(600))
        let (seen, violations) = watcher.stop()
        return (result, seen, violations)
    }

    /// A plaintext export of `count` items of `dataSize` random bytes each (seeded).
    static func plaintextExport(count: Int, dataSize: Int, seed: UInt64) -> Data {
        var rng = SeededRandom(seed: seed)
        return OperatorSafetyTests.plaintextExport(count: count, seed: seed) { _ in
            Data((0..<dataSize).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        }
    }

    /// A file store holding `count` items of `dataSize` bytes (imported from a generated plaintext export):
    /// large enough that writing an export of it takes a while, so a loose mode during the write is seen.
    static func filledStore(_ count: Int, dataSize: Int = 8192) throws -> CLI {
        let cli = try CLI(backend: "file", bus: false)
        let file = cli.root.appendingPathComponent("bulk.json")
        let seed: UInt64 = 14
        print("TemporaryFileModeTests seed \(seed)")
        try Self.plaintextExport(count: count, dataSize: dataSize, seed: seed).write(to: file)
        let imported = try cli.run(["import", "--plaintext", "--input", file.path])
        #expect(imported.status == 0, "\(imported.stderr)")
        try FileManager.default.removeItem(at: file)
        return cli
    }

    static func outputDirectory(_ cli: CLI) throws -> String {
        let dir = cli.root.appendingPathComponent("out").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        chmod(dir, 0o755)  // a shared directory: other users may look in
        return dir
    }

    @Test("export --plaintext of 3,000 items of 8 KiB: nothing in the output directory is ever group/other-accessible")
    func plaintextExport() throws {
        let cli = try Self.filledStore(3000)
        defer { cli.remove() }
        let out = try Self.outputDirectory(cli)
        let output = out + "/plain.json"
        let run = try Self.runWatched(cli, ["export", "--plaintext", "--output", output], watching: out)
        #expect(run.result.status == 0, "\(run.result.stderr)")
        #expect(run.violations.isEmpty, "loose while written: \(run.violations)")
        // The watcher saw the temporary files, not only the result (it can fail).
        #expect(run.seen.contains { $0.contains(".secitem-export-") && $0.hasSuffix("/archive") }, "\(run.seen.sorted())")
        let mode = try FileManager.default.attributesOfItem(atPath: output)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test("encrypted export of 1,500 items: the archive and its SQLite journal files are private throughout")
    func encryptedExport() throws {
        let cli = try Self.filledStore(1500, dataSize: 1024)
        defer { cli.remove() }
        let out = try Self.outputDirectory(cli)
        let output = out + "/items.secitem"
        let run = try Self.runWatched(cli, ["export", "--output", output], watching: out, environment: Self.exportPass)
        #expect(run.result.status == 0, "\(run.result.stderr)")
        #expect(run.violations.isEmpty, "loose while written: \(run.violations)")
        #expect(run.seen.contains { $0.hasSuffix("-wal") }, "\(run.seen.sorted())")
        let mode = try FileManager.default.attributesOfItem(atPath: output)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        // Importing it elsewhere: its private copy (in TMPDIR) and the new store. The archive
        // given is group/other-readable (it is ciphertext; someone copied it so): the copy
        // import makes must not inherit that.
        chmod(output, 0o644)
        let target = try CLI(backend: "file", bus: false)
        defer { target.remove() }
        let tmp = target.root.appendingPathComponent("tmp").path
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: false)
        chmod(tmp, 0o1777)
        let imported = try Self.runWatched(
            target, ["import", "--input", output], watching: target.root.path,
            environment: Self.exportPass.merging(["TMPDIR": tmp]) { $1 })
        #expect(imported.result.status == 0, "\(imported.result.stderr)")
        #expect(imported.violations.isEmpty, "loose while importing: \(imported.violations)")
        #expect(imported.seen.contains { $0.contains("/tmp/secitem-import-") }, "\(imported.seen.sorted())")
        #expect(imported.seen.contains { $0.hasSuffix("keychain.db") }, "\(imported.seen.sorted())")
    }

    @Test("a new store: the keychain file, its -wal/-shm, the generated key file and their directories are private")
    func newStoreAndKeyFile() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        chmod(cli.root.path, 0o755)
        let run = try Self.runWatched(
            cli, ["add-generic-password", "-a", "a", "-s", "new", "-w", "-"], watching: cli.root.path,
            stdin: Data("first".utf8))
        #expect(run.result.status == 0, "\(run.result.stderr)")
        #expect(run.violations.isEmpty, "loose: \(run.violations)")
        for suffix in ["keychain.db", "keychain.db-wal", "keychain.key"] {
            #expect(run.seen.contains { $0.hasSuffix("/" + suffix) }, "\(suffix) not seen: \(run.seen.sorted())")
        }
        #expect(run.seen.contains { $0.contains("keychain.db.tmp-") }, "the store's temporary not seen: \(run.seen.sorted())")
    }

    @Test("rekey --rotate and --new-passphrase on 1,000 items, and the git helper's store: private throughout")
    func rekeyAndGitHelper() throws {
        let cli = try Self.filledStore(1000, dataSize: 1024)
        defer { cli.remove() }
        let data = cli.root.appendingPathComponent("data").path
        let rotate = try Self.runWatched(cli, ["rekey", "--rotate"], watching: data)
        #expect(rotate.result.status == 0, "\(rotate.result.stderr)")
        #expect(rotate.violations.isEmpty, "loose: \(rotate.violations)")
        #expect(rotate.seen.contains { $0.hasSuffix("-wal") }, "\(rotate.seen.sorted())")
        let rekey = try Self.runWatched(
            cli, ["rekey", "--new-passphrase"], watching: data,
            environment: ["SECITEM_NEW_PASSPHRASE": "a brand new passphrase"])
        #expect(rekey.result.status == 0, "\(rekey.result.stderr)")
        #expect(rekey.violations.isEmpty, "loose: \(rekey.violations)")
        let helper = try Self.runWatched(
            cli, ["credential-helper", "store"], watching: cli.root.path,
            environment: ["SECITEM_PASSPHRASE": "a brand new passphrase"],
            stdin: Data("protocol=https\nhost=example.com\nusername=u\npassword=p\n\n".utf8))
        #expect(helper.result.status == 0, "\(helper.result.stderr)")
        #expect(helper.violations.isEmpty, "loose: \(helper.violations)")
    }
}
