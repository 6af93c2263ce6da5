// The typed layer in async code (the README shows the same calls synchronously), kept compiling and running by the tests.
import Foundation
import SecItemKeychain  // the typed layer; it re-exports SecItem

struct Session: Codable, Equatable {
    var token: String
    var expires: Date
}

@main
struct SwiftNativeExample {
    static func main() async throws {
        // README: begin
        let keychain = try Keychain(service: "com.example.api")
        // In async code the calls run off Swift's thread pool, hence `await`.
        try await keychain.set("s3cret", forKey: "alice")            // insert or replace, atomically
        let password = try await keychain.string(forKey: "alice")     // nil when absent
        try await keychain.setEncoded(Session(token: "t0k", expires: .distantFuture), forKey: "session")
        let session = try await keychain.decoded(Session.self, forKey: "session")
        do {
            try keychain.update(Data("x".utf8), forKey: "nobody")    // an error, not nil, when absent
        } catch SecItemError.itemNotFound {
            print("update needs an existing item")
        }
        try await keychain.removeAll()                                // only this service, only this group
        // README: end
        let keysLeft = try await keychain.allKeys()
        let passed = password == "s3cret" && session?.token == "t0k" && keysLeft.isEmpty
        print(passed ? "swift-native example passed" : "unexpected results")
        exit(passed ? 0 : 1)
    }
}
