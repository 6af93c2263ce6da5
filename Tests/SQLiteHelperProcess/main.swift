// A child process for the file backend's tests (Tests/SQLiteBackendTests): it
// opens the keychain named on its command line with the key file in
// SECITEM_KEY_FILE (never a key on the command line) and runs one scenario,
// reporting every acknowledged change on stdout, unbuffered, one line each.
//
//   SecItemSQLiteHelper writer <db> <prefix>            add items until killed: "<i>" per acked add
//   SecItemSQLiteHelper mixed <db> <proc> <ops> <seed>  mixed ops on shared and own keys
//   SecItemSQLiteHelper get <db> <account>              prints the data, or "not-found"
//   SecItemSQLiteHelper put <db> <account> <value>      adds an item
//   SecItemSQLiteHelper upgrade-stall <db>              upgrades; half-way prints "stalled" and sleeps (to be killed)
//   SecItemSQLiteHelper upgrade <db>                    upgrades; prints "upgraded"
//   SecItemSQLiteHelper passphrase-scan <db>            (SECITEM_FILE=<db>, SECITEM_PASSPHRASE, SECITEM_SCAN_MASKED)
//       takes the passphrase from the environment as the secitem command does, opens the
//       keychain with it, adds and reads an item, and scans its own memory for the
//       passphrase: "held <n>" while the command would still hold it, "released <n>" after;
//       then "child-env clean" when a child process it starts does not inherit the variable
//   SecItemSQLiteHelper rotate-scan <db>                (SECITEM_SCAN_MASKED_LIST: item data, masked, comma-separated)
//       "before <n>", reads item scan-0 and holds it: "held <n>" (the scan's control), rotates the data key:
//       "rotated <n>", verifies: "verified <n>" (n: how many of the other items' data are in memory)
//   SecItemSQLiteHelper migrate-legacy <db> <file>      prints "migrating", migrates the legacy file (removing it), prints "migrated"
//   SecItemSQLiteHelper tpm-mark <db> <state-dir> <tcti>     prints the TPM2CounterWitness's mark, or "none"
//   SecItemSQLiteHelper die-at-mark <db> <account> <state-dir> before|after|between [<tcti>]
//       opens the keychain with the high-water marks in <state-dir>, adds <account>, and is SIGKILLed when the
//       backend records the new state: before the mark is written, or just after ("dying" first); with a TCTI
//       the key is sealed to that TPM and the marks are also its NV counter's (between: the file's mark
//       written, the counter not raised); with `secret-service` instead of a TCTI the key is in the login
//       keyring and the marks are also its mark item's (between: the file's mark written, the item not)
//   SecItemSQLiteHelper keyring-mark <db>                  (key source secret-service) prints the login keyring's
//       mark of the file read by a new process with an empty state directory, "none", or "error <status> <message>"
//   SecItemSQLiteHelper keyring-survivor <db> <state-home> (key source secret-service) opens the keychain and adds
//       "first": "opened <generation>"; then for each line on stdin adds (or, "read", reads "first") and prints
//       "added <generation>" / "read <value>" / "error <status> <message>"; for the tests that lock or stop the keyring
import Foundation
import SecItemCore
import SecItemKeychain
import SecItemSQLite
import SecItemTestSupport
import SecItemConformance
import SecItemSealedStore
import SecItemSecretService

let args = CommandLine.arguments
guard args.count >= 3 else { fail("usage: helper <scenario> <db> …") }
if args[1] == "passphrase-scan" {
    guard ProcessInfo.processInfo.environment["SECITEM_FILE"] == args[2] else { fail("SECITEM_FILE must be the db") }
    passphraseScan(db: args[2])
    exit(0)
}
guard let keyFile = ProcessInfo.processInfo.environment["SECITEM_KEY_FILE"] else { fail("SECITEM_KEY_FILE not set") }
if args[1] == "tpm-mark" {
    // tpm-mark <db> <state-dir> <tcti>: the TPM2CounterWitness's mark for the file ("none").
    guard args.count == 5, let real = realpath(args[2], nil) else { fail("usage: tpm-mark <db> <state-dir> <tcti>") }
    let store = WitnessedStore(identity: "file " + String(cString: real), location: args[2])
    free(real)
    do {
        emit(try TPM2CounterWitness(tcti: args[4], directory: args[3]).mark(for: store)?.description ?? "none")
    } catch {
        fail("tpm-mark: \(error)")
    }
    exit(0)
}
if args[1] == "die-at-mark" {
    dieAtMark(db: args[2], keyFile: keyFile, account: args[3], stateDirectory: args[4], when: args[5], tcti: args.count > 6 ? args[6] : nil)
}
if args[1] == "keyring-mark" { keyringMark(db: args[2]) }
if args[1] == "keyring-survivor" { keyringSurvivor(db: args[2], stateHome: args[3]) }

let backend: SQLiteBackend
do {
    backend = try SQLiteBackend(configuration: .init(path: args[2], keySource: .keyFile(keyFile)))
} catch {
    fail("open: \(error)")
}
let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["test"]))

func query(_ service: String, _ account: String) -> [String: Any] { Query.genericPassword(service, account) }

func status(_ body: () throws(SecItemError) -> Void) -> OSStatus {
    do {
        try body()
        return errSecSuccess
    } catch {
        return error.status
    }
}

switch args[1] {
case "rotate-scan":
    rotateScan()
case "upgrade-stall":
    do {
        try backend.upgrade { (index: Int, count: Int) throws(SecItemError) in
            guard index == count / 2 else { return }
            emit("stalled")
            sleep(120)
        }
    } catch {
        fail("upgrade: \(error)")
    }
    emit("upgraded")
case "upgrade":
    do {
        try backend.upgrade()
    } catch {
        fail("upgrade: \(error)")
    }
    emit("upgraded")
case "migrate-legacy":
    emit("migrating")
    do {
        let reports = try Keychain.migrateLegacyFile(at: URL(fileURLWithPath: args[3]), into: client, removeFile: true)
        emit("migrated \(reports.values.map(\.migratedKeys.count).reduce(0, +))")
    } catch {
        fail("migrate-legacy: \(error)")
    }
case "writer":
    let prefix = args[3]
    var i = 0
    while true {
        var item = query("crash", "\(prefix)-\(i)")
        item["v_Data"] = Data("value-\(prefix)-\(i)".utf8)
        do {
            try client.addItem(item)
        } catch {
            fail("add \(i): \(error)")
        }
        emit("\(i)")
        i += 1
    }

case "mixed":
    let proc = Int(args[3])!, ops = Int(args[4])!
    var rng = SeededRandom(seed: UInt64(args[5])!)
    var own: [String: String] = [:]  // this process's model of its own keys
    for i in 0..<ops {
        let shared = rng.next() % 2 == 0
        let key = shared ? "shared-\(rng.next() % 8)" : "p\(proc)-\(rng.next() % 12)"
        let value = "p\(proc)-op\(i)"
        let q = query("mp", key)
        var got: OSStatus = errSecSuccess
        var read: String?
        let op = rng.next() % 4
        switch op {
        case 0:
            var item = q
            item["v_Data"] = Data(value.utf8)
            got = status { () throws(SecItemError) in try client.addItem(item) }
        case 1:
            got = status { () throws(SecItemError) in try client.updateItems(q, ["v_Data": Data(value.utf8)]) }
        case 2:
            got = status { () throws(SecItemError) in try client.deleteItems(q) }
        default:
            var rq = q
            rq["r_Data"] = true
            got = status { () throws(SecItemError) in
                read = (try client.copyMatchingItems(rq) as? Data).flatMap { String(bytes: $0, encoding: .utf8) }
            }
        }
        let names = ["add", "upd", "del", "get"]
        let expected: Set<OSStatus> = op == 0 ? [errSecSuccess, errSecDuplicateItem] : [errSecSuccess, errSecItemNotFound]
        guard expected.contains(got) else {
            emit("unexpected \(names[Int(op)]) \(key) \(got)")
            continue
        }
        if got == errSecSuccess {
            switch op {
            case 0, 1: emit("ack \(names[Int(op)]) \(key) \(value)")
            case 2: emit("ack del \(key)")
            default: emit("read \(key) \(read ?? "<nil>")")
            }
        }
        if !shared {
            // Only this process touches its own keys: every status is predictable.
            let present = own[key] != nil
            let consistent: Bool
            switch (op, got) {
            case (0, errSecSuccess): consistent = !present; own[key] = value
            case (0, _): consistent = present
            case (1, errSecSuccess): consistent = present; own[key] = value
            case (2, errSecSuccess): consistent = present; own[key] = nil
            case (3, errSecSuccess): consistent = present && read == own[key]
            default: consistent = !present
            }
            if !consistent { emit("inconsistent \(names[Int(op)]) \(key) status \(got)") }
        }
    }
    for (key, value) in own.sorted(by: { $0.key < $1.key }) { emit("final \(key) \(value)") }
    emit("done")

case "get":
    var q = query("reopen", args[3])
    q["r_Data"] = true
    do {
        let data = try client.copyMatchingItems(q) as? Data
        emit(data.flatMap { String(bytes: $0, encoding: .utf8) } ?? "<nil>")
    } catch SecItemError.itemNotFound {
        emit("not-found")
    } catch {
        fail("get: \(error)")
    }

case "put":
    var item = query("reopen", args[3])
    item["v_Data"] = Data(args[4].utf8)
    do {
        try client.addItem(item)
        emit("ok")
    } catch {
        fail("put: \(error)")
    }

default:
    fail("unknown scenario \(args[1])")
}

// MARK: passphrase-scan

/// Counts the places in this process's readable, writable memory (heap, stacks,
/// anonymous and writable mappings, read through /proc/self/mem) where the bytes
/// `masked` stand for (each XORed with 0xA5, so the pattern itself is not them) occur.
func occurrences(ofMasked masked: [UInt8]) -> Int {
    guard let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8) else { fail("cannot read /proc/self/maps") }
    let mem = open("/proc/self/mem", O_RDONLY)
    guard mem >= 0 else { fail("cannot open /proc/self/mem: \(String(cString: strerror(errno)))") }
    defer { close(mem) }
    let first = masked[0] ^ 0xA5
    var found = 0
    var chunk = [UInt8](repeating: 0, count: 1 << 20)
    for line in maps.split(separator: "\n") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 2 else { continue }
        let perms = fields[1]
        let name = fields.count >= 6 ? String(fields[5]) : ""
        guard perms.hasPrefix("rw"), name != "[vvar]", name != "[vsyscall]" else { continue }
        let range = fields[0].split(separator: "-")
        guard range.count == 2, let start = UInt64(range[0], radix: 16), let end = UInt64(range[1], radix: 16) else { continue }
        var offset = start
        while offset < end {
            // Overlap chunks by the pattern's length so an occurrence across a boundary is seen.
            let want = Int(min(UInt64(chunk.count), end - offset))
            let n = chunk.withUnsafeMutableBytes { pread(mem, $0.baseAddress, want, off_t(Int64(bitPattern: offset))) }
            guard n > 0 else { break }
            chunk.withUnsafeBufferPointer { buffer in
                var i = 0
                while i + masked.count <= n {
                    if buffer[i] == first {
                        var j = 1
                        while j < masked.count, buffer[i + j] ^ 0xA5 == masked[j] { j += 1 }
                        if j == masked.count { found += 1 }
                    }
                    i += 1
                }
            }
            if n < want { break }
            offset += UInt64(n) > UInt64(masked.count) ? UInt64(n - masked.count + 1) : UInt64(n)
        }
    }
    return found
}

func passphraseScan(db: String) {
    // What the secitem command does first (main.swift): take the secret variables.
    SecretEnvironment.take([SecItemConfiguration.Variable.passphrase])
    guard let hex = ProcessInfo.processInfo.environment["SECITEM_SCAN_MASKED"], hex.count % 2 == 0 else {
        fail("SECITEM_SCAN_MASKED not set")
    }
    guard let masked = hexBytes(hex[...]) else { fail("SECITEM_SCAN_MASKED is not hex") }
    let backend: SQLiteBackend
    do {
        // As the CLI and SecItem open the file backend: the process configuration, then the backend.
        let settings = SecItemConfiguration.resolve(environment: ProcessInfo.processInfo.environment)
        backend = try SQLiteBackend(configuration: SQLiteBackend.Configuration(settings))
    } catch {
        fail("open: \(error)")
    }
    let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["test"]))
    do {
        try client.addItem(query("scan", "item").merging([kSecValueData as String: Data("payload".utf8)]) { $1 })
        _ = try client.copyMatchingItems(query("scan", "item").merging([kSecReturnData as String: true]) { $1 })
    } catch {
        fail("add/read: \(error)")
    }
    // The control: while the taken variable is still held, the scan must see it.
    emit("held \(occurrences(ofMasked: masked))")
    // What the command does once its backends are open (Session.client).
    SecretEnvironment.forget(SecItemConfiguration.Variable.passphrase)
    emit("released \(occurrences(ofMasked: masked))")
    // The backend is still open and works: the derived keys are all it needed.
    do {
        _ = try client.copyMatchingItems(query("scan", "item").merging([kSecReturnData as String: true]) { $1 })
    } catch {
        fail("read after release: \(error)")
    }
    emit("still-open")
    withExtendedLifetime(backend) {}
    // A child process does not inherit the taken variable.
    let child = Process()
    child.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    let pipe = Pipe()
    child.standardOutput = pipe
    do { try child.run() } catch { fail("cannot run env: \(error)") }
    let listed = pipe.fileHandleForReading.readDataToEndOfFile()
    child.waitUntilExit()
    let inherited = listed.range(of: Data((SecItemConfiguration.Variable.passphrase + "=").utf8)) != nil
    emit(inherited ? "child-env inherited" : "child-env clean")
}

// MARK: rotate-scan

/// The bytes an even-length hex string spells, or nil.
func hexBytes(_ hex: Substring) -> [UInt8]? {
    guard hex.count % 2 == 0 else { return nil }
    var bytes = [UInt8]()
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
        bytes.append(byte)
        index = next
    }
    return bytes
}

func maskedList() -> [[UInt8]] {
    guard let list = ProcessInfo.processInfo.environment["SECITEM_SCAN_MASKED_LIST"] else { fail("SECITEM_SCAN_MASKED_LIST not set") }
    return list.split(separator: ",").map { hex in
        guard let bytes = hexBytes(hex) else { fail("SECITEM_SCAN_MASKED_LIST is not hex") }
        return bytes
    }
}

func rotateScan() {
    let markers = maskedList()
    guard markers.count >= 2 else { fail("need at least two markers") }
    func others() -> Int { markers.dropFirst().reduce(0) { $0 + occurrences(ofMasked: $1) } }
    emit("before \(others())")
    let held: Any?
    do {
        held = try client.copyMatchingItems(query("scan", "scan-0").merging([kSecReturnData as String: true]) { $1 })
    } catch {
        fail("read: \(error)")
    }
    emit("held \(occurrences(ofMasked: markers[0]))")
    do {
        try backend.rotateDataKey()
    } catch {
        fail("rotate: \(error)")
    }
    emit("rotated \(others())")
    if ProcessInfo.processInfo.environment["SECITEM_SCAN_DEBUG"] != nil {
        emit("detail " + markers.enumerated().map { "\($0.offset):\(occurrences(ofMasked: $0.element))" }.joined(separator: " "))
    }
    do {
        guard try backend.verify().isIntact else { fail("verify found problems") }
    } catch {
        fail("verify: \(error)")
    }
    emit("verified \(others())")
    withExtendedLifetime(held) {}
}

/// A witness that kills the process when asked to record a newer state than it
/// started with: the crash between the store's commit and the mark's update.
struct DyingWitness: RollbackWitness {
    let inner: any RollbackWitness
    /// before: nothing recorded; after: the whole mark; between (a TPM2CounterWitness):
    /// the state directory's file, not the TPM counter.
    let when: String
    let armedAbove: Int64
    /// between, for a witness of the key source's (the login keyring's): the state
    /// directory its files are in, written alone.
    var stateDirectoryBeside: StateDirectoryWitness? = nil

    func mark(for store: WitnessedStore) throws(SecItemError) -> HighWaterMark? { try inner.mark(for: store) }

    func advance(_ store: WitnessedStore, to state: HighWaterMark) throws(SecItemError) -> HighWaterMark {
        if state.generation > armedAbove {
            if when == "after" { try inner.advance(store, to: state) }
            if when == "between", let tpm = inner as? TPM2CounterWitness { try tpm.files.advance(store, to: state) }
            if when == "between", let files = stateDirectoryBeside { try files.advance(store, to: state) }
            emit("dying \(state.generation)")
            kill(getpid(), SIGKILL)
        }
        return try inner.advance(store, to: state)
    }

    func reset(_ store: WitnessedStore, to state: HighWaterMark?, note: String) throws(SecItemError) {
        try inner.reset(store, to: state, note: note)
    }
}

/// `tcti`: the store's key is sealed to that TPM, and the marks are a TPM2CounterWitness's.
func dieAtMark(db: String, keyFile: String, account: String, stateDirectory: String, when: String, tcti: String?) -> Never {
    if tcti == "secret-service" { dieAtKeyringMark(db: db, account: account, stateDirectory: stateDirectory, when: when) }
    let inner: any RollbackWitness =
        tcti.map { TPM2CounterWitness(tcti: $0, directory: stateDirectory) } ?? StateDirectoryWitness(directory: stateDirectory)
    let source: SQLiteBackend.KeySource
    do {
        source = try tcti.map { (t) throws(SecItemError) in try .tpm2(tcti: t) } ?? .keyFile(keyFile)
    } catch {
        fail("die-at-mark: \(error)")
    }
    addDyingAtMark(account: account) { (witness) throws(SecItemError) in
        try SQLiteBackend(
            configuration: .init(path: db, keySource: source, rollbackCheck: .enforce, rollbackWitness: witness ?? inner))
    } dying: { inner, generation in
        DyingWitness(inner: inner, when: when, armedAbove: generation)
    }
}

/// Opens the store with `open(nil)` (its own witness) to read the generation the parent
/// left, then again with the witness `dying` wraps around that one, armed above that
/// generation (opening records nothing newer), and adds an item: the witness ends the
/// process at its moment.
func addDyingAtMark(
    account: String, open: ((any RollbackWitness)?) throws(SecItemError) -> SQLiteBackend,
    dying: (any RollbackWitness, Int64) -> DyingWitness
) -> Never {
    do {
        let probe = try open(nil)
        guard let inner = probe.rollbackWitness else { fail("die-at-mark: no witness") }
        let generation = try probe.verify().commitment.split(separator: ":").first.flatMap { Int64($0) } ?? 0
        probe.close()
        let backend = try open(dying(inner, generation))
        let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["test"]))
        var item = Query.genericPassword("reopen", account)
        item["v_Data"] = Data("value-\(account)".utf8)
        try client.addItem(item)
    } catch {
        fail("die-at-mark: \(error)")
    }
    fail("die-at-mark: the backend never recorded the new state")
}

// MARK: The login keyring's marks (key source secret-service)

/// The file keychain keyed by the login keyring, its marks in `stateHome` (`XDG_STATE_HOME`).
func keyringBackend(_ db: String, stateHome: String, _ mode: RollbackCheckMode = .enforce, witness: (any RollbackWitness)? = nil)
    throws(SecItemError) -> SQLiteBackend
{
    var configuration = SQLiteBackend.Configuration(
        path: db, keySource: .secretServiceItem(), rollbackCheck: mode, rollbackWitness: witness)
    configuration.environment = ["XDG_STATE_HOME": stateHome]
    return try SQLiteBackend(configuration: configuration)
}

func witnessed(_ db: String) -> WitnessedStore {
    guard let real = realpath(db, nil) else { fail("no file \(db)") }
    defer { free(real) }
    return WitnessedStore(identity: "file " + String(cString: real), location: db)
}

func temporaryStateHome() -> String {
    var template = Array((NSTemporaryDirectory() + "/secitem-helper-state-XXXXXX").utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { fail("mkdtemp") }
    return String(cString: made)
}

/// The keyring's mark alone: this process never read it (no cache), and the state directory is empty.
func keyringMark(db: String) -> Never {
    let home = temporaryStateHome()
    defer { try? FileManager.default.removeItem(atPath: home) }
    do {
        let backend = try keyringBackend(db, stateHome: home, .report)
        guard let witness = backend.rollbackWitness else { fail("keyring-mark: no witness") }
        emit(try witness.mark(for: witnessed(db))?.description ?? "none")
    } catch {
        emit("error \(error.status) \(error.detail ?? error.message)")
    }
    try? FileManager.default.removeItem(atPath: home)
    exit(0)
}

/// `die-at-mark … secret-service`: the witness the key source chooses (the login keyring's), wrapped.
func dieAtKeyringMark(db: String, account: String, stateDirectory: String, when: String) -> Never {
    guard stateDirectory.hasSuffix("/secitem/high-water") else { fail("the state directory must be <home>/secitem/high-water") }
    let home = String(stateDirectory.dropLast("/secitem/high-water".count))
    addDyingAtMark(account: account) { (witness) throws(SecItemError) in
        try keyringBackend(db, stateHome: home, witness: witness)
    } dying: { inner, generation in
        DyingWitness(
            inner: inner, when: when, armedAbove: generation,
            stateDirectoryBeside: StateDirectoryWitness(directory: stateDirectory))
    }
}

/// Stays open while the test locks or stops the keyring.
func keyringSurvivor(db: String, stateHome: String) -> Never {
    func generation(_ backend: SQLiteBackend) throws(SecItemError) -> String {
        String(try backend.verify().commitment.prefix { $0 != ":" })
    }
    let backend: SQLiteBackend
    do {
        backend = try keyringBackend(db, stateHome: stateHome)
        try SecItemClient(backend: backend, accessGroups: AccessGroups(["test"])).addItem(
            Query.genericPassword("survivor", "first").merging(["v_Data": Data("first".utf8)]) { $1 })
        emit("opened \(try generation(backend))")
    } catch {
        fail("keyring-survivor: \(error)")
    }
    let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["test"]))
    var n = 0
    while let line = readLine() {
        do throws(SecItemError) {
            if line == "read" {
                var q = Query.genericPassword("survivor", "first")
                q["r_Data"] = true
                let data = try client.copyMatchingItems(q) as? Data
                emit("read " + (data.map { String(decoding: $0, as: UTF8.self) } ?? "nothing"))
            } else {
                n += 1
                try client.addItem(Query.genericPassword("survivor", "item-\(n)").merging(["v_Data": Data("\(n)".utf8)]) { $1 })
                emit("added \(try generation(backend))")
            }
        } catch {
            emit("error \(error.status) \(error.detail ?? error.message)")
        }
    }
    exit(0)
}
