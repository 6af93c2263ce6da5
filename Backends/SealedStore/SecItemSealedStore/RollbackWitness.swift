import Foundation
public import SecItemCore

/// The newest state of one sealed store a host has seen: its row-set commitment's
/// generation and the digest of the commitment at that generation.
///
/// A real store's generation only grows (every write transaction adds one), and one
/// generation has one commitment. So a store seen at a lower generation than its
/// mark, or at the same generation with another digest, was put back from an older
/// copy (or forked from one): that is what ``RollbackWitness`` keeps evidence for.
public struct HighWaterMark: Sendable, Hashable, CustomStringConvertible {
    /// The commitment's generation.
    public var generation: Int64
    /// The first 16 bytes of the commitment's MAC (what `secitem verify` prints after
    /// the generation). Not secret: it is a keyed digest of ciphertext.
    public var digest: [UInt8]
    /// The store's random identifier from its header (`store_id`), when it has one
    /// (stores created before it existed have none).
    public var storeID: [UInt8]?

    public init(generation: Int64, digest: [UInt8], storeID: [UInt8]? = nil) {
        self.generation = generation
        self.digest = digest
        self.storeID = storeID
    }

    /// `<generation>:<digest, hex>`: the value `secitem verify` prints.
    /// (`<generation>:*` for a mark of a generation alone: a replicated store's read.)
    public var description: String { "\(generation):" + (digest.isEmpty ? "*" : Self.hex(digest)) }

    /// Lower-case hex, two digits a byte (no `String(format:)`: a lookup names its mark file with it).
    package static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits: StaticString = "0123456789abcdef"
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        digits.withUTF8Buffer { digit in
            for byte in bytes {
                out.append(digit[Int(byte >> 4)])
                out.append(digit[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Which store a mark belongs to.
///
/// `identity` is what marks are filed under: the file store's canonical path, or the
/// PostgreSQL store's connection (redacted) and schema. The store's own `store_id` is
/// kept *in* the mark: it is not authenticated (someone who can put an old copy back
/// can also edit it), so it cannot be the key, but a different one at the same place
/// is itself evidence that the store was replaced.
public struct WitnessedStore: Sendable, Hashable, CustomStringConvertible {
    /// The key marks are filed under (never a password).
    public var identity: String
    /// Where the store is, for messages.
    public var location: String

    public init(identity: String, location: String) {
        self.identity = identity
        self.location = location
    }

    public var description: String { location }
}

/// Keeps each store's high-water mark outside the store it protects, so that a store
/// put back from an older copy is noticed by every host that saw a newer state.
///
/// The default is ``StateDirectoryWitness`` (one file per store under
/// `$XDG_STATE_HOME/secitem/`); a key source with storage of its own (a TPM NV
/// counter, the login keyring) may supply another through
/// ``KeySource/rollbackWitness(stateDirectory:unlocked:)`` (``TPM2CounterWitness``; the
/// Secret Service key source's `SecretServiceMarkWitness`), and code may pass one in a
/// backend's configuration.
///
/// The rules a witness keeps (the backends rely on them; `RollbackWitnessTests` checks
/// the default one):
/// - ``advance(_:to:)`` never lowers a mark, whoever calls it and in whatever order:
///   concurrent processes of one user (or hosts sharing the storage) merge with the
///   maximum generation, under a lock or an atomic compare-and-swap;
/// - a mark is replaced atomically: a crash leaves the old mark or the new one;
/// - ``mark(for:)`` returns what was last recorded, never a value from the future:
///   the backends record a state only after the store committed it, so a mark is
///   never ahead of a real store;
/// - ``reset(_:to:note:)`` is the only way down (an operator accepting a deliberate
///   restore), and it logs what it did.
public protocol RollbackWitness: Sendable {
    /// The mark recorded for `store`, or `nil` when none was.
    /// - Throws: `errSecIO` when the storage cannot be read.
    func mark(for store: WitnessedStore) throws(SecItemError) -> HighWaterMark?

    /// Records `state` when it is newer than the recorded mark (a higher generation) or
    /// when there is none; otherwise leaves the mark as it is.
    /// - Returns: The mark as recorded afterwards.
    /// - Throws: `errSecIO` when the storage cannot be read or written.
    @discardableResult
    func advance(_ store: WitnessedStore, to state: HighWaterMark) throws(SecItemError) -> HighWaterMark

    /// Replaces the mark with `state` whatever it was (`nil` forgets it), and logs the
    /// change with `note` (who asked and why): the operator's acceptance of a
    /// deliberate restore.
    func reset(_ store: WitnessedStore, to state: HighWaterMark?, note: String) throws(SecItemError)
}

/// What a sealed store does with its rollback evidence (`SECITEM_ROLLBACK_CHECK`).
public enum RollbackCheckMode: String, Sendable, CaseIterable {
    /// A store rolled back fails every call with `errSecDecode` (the default).
    case enforce = "on"
    /// A rollback is remembered, not thrown, and the mark is not advanced: what
    /// `secitem verify` and `secitem accept-restore` open stores with.
    case report
    /// No marks are read or written.
    case off
}
