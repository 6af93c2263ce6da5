package import Foundation
package import SecItemCore

/// The sealed contents of a row: every attribute and the data, in a small
/// deterministic binary encoding (encoding version 1, the same in file formats 1
/// and 2, `docs/file-format.md`).
package enum ItemPlaintext {
    package static let version: UInt8 = 1

    /// Encodes attributes (sorted by key) and data.
    package static func encode(_ item: StoredItem) -> [UInt8] {
        var out: [UInt8] = [version]
        appendU32(&out, UInt32(item.attributes.count))
        for key in item.attributes.keys.sorted() {
            let keyBytes = Array(key.utf8)
            appendU32(&out, UInt32(keyBytes.count))
            out += keyBytes
            switch item.attributes[key]! {
            case .string(let s):
                out.append(0x73)  // s
                let b = Array(s.utf8)
                appendU32(&out, UInt32(b.count))
                out += b
            case .data(let d):
                out.append(0x62)  // b
                appendU32(&out, UInt32(d.count))
                out += d
            case .number(let n):
                out.append(0x6E)  // n
                appendU32(&out, 8)
                appendU64(&out, UInt64(bitPattern: n))
            case .date(let d):
                out.append(0x64)  // d
                appendU32(&out, 8)
                appendU64(&out, d.timeIntervalSinceReferenceDate.bitPattern)
            }
        }
        if let data = item.data {
            out.append(1)
            appendU32(&out, UInt32(data.count))
            out += data
        } else {
            out.append(0)
        }
        return out
    }

    /// Decodes what ``encode(_:)`` wrote, or returns `nil` for malformed bytes.
    package static func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> (attributes: [String: AttributeValue], data: Data?)? {
        var reader = Reader(bytes: bytes)
        guard reader.u8() == version, let count = reader.u32() else { return nil }
        var attributes: [String: AttributeValue] = [:]
        attributes.reserveCapacity(Int(min(count, 64)))
        for _ in 0..<count {
            guard let keyLength = reader.u32(), let keyBytes = reader.take(Int(keyLength)),
                let key = string(keyBytes), let tag = reader.u8(), let length = reader.u32(),
                let valueBytes = reader.take(Int(length)), let value = attributeValue(tag, valueBytes)
            else { return nil }
            attributes[key] = value
        }
        guard let data = trailingData(&reader) else { return nil }
        return (attributes, data)
    }

    /// The data of what ``encode(_:)`` wrote and its attributes named in `keeping`
    /// (the access check's `pdmn` and `accc`), walking over the others without
    /// building them (for a search that returns the data alone), or `nil` for
    /// malformed bytes. The data is `nil` for an item without data.
    package static func decodeData(_ bytes: UnsafeBufferPointer<UInt8>, keeping: [String])
        -> (attributes: [String: AttributeValue], data: Data?)?
    {
        var reader = Reader(bytes: bytes)
        guard reader.u8() == version, let count = reader.u32() else { return nil }
        var attributes: [String: AttributeValue] = [:]
        // Attribute names are four-letter codes: each compared as one 32-bit word.
        // A name of another length gets 1 << 32, which no word equals.
        return withUnsafeTemporaryAllocation(of: UInt64.self, capacity: max(1, keeping.count)) { codes in
            for (i, name) in keeping.enumerated() { codes[i] = code(name).map(UInt64.init) ?? 1 << 32 }
            for _ in 0..<count {
                guard let keyLength = reader.u32(), let keyBytes = reader.take(Int(keyLength)), let tag = reader.u8(),
                    tag == 0x73 || tag == 0x62 || tag == 0x6E || tag == 0x64, let length = reader.u32(),
                    let valueBytes = reader.take(Int(length))
                else { return nil }
                let index: Int?
                if keyBytes.count == 4 {
                    let word = UInt64(word(keyBytes))
                    index = (0..<keeping.count).first { codes[$0] == word }
                } else {
                    index = keeping.firstIndex { code($0) == nil && $0.utf8.elementsEqual(keyBytes) }
                }
                guard let index else { continue }
                guard let value = attributeValue(tag, valueBytes) else { return nil }
                attributes[keeping[index]] = value
            }
            guard let data = trailingData(&reader) else { return nil }
            return (attributes, data)
        }
    }

    /// A four-byte name as one big-endian word, `nil` for another length.
    private static func code(_ name: String) -> UInt32? {
        var word: UInt32 = 0
        var count = 0
        for byte in name.utf8 {
            count += 1
            if count > 4 { return nil }
            word = word << 8 | UInt32(byte)
        }
        return count == 4 ? word : nil
    }

    private static func word(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt32 {
        UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3])
    }

    /// The value a tag (`s`, `b`, `n`, `d`) and its bytes encode, or `nil` when malformed.
    private static func attributeValue(_ tag: UInt8, _ bytes: UnsafeBufferPointer<UInt8>) -> AttributeValue? {
        switch tag {
        case 0x73:
            return string(bytes).map { .string($0) }
        case 0x62:
            return .data(Data(bytes))
        case 0x6E:
            guard bytes.count == 8 else { return nil }
            return .number(Int64(bitPattern: u64(bytes)))
        case 0x64:
            guard bytes.count == 8 else { return nil }
            return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: u64(bytes))))
        default:
            return nil
        }
    }

    /// The UTF-8 in `bytes`, or `nil` when it is not valid UTF-8. ASCII (every
    /// attribute name, most values) skips the standard library's generic validator.
    private static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var high: UInt8 = 0
        for b in bytes { high |= b }
        if high < 0x80 { return String(decoding: bytes, as: UTF8.self) }
        return String(validating: bytes, as: UTF8.self)
    }

    package static func appendU32(_ out: inout [UInt8], _ v: UInt32) {
        out += [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
    }

    package static func appendU64(_ out: inout [UInt8], _ v: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }

    private static func u64(_ b: UnsafeBufferPointer<UInt8>) -> UInt64 {
        b.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The data flag, the data and the end of the bytes, which close both encodings'
    /// readers: `.some(nil)` for an item without data, `nil` for malformed bytes.
    private static func trailingData(_ reader: inout Reader) -> Data?? {
        guard let hasData = reader.u8() else { return nil }
        var data: Data?
        if hasData == 1 {
            guard let length = reader.u32(), let bytes = reader.take(Int(length)) else { return nil }
            data = Data(bytes)
        } else if hasData != 0 {
            return nil
        }
        guard reader.atEnd else { return nil }
        return .some(data)
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var offset = 0

        var atEnd: Bool { offset == bytes.count }

        /// A view of the next `n` bytes (no copy: the decoder runs on the buffer it was given).
        mutating func take(_ n: Int) -> UnsafeBufferPointer<UInt8>? {
            guard n >= 0, n <= bytes.count - offset else { return nil }
            defer { offset += n }
            return UnsafeBufferPointer(rebasing: bytes[offset..<offset + n])
        }

        mutating func u8() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func u32() -> UInt32? {
            guard let b = take(4) else { return nil }
            return b.reduce(0) { $0 << 8 | UInt32($1) }
        }
    }
}
