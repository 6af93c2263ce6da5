// A child process for SecretServiceBackendTests: what must happen in another
// process (racing adds, a private or broken D-Bus environment) or outside
// `swift test` (timings). The backend is configured from the environment
// (SECITEM_SECRET_SERVICE_NAMESPACE, SECITEM_SECRET_SERVICE_TIMEOUT, …).
//
//   SecretServiceTestHelper repl
//       One command per stdin line, one result line per command:
//         open                  → opens the backend
//         add SERVICE ACCOUNT   → adds a generic password (data "secret ACCOUNT")
//         find SERVICE ACCOUNT  → looks it up (findui: allowing interaction)
//       Results: "ok MS", "dup MS" or "err STATUS MS DETAIL" (MS: elapsed milliseconds).
//   SecretServiceTestHelper bench N
//       Times add and lookup through the backend (a fresh namespace), N each.
import Foundation
import SecItemCore
import SecItemSecretService

/// Writes a line to stdout unbuffered (the test reads it at once).
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

func milliseconds(_ d: Duration) -> Int64 {
    d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
}

func openClient(namespace: String? = nil) throws(SecItemError) -> SecItemClient {
    var configuration = SecretServiceBackend.Configuration.fromEnvironment()
    if let namespace { configuration.namespace = namespace }
    return SecItemClient(
        backend: try SecretServiceBackend(configuration: configuration), accessGroups: AccessGroups(["test"]))
}

func repl() {
    var client: SecItemClient? = nil
    while let line = readLine() {
        let words = line.split(separator: " ").map(String.init)
        guard let verb = words.first else { continue }
        let start = ContinuousClock.now
        do throws(SecItemError) {
            let store: SecItemClient
            if let client { store = client } else { store = try openClient(); client = store }
            switch (verb, words.count) {
            case ("open", 1):
                break
            case ("add", 3):
                try store.addItem([
                    kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: words[1],
                    kSecAttrAccount as String: words[2], kSecValueData as String: Data("secret \(words[2])".utf8),
                ])
            case ("find", 3), ("findui", 3):
                var query: [String: Any] = [
                    kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: words[1],
                    kSecAttrAccount as String: words[2], kSecReturnData as String: true,
                ]
                if verb == "findui" { query[kSecUseAuthenticationUI as String] = kSecUseAuthenticationUIAllow }
                _ = try store.copyMatchingItems(query)
            default:
                throw SecItemError(errSecParam, "unknown command")
            }
            say("ok \(milliseconds(ContinuousClock.now - start))")
        } catch SecItemError.duplicateItem {
            say("dup \(milliseconds(ContinuousClock.now - start))")
        } catch {
            say("err \(error.status) \(milliseconds(ContinuousClock.now - start)) \(error.detail ?? "")")
        }
    }
}

func bench(_ n: Int) {
    let store: SecItemClient
    do { store = try openClient(namespace: "bench-\(UUID().uuidString)") } catch {
        say("fatal \(error)")
        exit(1)
    }
    func median(_ samples: [Duration]) -> Double {
        let d = samples.sorted()[samples.count / 2].components
        return Double(d.seconds) * 1000 + Double(d.attoseconds) / 1e15
    }
    var adds: [Duration] = []
    var lookups: [Duration] = []
    var misses: [Duration] = []
    for i in 0..<n {
        let add: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "bench",
            kSecAttrAccount as String: "account-\(i)", kSecValueData as String: Data("secret-\(i)".utf8),
        ]
        let t0 = ContinuousClock.now
        do { try store.addItem(add) } catch { say("add failed: \(error)"); exit(1) }
        adds.append(ContinuousClock.now - t0)
    }
    for i in 0..<n {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "bench",
            kSecAttrAccount as String: "account-\(i)", kSecReturnData as String: true,
        ]
        let t0 = ContinuousClock.now
        do { _ = try store.copyMatchingItems(query) } catch { say("lookup failed: \(error)"); exit(1) }
        lookups.append(ContinuousClock.now - t0)
        query[kSecAttrAccount as String] = "missing-\(i)"
        let t1 = ContinuousClock.now
        _ = try? store.copyMatchingItems(query)
        misses.append(ContinuousClock.now - t1)
    }
    say(String(format: "backend add median %.2f ms, lookup median %.2f ms, miss median %.2f ms (n=%d)",
               median(adds), median(lookups), median(misses), n))
    _ = try? store.deleteItems([kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "bench"])
}

let arguments = CommandLine.arguments
switch (arguments.count > 1 ? arguments[1] : "", arguments.count) {
case ("repl", 2): repl()
case ("bench", 3): bench(Int(arguments[2]) ?? 100)
default:
    FileHandle.standardError.write(Data("usage: SecretServiceTestHelper repl | bench N\n".utf8))
    exit(64)
}
