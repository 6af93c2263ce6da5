public import Foundation

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
        switch (kind, self) {
        case (.blob, .string(let s)), (.string, .string(let s)), (.access, .string(let s)),
            (.data, .string(let s)):
            out.append(0x62)
            out.append(contentsOf: s.utf8)
        case (_, .data(let d)):
            out.append(0x62)
            out.append(contentsOf: d)
        case (.blob, .number(let n)):
            out.append(0x62)
            Self.appendDecimal(n, to: &out)
        case (_, .number(let n)):
            out.append(0x6E)
            Self.appendDecimal(n, to: &out)
        case (_, .string(let s)):
            out.append(0x73)
            out.append(contentsOf: s.utf8)
        case (_, .date(let d)):
            let bits = d.timeIntervalSinceReferenceDate.bitPattern
            out.append(0x64)
            for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: bits >> (56 - 8 * i))) }
        }
    }

    /// Appends the decimal digits of `n` (as `String(n)` would spell them), without allocating.
    static func appendDecimal(_ n: Int64, to out: inout [UInt8]) {
        if n < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = n.magnitude
        let start = out.count
        repeat {
            out.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        out[start...].reverse()
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
