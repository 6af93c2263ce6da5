public import Foundation
import SecItemSecurity

/// A typed attribute value, as stored by every backend.
///
/// The kind of value is kept (an account given as `Data` comes back as `Data`).
/// Equality for matching and for primary keys is ``canonicalBytes(kind:)``-based,
/// so a blob String and the Data of its UTF-8 bytes are the same value.
public enum AttributeValue: Sendable, Hashable, CustomStringConvertible {
    case string(String)
    case data(Data)
    case number(Int64)
    case date(Date)

    /// The value as the result dictionaries return it: `String`, `Data`, `Int` or `Date`.
    public var anyValue: Any {
        switch self {
        case .string(let s): return s
        case .data(let d): return d
        case .number(let n): return Int(n)
        case .date(let d): return d
        }
    }

    /// The value as text, when it is a string or UTF-8 data.
    public var stringValue: String? {
        switch self {
        case .string(let s): return s
        case .data(let d): return String(bytes: d, encoding: .utf8)
        case .number(let n): return String(n)
        case .date: return nil
        }
    }

    /// The value's number, when it is one.
    public var numberValue: Int64? {
        if case .number(let n) = self { return n }
        return nil
    }

    /// A byte encoding under which two values are equal exactly when SecItem
    /// considers them the same value: blob strings, data and numbers compare by
    /// their bytes; other kinds are tagged so that, for example, the number 80 and
    /// the protocol string "80" cannot collide by accident.
    public func canonicalBytes(kind: AttributeKind) -> [UInt8] {
        var out: [UInt8] = []
        appendCanonicalBytes(kind: kind, to: &out)
        return out
    }

    /// Appends ``canonicalBytes(kind:)`` to `out` without intermediate arrays.
    public func appendCanonicalBytes(kind: AttributeKind, to out: inout [UInt8]) {
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: canonicalByteCount(kind: kind)))
        out.withUnsafeMutableBufferPointer { buffer in
            var writer = ByteWriter(UnsafeMutableBufferPointer(rebasing: buffer[start...]))
            writeCanonicalBytes(kind: kind, to: &writer)
        }
    }

    /// The first byte of ``canonicalBytes(kind:)``: what the value counts as for
    /// its kind. The rest (``writeCanonicalBody(to:)``) depends on the value alone.
    private func canonicalTag(kind: AttributeKind) -> UInt8 {
        switch (kind, self) {
        case (.blob, .string), (.string, .string), (.access, .string), (.data, .string): return 0x62
        case (_, .data): return 0x62
        case (.blob, .number): return 0x62
        case (_, .number): return 0x6E
        case (_, .string): return 0x73
        case (_, .date): return 0x64
        }
    }

    /// The length of ``canonicalBytes(kind:)``, without building them.
    func canonicalByteCount(kind: AttributeKind) -> Int {
        switch self {
        case .string(let s): return 1 + s.utf8.count
        case .data(let d): return 1 + d.count
        case .number(let n): return 1 + ByteWriter.decimalCount(n)
        case .date: return 1 + 8
        }
    }

    /// Writes ``canonicalBytes(kind:)`` (``canonicalByteCount(kind:)`` bytes).
    func writeCanonicalBytes(kind: AttributeKind, to writer: inout ByteWriter) {
        writer.write(canonicalTag(kind: kind))
        switch self {
        case .string(let s): writer.write(s)
        case .data(let d): writer.write(d)
        case .number(let n): writer.writeDecimal(n)
        case .date(let d): writer.writeBigEndian(d.timeIntervalSinceReferenceDate.bitPattern)
        }
    }

    /// Whether two values are the same value for an attribute of `kind` (byte-exact).
    public func isSameValue(as other: AttributeValue, kind: AttributeKind) -> Bool {
        switch (self, other) {
        case (.string(var a), .string(var b)):
            guard a.utf8.count == b.utf8.count else { return false }
            return a.withUTF8 { pa in b.withUTF8 { pb in pa.count == 0 || memcmp(pa.baseAddress!, pb.baseAddress!, pa.count) == 0 } }
        case (.data(let a), .data(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.date(let a), .date(let b)):
            return a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        default: return canonicalBytes(kind: kind) == other.canonicalBytes(kind: kind)
        }
    }

    /// Never prints the value: attribute values can be account names and other
    /// identifying data, and descriptions end up in logs.
    public var description: String {
        switch self {
        case .string(let s): return "string(\(s.utf8.count) bytes)"
        case .data(let d): return "data(\(d.count) bytes)"
        case .number: return "number"
        case .date: return "date"
        }
    }
}

/// Fills memory sized in advance front to back: the canonical encodings are
/// measured first (``AttributeValue/canonicalByteCount(kind:)``), so building
/// them needs one allocation and plain copies instead of growing an array.
struct ByteWriter {
    private let buffer: UnsafeMutableBufferPointer<UInt8>
    /// Bytes written so far.
    private(set) var count = 0

    /// A writer at the start of `buffer`; writing past its end is a precondition failure.
    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        self.buffer = buffer
    }

    /// Reserves `n` bytes and returns where they start.
    private mutating func advance(_ n: Int) -> UnsafeMutablePointer<UInt8> {
        let start = count
        count += n
        precondition(count <= buffer.count, "ByteWriter: more bytes than measured")
        return buffer.baseAddress! + start
    }

    /// Leaves `n` bytes to be filled later (``patchBigEndian(_:at:)``) and returns their offset.
    mutating func skip(_ n: Int) -> Int {
        _ = advance(n)
        return count - n
    }

    /// Writes `value` over the 4 bytes at `offset`, which were written or skipped before.
    mutating func patchBigEndian(_ value: UInt32, at offset: Int) {
        precondition(offset >= 0 && offset + 4 <= count)
        withUnsafeBytes(of: value.bigEndian) {
            UnsafeMutableRawPointer(buffer.baseAddress! + offset).copyMemory(from: $0.baseAddress!, byteCount: 4)
        }
    }

    mutating func write(_ byte: UInt8) {
        advance(1).pointee = byte
    }

    mutating func write(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        UnsafeMutableRawPointer(advance(bytes.count)).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
    }

    /// The string's UTF-8 bytes.
    mutating func write(_ string: String) {
        let copied: Void? = string.utf8.withContiguousStorageIfAvailable { write(UnsafeRawBufferPointer($0)) }
        if copied == nil {
            for byte in string.utf8 { write(byte) }
        }
    }

    mutating func write(_ data: Data) {
        data.withUnsafeBytes { write($0) }
    }

    mutating func writeBigEndian(_ value: UInt32) {
        withUnsafeBytes(of: value.bigEndian) { write($0) }
    }

    mutating func writeBigEndian(_ value: UInt64) {
        withUnsafeBytes(of: value.bigEndian) { write($0) }
    }

    /// The decimal digits of `n`, as `String(n)` spells them.
    mutating func writeDecimal(_ n: Int64) {
        let digits = advance(Self.decimalCount(n))
        var end = digits + Self.decimalCount(n)
        if n < 0 { digits.pointee = UInt8(ascii: "-") }
        var magnitude = n.magnitude
        repeat {
            end -= 1
            end.pointee = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
    }

    /// The number of bytes ``writeDecimal(_:)`` writes for `n`.
    static func decimalCount(_ n: Int64) -> Int {
        var count = n < 0 ? 2 : 1
        var magnitude = n.magnitude
        while magnitude >= 10 {
            magnitude /= 10
            count += 1
        }
        return count
    }
}
