import Foundation

/// Reads structured values from the fuzzer's bytes: each call consumes a few bytes and
/// gives a value (zeros once the input is exhausted), so small mutations of the input
/// make small changes to the structure built from it.
struct FuzzInput {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var offset = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    var isExhausted: Bool { offset >= bytes.count }

    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func bool() -> Bool { byte() & 1 == 1 }

    /// 0..<n (n > 0).
    mutating func int(below n: Int) -> Int {
        precondition(n > 0)
        if n <= 256 { return Int(byte()) % n }
        return Int(UInt16(byte()) << 8 | UInt16(byte())) % n
    }

    mutating func uint64() -> UInt64 {
        var v: UInt64 = 0
        for _ in 0..<8 { v = v << 8 | UInt64(byte()) }
        return v
    }

    mutating func int64() -> Int64 { Int64(bitPattern: uint64()) }

    /// An integer mostly near the edges and small values, sometimes any 64-bit value.
    mutating func interestingInt64() -> Int64 {
        switch byte() % 8 {
        case 0: return Int64(Int8(bitPattern: byte()))
        case 1: return [Int64.min, Int64.max, Int64(Int32.min), Int64(Int32.max), Int64(UInt32.max), -1, 0, 65535, 65536][int(below: 9)]
        default: return int64()
        }
    }

    /// A length byte, then that many bytes (at most `max`).
    mutating func bytes(max: Int = 64) -> [UInt8] {
        let n = min(Int(byte()), max)
        var out: [UInt8] = []
        out.reserveCapacity(n)
        for _ in 0..<n {
            guard !isExhausted else { break }
            out.append(byte())
        }
        return out
    }

    /// Bytes as text (invalid UTF-8 repaired, as a `String` must be).
    mutating func string(max: Int = 48) -> String { String(decoding: bytes(max: max), as: UTF8.self) }

    mutating func pick<T>(_ choices: [T]) -> T { choices[int(below: choices.count)] }

    /// Whatever is left.
    mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return offset < bytes.count ? Array(bytes[offset...]) : []
    }
}

/// Runs `body` with a fresh private directory, removed afterwards.
func withTemporaryDirectory<R>(_ body: (String) throws -> R) rethrows -> R {
    var template = Array((NSTemporaryDirectory() + "/secitem-fuzz-XXXXXX").utf8CString)
    guard let directory = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }).map({ String(cString: $0) })
    else { fatalError("cannot create a temporary directory: \(String(cString: strerror(errno)))") }
    defer { try? FileManager.default.removeItem(atPath: directory) }
    return try body(directory)
}

/// Writes `bytes` to a new file at `path` (mode 0600).
func writeFile(_ path: String, _ bytes: UnsafeBufferPointer<UInt8>) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { fatalError("cannot create \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var offset = 0
    while offset < bytes.count {
        let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { fatalError("cannot write \(path)") }
        offset += n
    }
}
