public import Foundation

/// A reproducible random number generator (SplitMix64) for randomized tests.
///
/// The seed comes from `SECITEM_TEST_SEED` when it is set, so a failure can be
/// replayed exactly (`SECITEM_TEST_SEED=12345 swift test --filter …`); otherwise
/// it is drawn from the system generator. A randomized test names the seed in
/// every failure message (``replayHint``).
public struct SeededRandom: RandomNumberGenerator, Sendable {
    /// The seed this generator started from.
    public let seed: UInt64
    private var state: UInt64

    /// A generator starting from `seed`.
    public init(seed: UInt64) {
        self.seed = seed
        self.state = seed
    }

    /// A generator seeded from `SECITEM_TEST_SEED`, else at random.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.init(seed: Self.seed(environment: environment))
    }

    /// `SECITEM_TEST_SEED` (decimal or `0x` hex) when set and valid, else a random seed.
    public static func seed(environment: [String: String] = ProcessInfo.processInfo.environment) -> UInt64 {
        if let text = environment["SECITEM_TEST_SEED"], !text.isEmpty {
            if text.hasPrefix("0x"), let value = UInt64(text.dropFirst(2), radix: 16) { return value }
            if let value = UInt64(text) { return value }
        }
        return UInt64.random(in: .min ... .max)
    }

    /// The `index`th independent generator derived from this one's seed (one per
    /// thread, so each thread's sequence is reproducible whatever the interleaving).
    public func derived(_ index: Int) -> SeededRandom {
        var mixer = SeededRandom(seed: seed &+ 0x9E37_79B9_7F4A_7C15 &* UInt64(truncatingIfNeeded: index + 1))
        return SeededRandom(seed: mixer.next())
    }

    /// How to replay: `seed N (replay with SECITEM_TEST_SEED=N)`.
    public var replayHint: String { "seed \(seed) (replay with SECITEM_TEST_SEED=\(seed))" }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
