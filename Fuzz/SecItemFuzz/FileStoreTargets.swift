import Foundation
import SecItemCore
import SecItemSQLite

// The file store's decoders of what it reads from disk (docs/file-format.md): the
// header (`meta` table), the state row (row-set commitment) and the row box. Someone
// who can write the file controls every byte of these; someone without the key
// cannot make a box or a MAC authenticate, so the targets also check that tampering
// is detected.

/// Fixed keys: the fuzzer explores the decoders, not the key. (`ItemKeys` is not
/// `Sendable`: its contexts serve one thread, and libFuzzer runs inputs on one.)
private enum FuzzKeys {
    nonisolated(unsafe) static let format2 = try! ItemKeys(dataKey: SecretBytes(zeroed: 32), format: 2)
    nonisolated(unsafe) static let format3 = try! ItemKeys(dataKey: SecretBytes(zeroed: 32), format: 3)
    nonisolated(unsafe) static let format1 = try! ItemKeys(dataKey: SecretBytes(zeroed: 32), format: 1)
}

// MARK: file-header

/// `KeychainHeader.parse`: the `meta` values (magic, format, KEK kind, wrapped data
/// key, epoch, scrypt parameters and salt) as typed values from the input.
///
/// Invariants: no crash; a header that parses survives a round trip through its own
/// `metaValues`; unwrapping the data key under a wrong KEK gives nil, never a crash.
enum FileHeaderTarget {
    static let target = FuzzTarget(
        name: "file-header", summary: "file store meta table values through KeychainHeader.parse and unwrap", run: run, seeds: seeds)

    static let keys = ["magic", "format", "kek", "data_key", "epoch", "scrypt_log_n", "scrypt_r", "scrypt_p", "scrypt_salt"]
    static let texts = [KeychainHeader.magic, "key", "passphrase", ""]

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        var input = FuzzInput(bytes)
        var values: [String: KeychainHeader.MetaValue] = [:]
        for _ in 0..<(input.byte() % 12) {
            let k = input.byte()
            let key = Int(k) < keys.count ? keys[Int(k)] : input.string(max: 16)
            switch input.byte() % 3 {
            case 0: values[key] = .integer(input.int64())
            case 1:
                let t = input.byte()
                values[key] = .text(Int(t) < texts.count ? texts[Int(t)] : input.string(max: 32))
            default: values[key] = .bytes(input.bytes(max: 128))
            }
        }
        guard let header = try? KeychainHeader.parse(values, source: "fuzz") else { return }
        let again: KeychainHeader
        do {
            again = try KeychainHeader.parse(Dictionary(header.metaValues, uniquingKeysWith: { $1 }), source: "fuzz")
        } catch {
            FuzzCheck.fail("a parsed header does not parse from its own meta values: \(error)")
        }
        FuzzCheck.expect(
            again.protection == header.protection && again.scrypt == header.scrypt && again.salt == header.salt
                && again.wrappedDataKey == header.wrappedDataKey && again.epoch == header.epoch && again.format == header.format,
            "a header changed in a round trip through its meta values")
        _ = try? header.unwrap(kek: SecretBytes(zeroed: 32))
    }

    /// The input bytes that `run` reads as `values` (the seeds' encoder).
    static func encode(_ values: [(key: String, value: KeychainHeader.MetaValue)]) -> [UInt8] {
        var out: [UInt8] = [UInt8(values.count)]
        for (key, value) in values {
            out.append(UInt8(keys.firstIndex(of: key)!))
            switch value {
            case .integer(let v):
                out.append(0)
                for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: UInt64(bitPattern: v) >> UInt64(56 - 8 * i))) }
            case .text(let t):
                out.append(1)
                out.append(UInt8(texts.firstIndex(of: t)!))
            case .bytes(let b):
                out.append(2)
                out.append(UInt8(b.count))
                out += b
            }
        }
        return out
    }

    static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        let dataKey = SecretBytes(zeroed: 32)
        var key = KeychainHeader(protection: .key, wrappedDataKey: [], epoch: 1)
        try key.wrap(dataKey, kek: SecretBytes(zeroed: 32))
        var passphrase = KeychainHeader(
            protection: .passphrase, scrypt: ScryptParameters(logN: 15, r: 8, p: 1), salt: Array(repeating: 7, count: 16),
            wrappedDataKey: [], epoch: 3)
        try passphrase.wrap(dataKey, kek: SecretBytes(zeroed: 32))
        var format1 = KeychainHeader(protection: .key, wrappedDataKey: [], epoch: 1, format: 1)
        try format1.wrap(dataKey, kek: SecretBytes(zeroed: 32))
        return [
            ("key-format2", encode(key.metaValues)), ("passphrase-format2", encode(passphrase.metaValues)),
            ("key-format1", encode(format1.metaValues)),
        ]
    }
}

// MARK: file-state

/// The `state` row: `RowSetCommitment(generation:count:cells:)`, its MAC, and the
/// difference `verify` computes between the committed table and one recomputed from rows.
///
/// Modes (first byte): a state row from the input (any generation, count, cells and
/// MAC) compared with a table of rows; two sets of rows from a shared pool, whose
/// tables' difference must list exactly the rows on each side whenever it lists any.
enum FileStateTarget {
    static let target = FuzzTarget(
        name: "file-state", summary: "file store state row through RowSetCommitment (init, MAC, difference)", run: run, seeds: seeds)

    static let cellsLength = RowSetCommitment.cellCount * RowSetCommitment.cellLength

    static func element(_ input: inout FuzzInput) -> RowSetCommitment.Element {
        let uuid = (0..<16).map { _ in input.byte() }
        let version = input.int64() & Int64.max
        let tag = (0..<16).map { _ in input.byte() }
        return tag.withUnsafeBytes { RowSetCommitment.Element(uuid: uuid, version: version, sealed: $0) }
    }

    static func table(_ elements: some Sequence<RowSetCommitment.Element>, generation: Int64) -> RowSetCommitment {
        var table = RowSetCommitment(generation: generation)
        for element in elements {
            do { try table.insert(element, FuzzKeys.format2.mac) } catch { FuzzCheck.fail("insert failed: \(error)") }
        }
        return table
    }

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        var input = FuzzInput(bytes)
        let mac = FuzzKeys.format2.mac
        if input.bool() {
            // A state row as a file holds it.
            let generation = input.int64()
            let count = input.int64()
            var cells = input.bytes(max: 255)
            if input.bool() {
                // The right length, the fuzzer's bytes first.
                cells += [UInt8](repeating: 0, count: max(0, cellsLength - cells.count))
                cells = Array(cells.prefix(cellsLength))
            }
            let stored = (0..<32).map { _ in input.byte() }
            let rows = (0..<input.int(below: 6)).map { _ in element(&input) }
            guard let committed = RowSetCommitment(generation: generation, count: count, cells: cells) else {
                FuzzCheck.expect(
                    cells.count != cellsLength || count < 0 || generation < 0, "a well-formed state row was refused")
                return
            }
            guard let computed = try? committed.mac(mac) else { FuzzCheck.fail("the state MAC failed") }
            _ = computed == stored
            _ = try? committed.difference(table(rows, generation: generation), mac)
            return
        }
        // Two sets of rows from one pool of distinct rows.
        var pool: [RowSetCommitment.Element] = []
        for _ in 0..<input.int(below: 20) {
            let e = element(&input)
            if !pool.contains(e) { pool.append(e) }
        }
        var here: [RowSetCommitment.Element] = []
        var there: [RowSetCommitment.Element] = []
        for e in pool {
            switch input.byte() % 4 {
            case 0: here.append(e)
            case 1: there.append(e)
            case 2: here.append(e); there.append(e)
            default: break
            }
        }
        let a = table(here, generation: 1)
        let b = table(there, generation: 1)
        let result: (onlyHere: [RowSetCommitment.Element], onlyThere: [RowSetCommitment.Element])?
        do { result = try a.difference(b, mac) } catch { FuzzCheck.fail("difference threw: \(error)") }
        guard let (onlyHere, onlyThere) = result else {
            // Too many differences to list: only allowed when some differ.
            FuzzCheck.expect(Set(here) != Set(there), "equal tables gave no difference")
            return
        }
        FuzzCheck.expect(Set(onlyHere) == Set(here).subtracting(there), "difference listed the wrong rows on this side")
        FuzzCheck.expect(Set(onlyThere) == Set(there).subtracting(here), "difference listed the wrong rows on the other side")
        FuzzCheck.expect(onlyHere.count + onlyThere.count == Set(onlyHere).count + Set(onlyThere).count, "a row listed twice")
    }

    static func seeds() -> [(name: String, bytes: [UInt8])] {
        var emptyRow: [UInt8] = [1]
        emptyRow += [UInt8](repeating: 0, count: 7) + [5]  // generation 5
        emptyRow += [UInt8](repeating: 0, count: 8)  // count 0
        emptyRow += [0, 1] + [UInt8](repeating: 0, count: 32)  // no cell bytes, right length; MAC
        emptyRow += [2] + [UInt8](repeating: 0x11, count: 40) + [UInt8](repeating: 0x22, count: 40)
        var sets: [UInt8] = [0, 6]
        for i in 0..<6 { sets += [UInt8](repeating: UInt8(i + 1), count: 40) }
        sets += [0, 1, 2, 2, 3, 0]
        return [("state-row", emptyRow), ("two-sets", sets)]
    }
}

// MARK: file-row

/// One row's columns, owned: what `RowCodec.decode` reads in place.
private final class OwnedRow: RowColumns {
    private var storage: [UnsafeMutableRawBufferPointer] = []
    var uuid: UnsafeRawBufferPointer?
    var itemClass: String?
    var primaryKeyMAC: UnsafeRawBufferPointer?
    var indexMACs: [UnsafeRawBufferPointer?] = []
    var version: Int64 = 0
    var sealed: UnsafeRawBufferPointer?
    var seq: Int64?

    func indexMAC(_ index: Int) -> UnsafeRawBufferPointer? { index < indexMACs.count ? indexMACs[index] : nil }

    /// A buffer holding `bytes`, alive as long as the row.
    func column(_ bytes: [UInt8]?) -> UnsafeRawBufferPointer? {
        guard let bytes else { return nil }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
        buffer.copyBytes(from: bytes)
        storage.append(buffer)
        return UnsafeRawBufferPointer(buffer)
    }

    deinit { for buffer in storage { buffer.deallocate() } }
}

/// `RowCodec.decode`/`decodeData` and `ItemPlaintext.decode`/`decodeData`: a row's
/// columns and the sealed box's contents.
///
/// Modes (first byte): any columns (format 1 or 2 keys); a row sealed from an item
/// the input describes, then changed in one column (every change must be reported
/// damaged, and the unchanged row must give the item back); the box's plaintext alone
/// (the two decoders must agree, and a decoded item must encode to bytes that decode
/// to the same item).
enum FileRowTarget {
    static let target = FuzzTarget(
        name: "file-row", summary: "file store rows through RowCodec.decode and the box plaintext through ItemPlaintext", run: run,
        seeds: seeds)

    static let attributeNames = [
        SecConstant.kSecAttrService, SecConstant.kSecAttrAccount, SecConstant.kSecAttrServer, SecConstant.kSecAttrLabel,
        SecConstant.kSecAttrAccessGroup, SecConstant.kSecAttrSynchronizable, SecConstant.kSecAttrPort,
        SecConstant.kSecAttrCreationDate, SecConstant.kSecAttrGeneric, SecConstant.kSecAttrAccessible,
        SecConstant.kSecAttrAccessControl,
    ]

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        var input = FuzzInput(bytes)
        switch input.byte() % 3 {
        case 0: rawColumns(&input)
        case 1: tamperedRow(&input)
        default:
            let plain = input.rest()
            plain.withUnsafeBufferPointer { plaintext($0) }
        }
    }

    static func rawColumns(_ input: inout FuzzInput) {
        let keys = input.pick([FuzzKeys.format1, FuzzKeys.format2, FuzzKeys.format3])
        let codec = RowCodec(keys: keys)
        let row = OwnedRow()
        row.uuid = row.column(input.bool() ? nil : input.bytes(max: 24))
        row.itemClass = input.bool() ? input.pick(ItemClass.allCases).rawValue : input.string(max: 8)
        row.primaryKeyMAC = row.column(input.bool() ? nil : input.bytes(max: 40))
        row.indexMACs = (0..<IndexedColumns.columns.count).map { _ in row.column(input.bool() ? nil : input.bytes(max: 40)) }
        row.version = input.int64()
        row.seq = input.bool() ? input.int64() : nil
        row.sealed = row.column(input.rest())
        let maxVersion = row.version &+ 1
        _ = try? codec.decode(row, maxVersion: maxVersion)
        _ = try? codec.decodeData(row, maxVersion: maxVersion)
    }

    /// An item the input describes (a few attributes of every kind, data or none).
    static func item(_ input: inout FuzzInput) -> StoredItem {
        var attributes: [String: AttributeValue] = [:]
        for _ in 0..<input.int(below: 8) {
            let name = input.byte() % 8 == 0 ? input.string(max: 8) : input.pick(attributeNames)
            switch input.byte() % 4 {
            case 0: attributes[name] = .string(input.string())
            case 1: attributes[name] = .data(Data(input.bytes()))
            case 2: attributes[name] = .number(input.interestingInt64())
            default: attributes[name] = .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: input.uint64())))
            }
        }
        let uuid = UUID(uuid: (
            input.byte(), input.byte(), input.byte(), input.byte(), input.byte(), input.byte(), input.byte(), input.byte(),
            input.byte(), input.byte(), input.byte(), input.byte(), input.byte(), input.byte(), input.byte(), input.byte()))
        let data = input.bool() ? Data(input.bytes(max: 200)) : nil
        return StoredItem(itemClass: input.pick(Array(ItemClass.allCases.prefix(4))), id: uuid, attributes: attributes, data: data)
    }

    /// Equal attribute for attribute, dates by their bits: a date the input made from a NaN
    /// pattern is not `==` to itself, yet it round-trips exactly.
    static func sameBits(_ a: [String: AttributeValue], _ b: [String: AttributeValue]) -> Bool {
        guard a.count == b.count else { return false }
        for (key, value) in a {
            guard let other = b[key] else { return false }
            switch (value, other) {
            case (.date(let x), .date(let y)):
                guard x.timeIntervalSinceReferenceDate.bitPattern == y.timeIntervalSinceReferenceDate.bitPattern else { return false }
            default:
                guard value == other else { return false }
            }
        }
        return true
    }

    static func tamperedRow(_ input: inout FuzzInput) {
        // Format 3 binds the row's seq into the box; format 2 does not.
        let format3 = input.bool()
        let codec = RowCodec(keys: format3 ? FuzzKeys.format3 : FuzzKeys.format2)
        let original = item(&input)
        let version = input.int64() & 0xFFFF_FFFF
        let seq: Int64? = format3 ? input.int64() & 0xFFFF_FFFF : nil
        let encoded: EncodedRow
        do { encoded = try codec.encode(original, version: version, seq: seq) } catch { FuzzCheck.fail("encode failed: \(error)") }

        func row(_ e: EncodedRow, indexMACs: [[UInt8]?]? = nil, seq: Int64? = seq) -> OwnedRow {
            let row = OwnedRow()
            row.uuid = row.column(e.uuid)
            row.itemClass = e.itemClass
            row.primaryKeyMAC = row.column(e.primaryKeyMAC)
            row.indexMACs = (indexMACs ?? e.indexMACs).map { row.column($0) }
            row.version = e.version
            row.sealed = row.column(e.sealed)
            row.seq = seq
            return row
        }

        // Unchanged: the item comes back, whole.
        switch try? codec.decode(row(encoded), maxVersion: version) {
        case .item(let decoded, let v)?:
            FuzzCheck.expect(v == version, "the row's version changed")
            FuzzCheck.expect(decoded.itemClass == original.itemClass && decoded.id == original.id, "the row's identity changed")
            FuzzCheck.expect(
                ItemPlaintext.encode(decoded) == ItemPlaintext.encode(original), "the row's contents changed in a round trip")
        default: FuzzCheck.fail("an intact row did not decode")
        }
        guard
            let (data, id, access) = try? codec.decodeData(row(encoded), maxVersion: version) ?? nil
        else {
            FuzzCheck.fail("an intact row's data did not decode")
        }
        FuzzCheck.expect(data == original.data && id == original.id, "decodeData gave other data")
        FuzzCheck.expect(
            sameBits(access, original.attributes.filter { ItemProjection.accessAttributes.contains($0.key) }),
            "decodeData gave other access attributes than the item's pdmn, accc and extr")
        // A row from after the committed generation is refused.
        if version > 0, case .item? = try? codec.decode(row(encoded), maxVersion: version - 1) {
            FuzzCheck.fail("a row newer than the commitment was accepted")
        }

        // One change in one column: always damaged.
        var changed = encoded
        var macs = encoded.indexMACs
        let position = Int(input.byte())
        let flip = input.byte() | 1
        func flipped(_ bytes: [UInt8]) -> [UInt8] {
            guard !bytes.isEmpty else { return [flip] }
            var b = bytes
            b[position % b.count] ^= flip
            return b
        }
        var changedSeq = seq
        switch input.byte() % 8 {
        case 0: changed.uuid = flipped(encoded.uuid)
        case 1:
            let others = ItemClass.allCases.filter { $0.rawValue != encoded.itemClass }
            changed.itemClass = input.pick(others).rawValue
        case 2: changed.primaryKeyMAC = flipped(encoded.primaryKeyMAC)
        case 3:
            let i = position % macs.count
            macs[i] = macs[i].map(flipped) ?? [UInt8](repeating: flip, count: 32)
        case 4:
            let i = position % macs.count
            guard macs[i] != nil else { return }
            macs[i] = nil
        case 5:
            changed.version = version ^ Int64(flip)
        case 6:
            guard let seq else { return }
            changedSeq = seq ^ Int64(flip)
        default:
            changed.sealed = flipped(encoded.sealed)
            if input.bool() { changed.sealed = Array(encoded.sealed.prefix(position % max(1, encoded.sealed.count))) }
        }
        let tampered = row(changed, indexMACs: macs, seq: changedSeq)
        if case .item? = try? codec.decode(tampered, maxVersion: Int64.max) {
            FuzzCheck.fail("a row changed outside the codec decoded as an item")
        }
        if case .some(.some) = try? codec.decodeData(tampered, maxVersion: Int64.max) {
            FuzzCheck.fail("a row changed outside the codec gave data")
        }
    }

    /// A plaintext whose kept attributes (`pdmn` `ak`) a data-alone read remembers
    /// before it reads the fuzzer's: what it remembered must not leak into the answer.
    static let rememberedPlaintext = ItemPlaintext.encode(StoredItem(
        itemClass: .genericPassword, id: UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF")!,
        attributes: [SecConstant.kSecAttrAccessible: .string(SecConstant.kSecAttrAccessibleWhenUnlocked)], data: Data([1])))

    static func plaintext(_ bytes: UnsafeBufferPointer<UInt8>) {
        let decoded = ItemPlaintext.decode(bytes)
        let kept = ItemPlaintext.KeptAttributes(ItemProjection.accessAttributes)
        _ = rememberedPlaintext.withUnsafeBufferPointer { ItemPlaintext.decodeData($0, keeping: kept) }
        let projected = ItemPlaintext.decodeData(bytes, keeping: kept)
        // Read again: now the kept attributes may come from what this read remembered.
        let again = ItemPlaintext.decodeData(bytes, keeping: kept)
        FuzzCheck.expect(
            again?.data == projected?.data && again?.attributes == projected?.attributes,
            "decodeData answered differently when it read the same bytes again")
        guard let (attributes, itemData) = decoded else { return }
        guard let projected else { FuzzCheck.fail("decode succeeded where decodeData failed") }
        FuzzCheck.expect(projected.data == itemData, "decode and decodeData disagree on the data")
        FuzzCheck.expect(
            projected.attributes == attributes.filter { ItemProjection.accessAttributes.contains($0.key) },
            "decodeData's pdmn and accc differ from decode's")
        let item = StoredItem(itemClass: .genericPassword, id: UUID(), attributes: attributes, data: itemData)
        let encoded = ItemPlaintext.encode(item)
        guard let again = encoded.withUnsafeBufferPointer({ ItemPlaintext.decode($0) }) else {
            FuzzCheck.fail("a decoded item's encoding does not decode")
        }
        let itemAgain = StoredItem(itemClass: .genericPassword, id: item.id, attributes: again.attributes, data: again.data)
        FuzzCheck.expect(ItemPlaintext.encode(itemAgain) == encoded, "the plaintext changed in a round trip")
    }

    static func seeds() -> [(name: String, bytes: [UInt8])] {
        let now = Date(timeIntervalSinceReferenceDate: 800_000_000).timeIntervalSinceReferenceDate.bitPattern
        let item = StoredItem(
            itemClass: .genericPassword, id: UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF")!,
            attributes: [
                SecConstant.kSecAttrService: .string("svc"), SecConstant.kSecAttrAccount: .string("acct"),
                SecConstant.kSecAttrAccessGroup: .string("app"), SecConstant.kSecAttrSynchronizable: .number(0),
                SecConstant.kSecAttrCreationDate: .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: now))),
                SecConstant.kSecAttrGeneric: .data(Data([0, 1, 2])),
            ],
            data: Data("secret".utf8))
        // Mode 1 programs: format 3, attribute count, (name index, kind, value), uuid, data flag,
        // version, seq, change (position, bits, which column: 6 is the seq).
        let tamper: [UInt8] = [1, 1, 3, 1, 0, 3, 0x73, 0x76, 0x63, 2, 0, 4, 0x61, 0x63, 0x63, 0x74, 7, 2, 0, 0, 0, 0, 0, 0, 0, 80]
            + [UInt8](repeating: 0x42, count: 16) + [1, 6, 0x73, 0x65, 0x63, 0x72, 0x65, 0x74] + [0, 0, 0, 0, 0, 0, 0, 9] + [0, 0, 0, 0, 0, 0, 0, 5] + [3, 1, 6]
        var raw: [UInt8] = [0, 0, 0, 16] + [UInt8](repeating: 1, count: 16) + [0, 0, 0, 32] + [UInt8](repeating: 2, count: 32)
        raw += [UInt8](repeating: 1, count: IndexedColumns.columns.count) + [0, 0, 0, 0, 0, 0, 0, 1] + [UInt8](repeating: 3, count: 60)
        return [
            ("plaintext-item", [2] + ItemPlaintext.encode(item)),
            ("plaintext-no-data", [2] + ItemPlaintext.encode(StoredItem(itemClass: .key, id: item.id, attributes: [:], data: nil))),
            ("tampered-row", tamper),
            ("raw-columns", raw),
        ]
    }
}
