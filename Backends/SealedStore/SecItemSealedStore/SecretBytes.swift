internal import CSecItemCrypto
package import SecItemCore

/// Key material in a heap buffer of its own that is zeroed (`OPENSSL_cleanse`)
/// when freed, the way swift-crypto's `SecureBytes` does.
///
/// A class rather than an array, so that copies share one buffer and no stray
/// copy of a key outlives its owner. Never printed.
///
/// `@unchecked Sendable`: the bytes are written only while it is initialised and
/// in `deinit`; in between they are only read, so threads may share one (the file
/// backend's read connections share its key-encryption key).
package final class SecretBytes: CustomStringConvertible, @unchecked Sendable {
    private let buffer: UnsafeMutableRawBufferPointer

    /// The number of key bytes.
    package let count: Int

    /// A zero-filled buffer of `count` bytes.
    package init(zeroed count: Int) {
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        if count == 0 { buffer.storeBytes(of: 0, as: UInt8.self) }
        self.count = count
    }

    /// `count` random bytes from OpenSSL's CSPRNG.
    package convenience init(random count: Int) throws(SecItemError) {
        self.init(zeroed: count)
        guard csecitem_random_bytes(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), count) == 0 else {
            throw SecItemError(errSecIO, "the system random number generator failed")
        }
    }

    /// A copy of `bytes`.
    package convenience init(copying bytes: some Sequence<UInt8>) {
        let array = Array(bytes)
        self.init(zeroed: array.count)
        array.withUnsafeBytes { src in
            if src.count > 0 { buffer.baseAddress!.copyMemory(from: src.baseAddress!, byteCount: src.count) }
        }
    }

    /// Fills a new buffer through `body`, which receives the writable bytes.
    package convenience init<E: Error>(count: Int, filling body: (UnsafeMutablePointer<UInt8>) throws(E) -> Void) throws(E) {
        self.init(zeroed: count)
        try body(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }

    deinit {
        csecitem_cleanse(buffer.baseAddress, buffer.count)
        buffer.deallocate()
    }

    /// Reads the bytes (exactly ``count`` of them).
    package func withBytes<R, E: Error>(_ body: (UnsafePointer<UInt8>, Int) throws(E) -> R) throws(E) -> R {
        try body(UnsafePointer(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)), count)
    }

    /// Constant-time comparison.
    package func equals(_ other: SecretBytes) -> Bool {
        guard count == other.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<count {
            diff |= buffer[i] ^ other.buffer[i]
        }
        return diff == 0
    }

    package var description: String { "SecretBytes(\(count) bytes, redacted)" }
}

/// Zeroes a byte array in place before it is dropped (best effort: earlier copies
/// the optimizer made cannot be reached).
package func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { csecitem_cleanse($0.baseAddress, $0.count) }
}
