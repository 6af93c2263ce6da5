import SecItemCore
@testable import SecItemPostgreSQL
import Testing

/// libpq is loaded with dlopen on first use (docs/cli.md, "Start-up"): what a machine
/// without it, or with something else under its name, gets told.
@Suite("libpq loading")
struct LibpqLoadingTests {
    @Test("the installed libpq loads and has every function the backend calls")
    func installed() throws {
        #expect(Libpq.problem(loading: "libpq.so.5") == nil)
        try Libpq.load()
    }

    @Test("a missing libpq is named, with the package to install")
    func missing() {
        let reason = Libpq.problem(loading: "libpq-absent-\(UInt32.random(in: 0...UInt32.max)).so.5")
        #expect(reason?.contains("libpq-absent-") == true, "\(reason ?? "loaded")")
        #expect(reason?.contains("apt-get install libpq5") == true, "\(reason ?? "loaded")")
    }

    @Test("a library that is not libpq is refused, naming the first missing function")
    func notLibpq() {
        let reason = Libpq.problem(loading: "libc.so.6")
        #expect(reason?.contains("libc.so.6 has no PQclear") == true, "\(reason ?? "loaded")")
    }
}
