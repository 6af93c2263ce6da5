public import Foundation

extension Duration {
    /// Whole milliseconds, truncated: the unit of GDBus, libpq and `poll` timeouts.
    public var wholeMilliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}

extension UUID {
    /// The UUID made of exactly these 16 bytes (RFC 4122 byte order); `nil` for any other count.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        let b = Array(bytes)
        self.init(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }
}
