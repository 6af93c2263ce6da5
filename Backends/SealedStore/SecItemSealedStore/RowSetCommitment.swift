package import Foundation
package import SecItemCore

/// The keyed commitment to the set of live rows (format 2, `docs/file-format.md`).
///
/// Every live row is one *element*: its UUID, its version and its box's GCM tag.
/// The commitment is an invertible Bloom lookup table of the elements: 48 cells
/// in three subtables of 16, each element added to one cell per subtable chosen
/// by its keyed hash; a cell holds the count of elements in it, the XOR of their
/// 40-byte keys and the XOR of their 8-byte keyed checks. Adding or removing an
/// element touches three cells (O(1) per write, whatever the store's size).
///
/// Two tables subtract cell by cell; the difference of the committed table and
/// the one recomputed from the file lists the elements on each side, exactly,
/// when at most about a dozen differ (it peels cells holding a single element).
/// So `verify` names each row that is missing, older than committed, or unknown
/// to the commitment. The positions and checks are keyed (HMAC under the data
/// key's HMAC key): without the key nobody can make two tables collide. The
/// table, the generation and the row count are sealed together by
/// ``mac(_:)``, kept beside them.
///
/// Independent of the store: the SQLite backend keeps it in its `state` row, and
/// any other store of the same rows can keep the same bytes.
package struct RowSetCommitment: Equatable {
    package static let subtableCells = 16
    package static let subtables = 3
    package static let cellCount = subtableCells * subtables
    /// uuid (16) ‖ version (8, big-endian) ‖ box tag (16).
    package static let keyLength = 40
    package static let checkLength = 8
    /// count (4, big-endian two's complement) ‖ key XOR ‖ check XOR.
    package static let cellLength = 4 + keyLength + checkLength

    /// Incremented by every write transaction that changes a row; the version
    /// stamped on every row that transaction writes.
    package var generation: Int64
    /// Live rows.
    package var count: Int64
    /// `cellCount` cells of `cellLength` bytes.
    package var cells: [UInt8]

    package init(generation: Int64) {
        self.generation = generation
        count = 0
        cells = [UInt8](repeating: 0, count: Self.cellCount * Self.cellLength)
    }

    package init?(generation: Int64, count: Int64, cells: [UInt8]) {
        guard cells.count == Self.cellCount * Self.cellLength, count >= 0, generation >= 0 else { return nil }
        self.generation = generation
        self.count = count
        self.cells = cells
    }

    /// One row as the commitment sees it.
    package struct Element: Hashable {
        package var uuid: [UInt8]
        package var version: Int64
        var tag: [UInt8]

        /// From a row's UUID, version and sealed box (its last 16 bytes are the tag).
        package init(uuid: some Collection<UInt8>, version: Int64, sealed: UnsafeRawBufferPointer) {
            self.uuid = Array(uuid)
            self.version = version
            tag = sealed.count >= Crypto.tagLength ? Array(sealed[(sealed.count - Crypto.tagLength)...]) : Array(sealed)
        }

        init?(key: ArraySlice<UInt8>) {
            guard key.count == RowSetCommitment.keyLength else { return nil }
            let k = Array(key)
            uuid = Array(k[0..<16])
            version = k[16..<24].reduce(0) { $0 << 8 | Int64($1) }
            tag = Array(k[24..<40])
        }

        /// The 40 key bytes (a short tag, from a malformed box, is padded with zeros).
        var key: [UInt8] {
            var out = [UInt8](repeating: 0, count: RowSetCommitment.keyLength)
            for (i, b) in uuid.prefix(16).enumerated() { out[i] = b }
            for i in 0..<8 { out[16 + i] = UInt8(truncatingIfNeeded: UInt64(bitPattern: version) >> UInt64(56 - 8 * i)) }
            for (i, b) in tag.prefix(16).enumerated() { out[24 + i] = b }
            return out
        }

        package var id: UUID? {
            UUID(bytes: uuid)
        }
    }

    package static let elementDomain = Array("secitem-file/2 row".utf8)
    package static let stateDomain = Array("secitem-file/2 state".utf8)

    /// The element's keyed hash: check bytes 0..<8, cell choices from bytes 8..<14.
    package static func hash(_ key: [UInt8], _ mac: MACContext) throws(SecItemError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        try elementDomain.withUnsafeBufferPointer { (d: UnsafeBufferPointer<UInt8>) throws(SecItemError) in
            try key.withUnsafeBufferPointer { (k: UnsafeBufferPointer<UInt8>) throws(SecItemError) in
                try out.withUnsafeMutableBufferPointer { (o: inout UnsafeMutableBufferPointer<UInt8>) throws(SecItemError) in
                    try mac.run(d, k, into: o.baseAddress!)
                }
            }
        }
        return out
    }

    package mutating func insert(_ element: Element, _ mac: MACContext) throws(SecItemError) {
        let key = element.key
        apply(key, try Self.hash(key, mac), sign: 1)
        count += 1
    }

    package mutating func remove(_ element: Element, _ mac: MACContext) throws(SecItemError) {
        let key = element.key
        apply(key, try Self.hash(key, mac), sign: -1)
        count -= 1
    }

    private mutating func apply(_ key: [UInt8], _ hash: [UInt8], sign: Int32) {
        for s in 0..<Self.subtables {
            let choice = (Int(hash[8 + 2 * s]) << 8 | Int(hash[9 + 2 * s])) % Self.subtableCells
            let base = (s * Self.subtableCells + choice) * Self.cellLength
            setCount(base, cellCount(base) &+ sign)
            for i in 0..<Self.keyLength { cells[base + 4 + i] ^= key[i] }
            for i in 0..<Self.checkLength { cells[base + 4 + Self.keyLength + i] ^= hash[i] }
        }
    }

    private func cellCount(_ base: Int) -> Int32 {
        Int32(bitPattern: UInt32(cells[base]) << 24 | UInt32(cells[base + 1]) << 16 | UInt32(cells[base + 2]) << 8
            | UInt32(cells[base + 3]))
    }

    private mutating func setCount(_ base: Int, _ value: Int32) {
        let v = UInt32(bitPattern: value)
        cells[base] = UInt8(v >> 24)
        cells[base + 1] = UInt8((v >> 16) & 0xFF)
        cells[base + 2] = UInt8((v >> 8) & 0xFF)
        cells[base + 3] = UInt8(v & 0xFF)
    }

    /// The MAC sealing generation, count and cells together.
    package func mac(_ mac: MACContext) throws(SecItemError) -> [UInt8] {
        var message = Self.stateDomain
        for value in [generation, count] {
            for i in 0..<8 { message.append(UInt8(truncatingIfNeeded: UInt64(bitPattern: value) >> UInt64(56 - 8 * i))) }
        }
        message += cells
        return try mac.run(message)
    }

    /// The elements in `self` and not in `other`, and the reverse, or `nil` when
    /// too many differ to list (the tables still tell *that* they differ).
    package func difference(_ other: RowSetCommitment, _ mac: MACContext) throws(SecItemError)
        -> (onlyHere: [Element], onlyThere: [Element])?
    {
        var diff = self
        for base in stride(from: 0, to: cells.count, by: Self.cellLength) {
            diff.setCount(base, cellCount(base) &- other.cellCount(base))
            for i in 4..<Self.cellLength { diff.cells[base + i] ^= other.cells[base + i] }
        }
        var here: [Element] = []
        var there: [Element] = []
        var progress = true
        while progress {
            progress = false
            for base in stride(from: 0, to: diff.cells.count, by: Self.cellLength) {
                let n = diff.cellCount(base)
                guard n == 1 || n == -1 else { continue }
                let key = Array(diff.cells[(base + 4)..<(base + 4 + Self.keyLength)])
                let hash = try Self.hash(key, mac)
                guard hash[0..<Self.checkLength].elementsEqual(diff.cells[(base + 4 + Self.keyLength)..<(base + Self.cellLength)]),
                    let element = Element(key: key[...])
                else { continue }
                diff.apply(key, hash, sign: -n)
                if n == 1 { here.append(element) } else { there.append(element) }
                progress = true
            }
        }
        guard diff.cells.allSatisfy({ $0 == 0 }) else { return nil }
        return (here, there)
    }
}
