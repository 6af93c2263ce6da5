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

    /// The attributes a data-alone read keeps (``decodeData(_:keeping:)``), and the
    /// dictionary of them it last built.
    ///
    /// Rows of one store nearly all carry the same protection (`pdmn` `ak`, no `accc`),
    /// so the dictionary is remembered by the kept entries' encoded bytes, built once and
    /// shared, not built per read. Not secret: protection classes and access-control
    /// flags. Not thread-safe: one per codec, used under its connection's lock.
    package final class KeptAttributes {
        static let maxKept = 8
        /// Kept entries longer than this, together, are not remembered.
        static let maxKeyBytes = 96

        package let names: [String]
        /// Each name's four bytes as a big-endian word; 1 << 32 (which no word equals)
        /// for a name of another length, compared by its bytes instead.
        let codes: [UInt64]
        /// The last dictionary built, and its key: each kept entry's index, tag, length and value.
        var key: [UInt8] = []
        var attributes: [String: AttributeValue] = [:]
        var remembers = false

        package init(_ names: [String]) {
            precondition(names.count <= Self.maxKept, "at most \(Self.maxKept) kept attributes")
            self.names = names
            codes = names.map { ItemPlaintext.code($0).map(UInt64.init) ?? 1 << 32 }
            key.reserveCapacity(Self.maxKeyBytes)
        }
    }

    /// The data of what ``encode(_:)`` wrote and its attributes named in `keeping`
    /// (the access check's `pdmn` and `accc`), walking over the others without
    /// building them (for a search that returns the data alone), or `nil` for
    /// malformed bytes. The data is `nil` for an item without data. Every entry is
    /// checked as ``decode(_:)`` checks it (lengths, tags); a kept attribute's value
    /// must decode. When an attribute appears twice, the later one counts.
    package static func decodeData(_ bytes: UnsafeBufferPointer<UInt8>, keeping: KeptAttributes)
        -> (attributes: [String: AttributeValue], data: Data?)?
    {
        guard let base = bytes.baseAddress, bytes.count >= 5, base[0] == version else { return nil }
        let end = bytes.count
        @inline(__always) func u32(_ at: Int) -> Int {
            Int(base[at]) << 24 | Int(base[at + 1]) << 16 | Int(base[at + 2]) << 8 | Int(base[at + 3])
        }
        let count = u32(1)
        var offset = 5
        let kept = keeping.codes.count
        // found[i]: where kept attribute i's entry is (the offset of its tag), 0 when absent;
        // found[maxKept + i]: its code (KeptAttributes.codes), read here once.
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: 2 * KeptAttributes.maxKept) { found in
            let codes = found.baseAddress! + KeptAttributes.maxKept
            for i in 0..<kept {
                found[i] = 0
                codes[i] = Int(truncatingIfNeeded: keeping.codes[i])
            }
            var remaining = count
            while remaining > 0 {
                remaining -= 1
                // name length (4), name, tag (1), value length (4), value
                guard end - offset >= 4 else { return nil }
                let nameLength = u32(offset)
                guard nameLength <= end - offset - 4 - 5 else { return nil }
                let name = offset + 4
                let tag = name + nameLength
                let valueLength = u32(tag + 1)
                guard base[tag] == 0x73 || base[tag] == 0x62 || base[tag] == 0x6E || base[tag] == 0x64,
                    valueLength <= end - tag - 5
                else { return nil }
                offset = tag + 5 + valueLength
                if nameLength == 4 {
                    let word = u32(name)
                    for i in 0..<kept where codes[i] == word {
                        found[i] = tag
                        break
                    }
                } else {
                    for i in 0..<kept where codes[i] == 1 << 32
                        && keeping.names[i].utf8.elementsEqual(UnsafeBufferPointer(start: base + name, count: nameLength))
                    {
                        found[i] = tag
                        break
                    }
                }
            }
            var reader = Reader(bytes: bytes, offset: offset)
            guard let data = trailingData(&reader) else { return nil }
            // The memo's key: each kept attribute's index, tag, length and value.
            var keyLength = 0
            for i in 0..<kept where found[i] != 0 { keyLength += 6 + u32(found[i] + 1) }
            let remembered = keyLength <= KeptAttributes.maxKeyBytes
            if remembered, keeping.remembers, keeping.key.count == keyLength, sameKey(keeping.key, found, kept, base, u32) {
                return (keeping.attributes, data)
            }
            var attributes: [String: AttributeValue] = [:]
            for i in 0..<kept where found[i] != 0 {
                let tag = found[i]
                guard let value = attributeValue(base[tag], UnsafeBufferPointer(start: base + tag + 5, count: u32(tag + 1)))
                else { return nil }
                attributes[keeping.names[i]] = value
            }
            if remembered {
                keeping.key.removeAll(keepingCapacity: true)
                for i in 0..<kept where found[i] != 0 {
                    let tag = found[i]
                    keeping.key.append(UInt8(i))
                    keeping.key.append(contentsOf: UnsafeBufferPointer(start: base + tag, count: 5 + u32(tag + 1)))
                }
                keeping.attributes = attributes
                keeping.remembers = true
            }
            return (attributes, data)
        }
    }

    /// Whether `key` is the memo key of the kept entries at `found` (index, tag, length, value each).
    @inline(__always)
    private static func sameKey(
        _ key: [UInt8], _ found: UnsafeMutableBufferPointer<Int>, _ kept: Int, _ base: UnsafePointer<UInt8>,
        _ u32: (Int) -> Int
    ) -> Bool {
        key.withUnsafeBufferPointer { k in
            var at = 0
            for i in 0..<kept where found[i] != 0 {
                let length = 5 + u32(found[i] + 1)
                guard k[at] == UInt8(i), memcmp(k.baseAddress! + at + 1, base + found[i], length) == 0 else { return false }
                at += 1 + length
            }
            return at == k.count
        }
    }

    /// A four-byte name as one big-endian word, `nil` for another length.
    static func code(_ name: String) -> UInt32? {
        var word: UInt32 = 0
        var count = 0
        for byte in name.utf8 {
            count += 1
            if count > 4 { return nil }
            word = word << 8 | UInt32(byte)
        }
        return count == 4 ? word : nil
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

        init(bytes: UnsafeBufferPointer<UInt8>, offset: Int = 0) {
            self.bytes = bytes
            self.offset = offset
        }

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
