import Foundation
public import SecItemCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The ``RollbackWitness`` of a store whose key is sealed to a TPM (key source `tpm2`):
/// the high-water mark's generation is also kept in a TPM NV counter, so deleting the
/// state directory (or restoring it from the same backup as an older copy of the store)
/// does not lose the evidence.
///
/// The marks stay in the state directory as ``StateDirectoryWitness`` keeps them (the
/// digest needs a file: a counter holds one number); the TPM adds a floor under them.
/// Each store has two NV indices in the owner range, derived from the user and the
/// store's identity (`0x01000000 + 2·(h mod 2^21)`, the next pair when another store's
/// record is there):
/// - a counter (`TPM_NT_COUNTER`, 8 bytes, its own empty authorization): it only goes
///   up, and a counter defined anew starts at the highest value any counter of the TPM
///   ever had, so its value means nothing by itself;
/// - beside it a 32-byte record, written once and write-locked (`TPMA_NV_WRITEDEFINE`):
///   `SIHW`, a version, the base, and 16 bytes of the identity's digest.
///
/// The generation the counter vouches for is `value − base`. The base is fixed when the
/// pair is defined, at the first mark, so that the counter stands at that mark's
/// generation; each later mark raises the counter to its generation by
/// `TPM2_NV_Increment`s, at most ``maximumIncrements`` per mark (a commit adds one
/// generation, so that is one increment per commit; a store written while the check was
/// off catches up over a few commits: the counter lags, never leads). The increments are
/// made after the store's commit, under the state directory's lock for the store, after
/// reading the counter: so the counter is never ahead of a committed state, and a crash
/// between the commit and the increment leaves it behind (no false alarm; the next mark
/// catches it up). A failed increment is not the write's failure (the state directory's
/// mark was recorded): the evidence lags.
///
/// ``mark(for:)`` is the file's mark, or, when the counter is higher (the file was
/// deleted or put back older), the counter's generation alone (no digest). The counter
/// is read once per process and store, and again, at most once a second, while the file
/// has no mark. ``reset(_:to:note:)`` (`secitem accept-restore`) undefines the pair and
/// defines it anew at the accepted generation (a counter cannot go down).
///
/// What it cannot stop: anyone who holds the TPM's owner authorization (empty unless
/// the machine's owner set one; the `tpm2` key source needs it empty too) can undefine
/// the pair, as `secitem accept-restore` does; a cleared TPM loses it, and the store's
/// key with it.
public struct TPM2CounterWitness: RollbackWitness, CustomStringConvertible {
    /// The TPM, as a TSS2 TCTI string.
    public let tcti: String
    /// The marks' files (the digest at each generation).
    public let files: StateDirectoryWitness

    /// The most increments one mark makes (the rest wait for later marks).
    public static let maximumIncrements = 16

    /// - Parameters:
    ///   - tcti: The TPM (`device:/dev/tpmrm0`, `swtpm:host=127.0.0.1,port=2321`).
    ///   - directory: The state directory the marks' files are kept in (the lock the
    ///     counter is raised under is there too).
    public init(tcti: String, directory: String) {
        self.tcti = tcti
        self.files = StateDirectoryWitness(directory: directory)
    }

    public var description: String { "in the TPM's NV counter (\(tcti)) and \(files.directory)" }

    public func mark(for store: WitnessedStore) throws(SecItemError) -> HighWaterMark? {
        let file = try files.mark(for: store)
        let floor = try counterFloor(store, refresh: file == nil)
        return Self.merged(file, floor)
    }

    @discardableResult
    public func advance(_ store: WitnessedStore, to state: HighWaterMark) throws(SecItemError) -> HighWaterMark {
        try files.locked(store) { () throws(SecItemError) -> HighWaterMark in
            let recorded = try files.advanceHoldingLock(store, to: state)
            let floor = try? raise(store, to: state.generation)
            return Self.merged(recorded, floor ?? nil) ?? recorded
        }
    }

    public func reset(_ store: WitnessedStore, to state: HighWaterMark?, note: String) throws(SecItemError) {
        try files.locked(store) { () throws(SecItemError) in
            let before = try mark(for: store)
            let defined = try redefine(store, at: state?.generation)
            let counter =
                state == nil
                ? " (TPM counter \(tcti) removed)"
                : defined ? " (TPM counter \(tcti) set to it)" : " (no TPM counter: the TPM at \(tcti) has no room for one)"
            try files.resetHoldingLock(store, to: state, note: note + counter, before: .some(before))
        }
    }

    // MARK: The counter

    /// The file's mark, unless the counter vouches for a higher generation.
    package static func merged(_ file: HighWaterMark?, _ floor: Int64?) -> HighWaterMark? {
        guard let floor, floor > 0 else { return file }
        if let file, file.generation >= floor { return file }
        return HighWaterMark(generation: floor, digest: [], storeID: file?.storeID)
    }

    /// What this process knows of one store's counter.
    struct Known {
        /// The generation it vouched for (nil: no counter for the store).
        var floor: Int64?
        var read: ContinuousClock.Instant
    }

    private static let known = Mutex<[String: Known]>([:])

    private func cacheKey(_ store: WitnessedStore) -> String { tcti + "\n" + Self.identity(store) }

    private func remember(_ store: WitnessedStore, _ floor: Int64?) {
        let key = cacheKey(store)
        Self.known.withLock { $0[key] = Known(floor: floor, read: .now) }
    }

    /// The counter's generation: read from the TPM once per process, and again (at most
    /// once a second) when `refresh` (the file has no mark).
    private func counterFloor(_ store: WitnessedStore, refresh: Bool) throws(SecItemError) -> Int64? {
        let key = cacheKey(store)
        if let cached = Self.known.withLock({ $0[key] }), !refresh || ContinuousClock.now - cached.read < .seconds(1) {
            return cached.floor
        }
        let floor = try TPM2Connection.with(tcti, context(store), primary: false) { (tpm) throws(SecItemError) -> Int64? in
            guard case .found(let pair, let base) = try locate(tpm, store) else { return nil }
            return try value(tpm, pair).map { $0 &- base }
        }
        remember(store, floor)
        return floor
    }

    /// Raises the counter to `generation` (creating the pair at it when there is none).
    /// Called holding the store's lock. Returns the counter's generation afterwards.
    private func raise(_ store: WitnessedStore, to generation: Int64) throws(SecItemError) -> Int64? {
        let floor = try TPM2Connection.with(tcti, context(store), primary: false) { (tpm) throws(SecItemError) -> Int64? in
            switch try locate(tpm, store) {
            case .found(let pair, let base):
                guard let current = try value(tpm, pair) else { return try define(tpm, store, pair, at: generation) }
                let behind = generation &- (current &- base)
                guard behind > 0 else { return current &- base }
                let steps = Int(min(behind, Int64(Self.maximumIncrements)))
                try tpm.nvIncrement(pair, times: steps)
                return current &- base &+ Int64(steps)
            case .free(let pair):
                return try define(tpm, store, pair, at: generation)
            case .full:
                throw SecItemError(errSecIO, "no free NV index for the keychain's rollback counter near 0x\(String(Self.slot(store), radix: 16))")
            }
        }
        remember(store, floor)
        return floor
    }

    /// Undefines the store's pair and, with a generation, defines it anew there.
    /// - Returns: Whether a counter stands at the generation now (a TPM without room
    ///   for one leaves the evidence to the state directory; that is no error).
    /// - Throws: When the old pair cannot be undefined (it would keep refusing).
    private func redefine(_ store: WitnessedStore, at generation: Int64?) throws(SecItemError) -> Bool {
        let floor = try TPM2Connection.with(tcti, context(store), primary: false) { (tpm) throws(SecItemError) -> Int64? in
            var pair: UInt32
            switch try locate(tpm, store) {
            case .found(let found, _):
                try tpm.nvUndefine(found + 1)
                try tpm.nvUndefine(found)
                pair = found
            case .free(let free): pair = free
            case .full: return nil
            }
            guard let generation else { return nil }
            return try? define(tpm, store, pair, at: generation)
        }
        remember(store, floor)
        return floor != nil
    }

    /// Defines (or completes) the pair at `pair` so that the counter vouches for `generation`.
    private func define(_ tpm: TPM2Connection, _ store: WitnessedStore, _ pair: UInt32, at generation: Int64) throws(SecItemError)
        -> Int64
    {
        _ = try tpm.nvDefine(pair, attributes: Self.counterAttributes, size: 8)
        // A counter is readable once incremented; its first value is the TPM's highest ever.
        var current = try value(tpm, pair)
        if current == nil {
            try tpm.nvIncrement(pair, times: 1)
            current = try value(tpm, pair)
        }
        guard let current else {
            throw SecItemError(errSecIO, "the TPM at \(tcti) did not start the keychain's rollback counter")
        }
        let base = current &- generation
        let record = Self.NVRecord(base: base, digest: Self.digest(store)).bytes
        if try tpm.nvRead(pair + 1, capacity: 32) == nil {
            _ = try tpm.nvDefine(pair + 1, attributes: Self.recordAttributes, size: record.count)
        }
        try tpm.nvWrite(pair + 1, record)
        try tpm.nvWriteLock(pair + 1)
        return generation
    }

    /// The counter's value (`nil` before its first increment).
    private func value(_ tpm: TPM2Connection, _ pair: UInt32) throws(SecItemError) -> Int64? {
        guard let index = try tpm.nvRead(pair, capacity: 8), index.written, index.data.count == 8 else { return nil }
        return Int64(bitPattern: index.data.reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }

    /// The 32-byte record written once beside a store's counter: `SIHW`, version 1, three
    /// zero bytes, the base (signed, big-endian), and 16 bytes of the store identity's digest.
    /// Any program with the owner's (empty) authorization can define an index there, so it
    /// is read as untrusted bytes: anything else is not a record of ours.
    package struct NVRecord: Sendable, Hashable {
        package static let magic: [UInt8] = Array("SIHW".utf8) + [1, 0, 0, 0]
        package var base: Int64
        package var digest: [UInt8]

        package init(base: Int64, digest: [UInt8]) {
            self.base = base
            self.digest = digest
        }

        /// The record's bytes (`digest` must be 16 bytes).
        package var bytes: [UInt8] {
            Self.magic + (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: base) >> (56 - 8 * $0)) } + digest
        }

        /// The record in `data`, or `nil` when it is not one of ours (another size, magic or version).
        package static func parse(_ data: some Collection<UInt8>) -> NVRecord? {
            let b = Array(data)
            guard b.count == 32, Array(b[0..<8]) == magic else { return nil }
            let base = Int64(bitPattern: b[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
            return NVRecord(base: base, digest: Array(b[16..<32]))
        }
    }

    enum Location {
        /// The store's pair: the counter's handle (the record is the next) and the base.
        case found(UInt32, base: Int64)
        /// No pair of the store's; this one is free (or a crash left it half made, ours).
        case free(UInt32)
        /// Every pair tried is another's.
        case full
    }

    /// Finds the store's pair among the few its identity derives.
    private func locate(_ tpm: TPM2Connection, _ store: WitnessedStore) throws(SecItemError) -> Location {
        let digest = Self.digest(store)
        var free: UInt32?
        for probe in 0..<4 {
            let pair = Self.slot(store, probe: probe)
            let counter = try tpm.nvRead(pair, capacity: 8)
            let record = try tpm.nvRead(pair + 1, capacity: 32)
            if let record, record.written, record.data.count == 32 {
                guard let parsed = NVRecord.parse(record.data), parsed.digest == digest else { continue }
                guard let counter, counter.attributes & Self.typeMask == Self.counterAttributes & Self.typeMask else {
                    // Our record without its counter (undefined by someone): start again here.
                    try tpm.nvUndefine(pair + 1)
                    return .free(pair)
                }
                return .found(pair, base: parsed.base)
            }
            // Nothing, or what a crash while defining ours leaves (a counter of our kind, an unwritten record).
            let counterOurs = counter.map { $0.attributes & Self.typeMask == Self.counterAttributes & Self.typeMask } ?? true
            let recordOurs = record.map { !$0.written && $0.attributes & Self.typeMask == Self.recordAttributes & Self.typeMask } ?? true
            if counterOurs && recordOurs && free == nil { free = pair }
            // A pair never used: the store's own is not further on (it takes the first free one).
            if counter == nil && record == nil { break }
        }
        return free.map { .free($0) } ?? .full
    }

    /// TPM_NT_COUNTER | AUTHWRITE | AUTHREAD | NO_DA.
    static let counterAttributes: UInt32 = 0x10 | 0x4 | 0x4_0000 | 0x200_0000
    /// TPM_NT_ORDINARY | AUTHWRITE | WRITEDEFINE | AUTHREAD | NO_DA.
    static let recordAttributes: UInt32 = 0x4 | 0x2000 | 0x4_0000 | 0x200_0000
    /// The attributes an index is defined with (not the state bits a TPM sets: written, locked).
    static let typeMask: UInt32 = 0x0FFF_FFFF & ~0x0800 & ~0x1000_0000

    /// The user and the store: each user of a store (a PostgreSQL store shared by hosts
    /// and users) has a counter of their own, as each has a state directory.
    static func identity(_ store: WitnessedStore) -> String { "uid=\(getuid()) \(store.identity)" }

    package static func digest(_ store: WitnessedStore) -> [UInt8] {
        StateDirectoryWitness.unhex(StateDirectoryWitness.fileName(identity(store))) ?? []
    }

    /// The counter's handle for `probe` (0...3): an even handle in the owner range.
    static func slot(_ store: WitnessedStore, probe: Int = 0) -> UInt32 {
        let d = digest(store)
        let h = d.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return 0x0100_0000 + 2 * ((h &+ UInt32(probe)) % 0x20_0000)
    }

    private func context(_ store: WitnessedStore) -> KeySourceContext { KeySourceContext(store: store.location) }
}

extension TPM2KeySource {
    /// The TPM's NV counter beside the state directory's marks (none without a state directory).
    func rollbackWitness(stateDirectory: String?, unlocked: UnlockedStoreKey?) -> (any RollbackWitness)? {
        stateDirectory.map { TPM2CounterWitness(tcti: tcti, directory: $0) }
    }
}
