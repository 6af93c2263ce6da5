// A child process for the PostgreSQL backend's tests (Tests/PostgreSQLBackendTests):
// one host of a fleet. It connects by libpq's conventions (the PG* variables the
// test passes on), unlocks the shared keychain with the key file in
// SECITEM_KEY_FILE (never a key on the command line), runs one scenario and
// reports on stdout, unbuffered, one line per event.
//
//   SecItemPostgreSQLHelper distinct <schema> <worker> <count>        adds w<worker>-<i>: "added <n>" at the end
//   SecItemPostgreSQLHelper contested <schema> <worker> <count> <keys> adds k<i % keys>: "won k" / "lost k" each
//   SecItemPostgreSQLHelper writer <schema> <prefix> <count> <pause-ms> "ack <i>" or "fail <i> <status> <ms>" each,
//                                                                    until <count> adds were acknowledged (at most 120 s)
//   SecItemPostgreSQLHelper rotate <schema> <times>                  rotates the data key: "rotated <i>" each
//   SecItemPostgreSQLHelper read <schema> <account>                  prints the data, or "status <n>"
//   SecItemPostgreSQLHelper until <schema> <prefix> <stop-file>       adds <prefix>-<i> until the file exists, as an application
//                                                                    would during a failover (docs/postgresql.md): a failed add
//                                                                    ("fail <i> <status> <ms>") is tried again after 50 ms until it
//                                                                    is acknowledged ("ack <i>") or answers errSecDuplicateItem,
//                                                                    when an earlier attempt was applied after all and the item is
//                                                                    read back ("dup <i>" when it holds the value, else "bad …");
//                                                                    "bad <i> <status> …" for a status no failover explains
//   SecItemPostgreSQLHelper scan <schema> <stop-file>                 lists every item until the file exists; "bad <status> …"
//                                                                    for a status other than errSecNotAvailable/errSecReadOnly,
//                                                                    "scans <ok> <failed>" at the end
//   SecItemPostgreSQLHelper mixed <schema> <prefix> <stop-file> <shared> <seed>
//                                                                    reads and writes (own items, checked against a model;
//                                                                    shared-<k>) until the file exists: "op <kind> <start-ns>
//                                                                    <end-ns>" each (CLOCK_MONOTONIC), "bad …" for an error or
//                                                                    a wrong value; "model a=v …" and "done <n>" at the end
// Any other failure: "error <status> <detail>".
import Foundation
import SecItemCore
import SecItemPostgreSQL
import SecItemTestSupport

let args = CommandLine.arguments
guard args.count >= 3 else { fail("usage: helper <scenario> <schema> …") }

let backend: PostgreSQLBackend
do {
    var configuration = try PostgreSQLBackend.Configuration.fromEnvironment()
    configuration.schema = args[2]
    backend = try PostgreSQLBackend(configuration: configuration)
} catch {
    fail("open: \(error)")
}
let client = SecItemClient(backend: backend, accessGroups: AccessGroups(["fleet"]))

func item(_ account: String, _ value: String) -> [String: Any] {
    ["class": "genp", "svce": "fleet", "acct": account, "v_Data": Data(value.utf8)]
}

switch args[1] {
case "distinct":
    let worker = args[3], count = Int(args[4])!
    var added = 0
    for i in 0..<count {
        do {
            try client.addItem(item("w\(worker)-\(i)", "value-\(worker)-\(i)"))
            added += 1
        } catch {
            emit("error \(error.status) \(error.detail ?? "")")
        }
    }
    emit("added \(added)")

case "contested":
    let worker = args[3], count = Int(args[4])!, keys = Int(args[5])!
    for i in 0..<count {
        let key = "k\(i % keys)"
        do {
            try client.addItem(item(key, "won-by-\(worker)"))
            emit("won \(key)")
        } catch where error.status == errSecDuplicateItem {
            emit("lost \(key)")
        } catch {
            emit("error \(error.status) \(error.detail ?? "")")
        }
    }

case "writer":
    let prefix = args[3], count = Int(args[4])!, pause = UInt32(args[5])!
    let deadline = ContinuousClock.now + .seconds(120)
    var acked = 0
    var i = 0
    while acked < count && ContinuousClock.now < deadline {
        defer { i += 1 }
        let start = ContinuousClock.now
        do {
            try client.addItem(item("\(prefix)-\(i)", "value-\(prefix)-\(i)"))
            emit("ack \(i)")
            acked += 1
        } catch {
            let ms = (ContinuousClock.now - start).wholeMilliseconds
            emit("fail \(i) \(error.status) \(ms) \(error.detail ?? "")")
        }
        usleep(pause * 1000)
    }

case "rotate":
    let times = Int(args[3])!
    for i in 0..<times {
        do {
            try backend.rotateDataKey()
            emit("rotated \(i)")
        } catch {
            emit("error \(error.status) \(error.detail ?? "")")
        }
    }

case "read":
    do {
        let data = try client.copyMatchingItems(["class": "genp", "svce": "fleet", "acct": args[3], "r_Data": true])
        emit(String(decoding: data as? Data ?? Data(), as: UTF8.self))
    } catch {
        emit("status \(error.status)")
    }

case "until":
    let prefix = args[3], stop = args[4]
    var i = 0
    var attempts = 0
    while !FileManager.default.fileExists(atPath: stop) {
        let account = "\(prefix)-\(i)", value = "value-\(prefix)-\(i)"
        let start = ContinuousClock.now
        attempts += 1
        do {
            try client.addItem(item(account, value))
            emit("ack \(i)")
            i += 1
            attempts = 0
        } catch where error.status == errSecDuplicateItem && attempts > 1 {
            // An earlier attempt's COMMIT was applied though its answer was lost.
            do {
                let data = try client.copyMatchingItems(["class": "genp", "svce": "fleet", "acct": account, "r_Data": true])
                emit(data as? Data == Data(value.utf8) ? "dup \(i)" : "bad \(i) duplicate with another value")
            } catch {
                emit("bad \(i) \(error.status) reading back a duplicate: \(error.detail ?? "")")
            }
            i += 1
            attempts = 0
        } catch where error.status == errSecNotAvailable || error.status == errSecReadOnly || error.status == errSecIO {
            let ms = (ContinuousClock.now - start).wholeMilliseconds
            emit("fail \(i) \(error.status) \(ms)")
            usleep(50_000)
        } catch {
            emit("bad \(i) \(error.status) \(error.detail ?? "")")
            usleep(50_000)
        }
    }

case "scan":
    let stop = args[3]
    var ok = 0, failed = 0
    while !FileManager.default.fileExists(atPath: stop) {
        do {
            _ = try client.copyMatchingItems(["class": "genp", "svce": "fleet", "m_Limit": "m_LimitAll", "r_Attributes": true])
            ok += 1
        } catch where error.status == errSecItemNotFound {
            ok += 1
        } catch where error.status == errSecNotAvailable || error.status == errSecReadOnly {
            failed += 1
            usleep(50_000)
        } catch {
            emit("bad \(error.status) \(error.detail ?? "")")
            failed += 1
        }
        usleep(20_000)
    }
    emit("scans \(ok) \(failed)")

case "mixed":
    // Reads and writes until the stop file exists: its own items (a model of their values
    // checked on every read) and the shared items shared-0..<shared> ("shared-value-<k>").
    let prefix = args[3], stop = args[4], shared = Int(args[5])!
    var seed = UInt64(args[6])!
    func next() -> UInt64 {
        seed &+= 0x9E37_79B9_7F4A_7C15
        var z = seed
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
    func read(_ account: String) throws(SecItemError) -> String? {
        do {
            let value = try client.copyMatchingItems(["class": "genp", "svce": "fleet", "acct": account, "r_Data": true])
            return (value as? Data).map { String(decoding: $0, as: UTF8.self) }
        } catch where error.status == errSecItemNotFound {
            return nil
        }
    }
    var model: [String: String] = [:]
    var ops = 0
    while !FileManager.default.fileExists(atPath: stop) {
        let start = now()
        let roll = next() % 10
        var kind = "read"
        do throws(SecItemError) {
            if roll < 2 || model.isEmpty {
                kind = "add"
                let account = "\(prefix)-\(model.count)"
                try client.addItem(item(account, "v0-\(account)"))
                model[account] = "v0-\(account)"
            } else if roll < 4 {
                kind = "update"
                let account = "\(prefix)-\(Int(next() % UInt64(model.count)))"
                let value = "v\(ops)-\(account)"
                try client.updateItems(
                    ["class": "genp", "svce": "fleet", "acct": account], ["v_Data": Data(value.utf8)])
                model[account] = value
            } else if roll < 7 {
                let account = "\(prefix)-\(Int(next() % UInt64(model.count)))"
                let found = try read(account)
                if found != model[account] {
                    emit("bad read \(start) \(account) holds \(found ?? "nothing"), expected \(model[account] ?? "nothing")")
                }
            } else {
                let k = Int(next() % UInt64(shared))
                let found = try read("shared-\(k)")
                if found != "shared-value-\(k)" { emit("bad read \(start) shared-\(k) holds \(found ?? "nothing")") }
            }
            emit("op \(kind) \(start) \(now())")
        } catch {
            emit("bad \(kind) \(start) status \(error.status) \(error.detail ?? "")")
        }
        ops += 1
    }
    emit("model " + model.keys.sorted().map { "\($0)=\(model[$0]!)" }.joined(separator: " "))
    emit("done \(ops)")

default:
    fail("unknown scenario \(args[1])")
}
