import SecItemCore

///
/// Stored in the keychain file, so a file keeps the cost it was created with;
/// the default is N = 2^15, r = 8, p = 1 (32 MiB, about 0.1 s).
public struct ScryptParameters: Sendable, Hashable, CustomStringConvertible {
    /// log2 of the CPU/memory cost N.
    public var logN: Int
    /// The block size r.
    public var r: Int
    /// The parallelization p.
    public var p: Int

    /// N = 2^15, r = 8, p = 1.
    public static let `default` = ScryptParameters(logN: 15, r: 8, p: 1)

    public init(logN: Int, r: Int, p: Int) {
        self.logN = logN
        self.r = r
        self.p = p
    }

    /// Whether the parameters are sane (bounded so a hostile file cannot make
    /// opening it eat all memory): 1 ≤ log2 N ≤ 22, 1 ≤ r ≤ 32, 1 ≤ p ≤ 16, memory ≤ 1 GiB.
    package var isValid: Bool {
        guard (1...22).contains(logN), (1...32).contains(r), (1...16).contains(p) else { return false }
        return memoryNeeded <= 1 << 30
    }

    package var memoryNeeded: UInt64 { 128 * UInt64(r) * (UInt64(1) << UInt64(logN) + UInt64(p) + 2) }

    public var description: String { "scrypt(N=2^\(logN), r=\(r), p=\(p))" }
}
