import Foundation
import SecItemConformance
import SecItemTestSupport
import Testing

/// Issue 14: secrets pass byte for byte, and a typed argument is never echoed.
@Suite("secitem byte rules")
struct ByteRuleTests {
    /// A 32-byte binary key whose last byte is 0x0A (the report's case), from a seeded
    /// generator: prints the seed, and `SECITEM_TEST_SEED` replays it.
    static func binaryKey() -> Data {
        var rng = SeededRandom()
        print("ByteRuleTests \(rng.replayHint)")
        var bytes = (0..<31).map { _ in UInt8.random(in: 0...255, using: &rng) }
        bytes.append(0x0A)
        return Data(bytes)
    }

    static func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

    @Test("-w - drops exactly one trailing newline; CR and inner newlines stay", arguments: Store.allCases)
    func stdinStripsOneNewline(store: Store) throws {
        let cli = try store.cli()
        defer { cli.remove() }
        let key = Self.binaryKey()
        let cases: [(String, Data, Data)] = [
            ("key+LF", key + Data([0x0A]), key),
            ("CRLF", Data("pw\r\n".utf8), Data("pw\r".utf8)),
            ("two LF", Data("pw\n\n".utf8), Data("pw\n".utf8)),
            ("no LF", Data("pw".utf8), Data("pw".utf8)),
        ]
        for (index, (name, input, stored)) in cases.enumerated() {
            let add = try cli.run(["add-generic-password", "-a", "bytes\(index)", "-s", "rules", "-w", "-"], stdinData: input)
            #expect(add.status == 0, "\(name): \(add.stderr)")
            let hex = try cli.run(["find-generic-password", "-a", "bytes\(index)", "-s", "rules", "-x"])
            #expect(hex.stdout == Self.hex(stored) + "\n", "\(name)")
            let exact = try cli.run(["find-generic-password", "-a", "bytes\(index)", "-s", "rules", "-w"])
            #expect(exact.stdoutData == stored + Data([0x0A]), "\(name): -w prints the stored bytes and one newline")
            let raw = try cli.run(["find-generic-password", "-a", "bytes\(index)", "-s", "rules", "-w", "--raw"])
            #expect(raw.stdoutData == stored, "\(name): --raw prints exactly the stored bytes")
        }
    }

    @Test("--raw and -X store binary secrets exactly; find -w | add -w - round-trips", arguments: Store.allCases)
    func rawAndHex(store: Store) throws {
        let cli = try store.cli()
        defer { cli.remove() }
        let key = Self.binaryKey()

        let raw = try cli.run(["add-generic-password", "-a", "raw", "-s", "bin", "--raw", "-w", "-"], stdinData: key)
        #expect(raw.status == 0, "\(raw.stderr)")
        #expect(try cli.run(["find-generic-password", "-a", "raw", "-s", "bin", "-x"]).stdout == Self.hex(key) + "\n")

        let hex = try cli.run(["add-generic-password", "-a", "hex", "-s", "bin", "-X", Self.hex(key).uppercased()])
        #expect(hex.status == 0, "\(hex.stderr)")
        #expect(hex.stderr.contains("warning"))
        #expect(try cli.run(["find-generic-password", "-a", "hex", "-s", "bin", "-w", "--raw"]).stdoutData == key)

        // The pipe macOS users write: what -w prints, -w - stores, exactly.
        let printed = try cli.run(["find-generic-password", "-a", "hex", "-s", "bin", "-w"]).stdoutData
        #expect(try cli.run(["add-generic-password", "-a", "copy", "-s", "bin", "-w", "-"], stdinData: printed).status == 0)
        #expect(try cli.run(["find-generic-password", "-a", "copy", "-s", "bin", "-x"]).stdout == Self.hex(key) + "\n")

        for bad in ["abc", "zz", "0x12"] {
            let refused = try cli.run(["add-generic-password", "-a", "bad", "-s", "bin", "-X", bad])
            #expect(refused.status == 2)
            #expect(!refused.stderr.contains(bad))
        }
        #expect(try cli.run(["add-generic-password", "-a", "bad", "-s", "bin", "-X", "00", "-w", "-"], stdin: "x").status == 2)
        #expect(try cli.run(["find-generic-password", "-a", "bad", "-s", "bin"]).status == 44)
    }

    @Test("a mistyped argument is never repeated in an error")
    func noEchoOfArguments() throws {
        let cli = try CLI()
        defer { cli.remove() }
        let secret = "I-TYPED-MY-PASSWORD"
        let attempts: [[String]] = [
            ["find-generic-password", "-w", secret],
            ["find-generic-password", "-a", "x", "-w\(secret)"],
            ["find-generic-password", "--password=\(secret)"],
            ["find-generic-password", "--\(secret)"],
            ["find-internet-password", "-P", secret],
            ["find-internet-password", "-r", secret],
            [secret],
            ["help", secret],
            ["add-generic-password", "-a", "x", "-s", "y", "-X", secret],
        ]
        for arguments in attempts {
            let result = try cli.run(arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(!result.stderr.contains(secret) && !result.stdout.contains(secret), "\(arguments) echoed: \(result.stderr)")
            #expect(!result.stderr.isEmpty)
        }
        let positioned = try cli.run(["find-generic-password", "-a", "x", "-w", secret])
        #expect(positioned.stderr.contains("argument 4"), "\(positioned.stderr)")
    }
}
