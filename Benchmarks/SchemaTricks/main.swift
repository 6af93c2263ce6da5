// The core's lookup tricks (Sources/SecItemCore/Schema.swift, StoredItem.swift), each timed against the
// plain form it replaced, in one process (ns per operation, best of 7 runs of 2M).
// Standalone on purpose (a copy of the few lines it measures, no package build):
//   swiftc -O Benchmarks/SchemaTricks/main.swift -o /tmp/schema-tricks && /tmp/schema-tricks
// Results and the machine they came from: Benchmarks/RESULTS.md, "The core's lookup tricks".
import Foundation

enum Kind { case blob, string, access, data, number, date }
struct Code: Hashable, Comparable { let raw: UInt32; static func < (a: Code, b: Code) -> Bool { a.raw < b.raw } }

@inline(never) func codeInPlace(_ key: String) -> Code? {
    guard key.utf8.count == 4 else { return nil }
    return key.utf8.withContiguousStorageIfAvailable(pack) ?? pack(Array(key.utf8))
}
@inline(never) func codeWithUTF8(_ key: String) -> Code? {
    guard key.utf8.count == 4 else { return nil }
    var copy = key
    return copy.withUTF8 { pack($0) }
}
func pack(_ bytes: some Sequence<UInt8>) -> Code? {
    var c: UInt32 = 0
    for b in bytes { guard b != UInt8(ascii: "_") else { return nil }; c = c << 8 | UInt32(b) }
    return Code(raw: c)
}

let genp: [String] = ["agrp", "pdmn", "accc", "sync", "cdat", "mdat", "tkid", "acct", "svce", "gena", "desc", "icmt", "crtr", "type", "labl", "invi", "nega", "alis", "scrp", "cusi"]
let kinds: [String: Kind] = Dictionary(uniqueKeysWithValues: genp.enumerated().map { ($1, [Kind.blob, .string, .number][$0 % 3]) })
let table: [(Code, Kind)] = kinds.map { (codeInPlace($0.key)!, $0.value) }.sorted { $0.0 < $1.0 }

@inline(never) func tableKind(_ code: Code) -> Kind? {
    table.withUnsafeBufferPointer { e in
        var lo = 0, hi = e.count
        while lo < hi { let mid = (lo &+ hi) &>> 1; if e[mid].0 < code { lo = mid + 1 } else { hi = mid } }
        return lo < e.count && e[lo].0 == code ? e[lo].1 : nil
    }
}
@inline(never) func dictKind(_ key: String) -> Kind? { kinds[key] }

// A per-class table handed out by a switch: as a class (a reference) or a struct (five collections copied/retained).
final class SchemaClass { let a: Set<String>; let b: [(Code, Kind)]; let c: [String]; let d: [Code]; let e: [Code]
    init() { a = Set(genp); b = table; c = ["acct", "svce", "agrp", "sync"]; d = c.map { codeInPlace($0)! }; e = d } }
struct SchemaStruct { let a: Set<String>; let b: [(Code, Kind)]; let c: [String]; let d: [Code]; let e: [Code]
    init() { a = Set(genp); b = table; c = ["acct", "svce", "agrp", "sync"]; d = c.map { codeInPlace($0)! }; e = d } }
enum Cls: Int { case g, i, c, k }
let sc = [SchemaClass(), SchemaClass(), SchemaClass(), SchemaClass()]
let ss = [SchemaStruct(), SchemaStruct(), SchemaStruct(), SchemaStruct()]
extension Cls {
    var schemaClass: SchemaClass { switch self { case .g: sc[0]; case .i: sc[1]; case .c: sc[2]; case .k: sc[3] } }
    var schemaStruct: SchemaStruct { switch self { case .g: ss[0]; case .i: ss[1]; case .c: ss[2]; case .k: ss[3] } }
}
@inline(never) func viaClass(_ c: Cls) -> Int { c.schemaClass.d.count }
@inline(never) func viaStruct(_ c: Cls) -> Int { c.schemaStruct.d.count }

enum ItemClass: String { case genericPassword = "genp", internetPassword = "inet", certificate = "cert", key = "keys", identity = "idnt"
    init?(name: String) {
        switch codeInPlace(name)?.raw {
        case 0x67656e70: self = .genericPassword
        case 0x696e6574: self = .internetPassword
        case 0x63657274: self = .certificate
        case 0x6b657973: self = .key
        case 0x69646e74: self = .identity
        default: return nil
        }
    }
}
@inline(never) func className(_ s: String) -> ItemClass? { ItemClass(name: s) }
@inline(never) func classRaw(_ s: String) -> ItemClass? { ItemClass(rawValue: s) }

// A primary key's bytes (StoredItem.swift): class, then per attribute code ‖ length ‖ value.
let pkValues: [(UInt32, [UInt8])] = [("acct", "alice"), ("svce", "com.example.api"), ("agrp", "com.example.app"), ("sync", "\u{0}")]
    .map { (codeInPlace($0.0)!.raw, Array($0.1.utf8)) }
@inline(never) func keyMeasuredOnStack(_ cls: String) -> [UInt8] {
    var count = cls.utf8.count
    for (_, v) in pkValues { count += 8 + v.count }
    return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { buffer in
        var at = 0
        for b in cls.utf8 { buffer[at] = b; at += 1 }
        for (code, v) in pkValues {
            for shift in [24, 16, 8, 0] { buffer[at] = UInt8(truncatingIfNeeded: code >> UInt32(shift)); at += 1 }
            for shift in [24, 16, 8, 0] { buffer[at] = UInt8(truncatingIfNeeded: UInt32(v.count) >> UInt32(shift)); at += 1 }
            for b in v { buffer[at] = b; at += 1 }
        }
        return [UInt8](UnsafeBufferPointer(rebasing: buffer[0..<at]))
    }
}
@inline(never) func keyAppended(_ cls: String) -> [UInt8] {
    var out: [UInt8] = []
    out.append(contentsOf: cls.utf8)
    for (code, v) in pkValues {
        for shift in [24, 16, 8, 0] { out.append(UInt8(truncatingIfNeeded: code >> UInt32(shift))) }
        for shift in [24, 16, 8, 0] { out.append(UInt8(truncatingIfNeeded: UInt32(v.count) >> UInt32(shift))) }
        out.append(contentsOf: v)
    }
    return out
}

func measure(_ name: String, _ n: Int, _ body: (Int) -> Int) -> Double {
    var best = Double.infinity
    var sink = 0
    for _ in 0..<7 {
        let t0 = DispatchTime.now().uptimeNanoseconds
        for i in 0..<n { sink &+= body(i) }
        let t = Double(DispatchTime.now().uptimeNanoseconds - t0) / Double(n)
        best = min(best, t)
    }
    print(String(format: "%-44@ %7.2f ns", name as NSString, best), sink == 42 ? "" : "")
    return best
}
// Keys as a parsed dictionary hands them out: separate native Strings.
let keys = (0..<1024).map { _ in String(genp.randomElement()!.utf8.map { Character(Unicode.Scalar($0)) }) }
let n = 2_000_000
let a1 = measure("attribute code, in place", n) { Int(codeInPlace(keys[$0 & 1023])!.raw & 1) }
let a2 = measure("attribute code, withUTF8 on a copy", n) { Int(codeWithUTF8(keys[$0 & 1023])!.raw & 1) }
let codes = keys.map { codeInPlace($0)! }
let b1 = measure("kind by code (binary search)", n) { tableKind(codes[$0 & 1023]) == .blob ? 1 : 0 }
let b2 = measure("kind by key (Dictionary<String, Kind>)", n) { dictKind(keys[$0 & 1023]) == .blob ? 1 : 0 }
let b3 = measure("code + kind by code (the parser's path)", n) { tableKind(codeInPlace(keys[$0 & 1023])!) == .blob ? 1 : 0 }
let c1 = measure("per-class table, class reference", n) { viaClass(Cls(rawValue: $0 & 3)!) }
let c2 = measure("per-class table, struct copy", n) { viaStruct(Cls(rawValue: $0 & 3)!) }
let classNames = (0..<1024).map { _ in String(["genp", "inet", "cert", "keys"].randomElement()!.utf8.map { Character(Unicode.Scalar($0)) }) }
let d1 = measure("class by code (ItemClass(name:))", n) { className(classNames[$0 & 1023]) == .key ? 1 : 0 }
let d2 = measure("class by rawValue (String compares)", n) { classRaw(classNames[$0 & 1023]) == .key ? 1 : 0 }
let e1 = measure("primary key: measured, on the stack, one array", n) { keyMeasuredOnStack(classNames[$0 & 1023]).count }
let e2 = measure("primary key: appended to a growing array", n) { keyAppended(classNames[$0 & 1023]).count }
print(String(format: "key on the stack %.1fx faster than appended", e2 / e1))
print(String(format: "class by code %.1fx faster than rawValue", d2 / d1))
print(String(format: "in place %.1fx faster than withUTF8; code+binary search %.1fx faster than Dictionary<String,_>; class %.1fx faster than struct", a2 / a1, b2 / b3, c2 / c1))
