public import Foundation
import SecItemSecurity

extension Duration {
    /// Whole milliseconds, truncated: the unit of GDBus, libpq and `poll` timeouts.
    public var wholeMilliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}

extension UUID {
    /// The UUID made of exactly these 16 bytes (RFC 4122 byte order); `nil` for any other count.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 16, let uuid = Array(bytes).withUnsafeBytes(UUID.init(bytes:)) else { return nil }
        self = uuid
    }

    /// The UUID made of exactly these 16 bytes, read in place (a row's column as the
    /// database hands it out: no copy); `nil` for any other count.
    @inlinable
    public init?(bytes: UnsafeRawBufferPointer) {
        guard bytes.count == 16 else { return nil }
        self.init(uuid: bytes.loadUnaligned(as: uuid_t.self))
    }
}
