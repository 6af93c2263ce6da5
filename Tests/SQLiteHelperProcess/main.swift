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
import Foundation
import SecItemCore
@_spi(Testing) import SecItemSQLite
import SecItemTestSupport

func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data(("helper: " + message + "\n").utf8))
    exit(2)
}

let args = CommandLine.arguments
guard args.count >= 3 else { fail("usage: helper <scenario> <db> …") }
guard let keyFile = ProcessInfo.processInfo.environment["SECITEM_KEY_FILE"] else { fail("SECITEM_KEY_FILE not set") }

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
case "upgrade-stall":
    do {
        try backend.upgrade(failingAfter: nil) {
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
    var rng = SplitMix(seed: UInt64(args[5])!)
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

/// A small seeded generator, so a run can be repeated.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
