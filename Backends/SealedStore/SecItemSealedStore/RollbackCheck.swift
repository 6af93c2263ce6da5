import Foundation
package import SecItemCore

/// One open store's rollback check: compares each new state of the store it sees
/// with what this connection saw before and with the witness's mark, and records
/// new states in the witness. Used under the backend's lock (not thread-safe itself).
///
/// Ordering, so that concurrent writers never raise a false alarm and a crash never
/// leaves a mark ahead of the store:
/// - a state is recorded only after the store committed it (a backend's own write:
///   ``committed(_:)`` after the commit returned; another's: once read back);
/// - a state read is compared with a mark read *before* it (``prime()`` before the
///   read snapshot starts, or inside a write that holds the store's write lock):
///   every mark recorded by then is of a state the store had already committed, and a
///   real store's generation never goes down, so a state below it is a rollback.
///   (A mark read after the state could be of a newer commit: no evidence.)
///
/// A replicated store (PostgreSQL, ``confirmsOnlyPredecessors``) shows a commit to
/// readers on the primary before its synchronous standby has it, so a failover can
/// lose the newest state a reader saw without anything being rolled back. There, a
/// state *read* is evidence only of its predecessor: a later commit needs the store's
/// state row, which the earlier transaction holds until its standby confirmed it, so
/// seeing generation `g` proves `g - 1` was confirmed (its digest unknown: the mark
/// keeps the generation alone). A state this connection committed itself (its `COMMIT`
/// returned, after the standby confirmed it) is evidence whole.
package final class RollbackCheck {
    package let mode: RollbackCheckMode
    package let witness: (any RollbackWitness)?
    package let store: WitnessedStore
    /// The newest state this connection checked; a later one lower than it is a
    /// rollback whatever the witness says.
    package private(set) var lastSeen: HighWaterMark?
    /// What this connection's states prove about the store (``lastSeen`` itself unless
    /// ``confirmsOnlyPredecessors``): a later state below it is a rollback.
    package private(set) var lastEvidence: HighWaterMark?
    /// Reads prove only their predecessor (a replicated store; see the type's comment).
    package let confirmsOnlyPredecessors: Bool
    /// ``RollbackCheckMode/report``: the rollback found, as a sentence.
    package private(set) var finding: String?
    /// A mark read by ``prime()``, for the next ``check(_:)``.
    private var primed: HighWaterMark??
    /// ``RollbackCheckMode/report``: why the witness's mark could not be trusted (it threw
    /// `errSecDecode`: a mark that does not authenticate), reported as the finding.
    private var markFinding: String?

    package init(
        mode: RollbackCheckMode, witness: (any RollbackWitness)?, store: WitnessedStore,
        confirmsOnlyPredecessors: Bool = false
    ) {
        self.mode = witness == nil ? .off : mode
        self.witness = witness
        self.store = store
        self.confirmsOnlyPredecessors = confirmsOnlyPredecessors
    }

    /// What reading `state` proves the store held: itself, or (replicated) its
    /// predecessor's generation alone.
    private func evidence(of state: HighWaterMark) -> HighWaterMark {
        guard confirmsOnlyPredecessors else { return state }
        return HighWaterMark(generation: max(0, state.generation - 1), digest: [], storeID: state.storeID)
    }

    private func remember(_ state: HighWaterMark, proving evidence: HighWaterMark) {
        lastSeen = state
        if lastEvidence.map({ evidence.generation >= $0.generation }) ?? true { lastEvidence = evidence }
    }

    /// The check a configuration asks for: `witness` when given, else the key source's
    /// (given `unlocked`, the key the store was opened with, when its witness needs it),
    /// else the state directory's (none without a state directory or home).
    package static func make(
        mode: RollbackCheckMode, witness: (any RollbackWitness)?, keySource: SealedStoreKeySource, store: WitnessedStore,
        unlocked: UnlockedStoreKey? = nil, environment: [String: String] = ProcessInfo.processInfo.environment,
        confirmsOnlyPredecessors: Bool = false
    ) -> RollbackCheck {
        let directory = StateDirectoryWitness.defaultDirectory(environment)
        let chosen: (any RollbackWitness)? =
            mode == .off
            ? nil
            : witness ?? keySource.source.rollbackWitness(stateDirectory: directory, unlocked: unlocked)
                ?? directory.map { StateDirectoryWitness(directory: $0) }
        return RollbackCheck(mode: mode, witness: chosen, store: store, confirmsOnlyPredecessors: confirmsOnlyPredecessors)
    }

    /// `rollback-check`, `SECITEM_ROLLBACK_CHECK`: `on` (default), `report` or `off`. Declared
    /// by every backend that keeps sealed rows (``KeySources/settings``).
    package static let setting = SecItemSetting<RollbackCheckMode>(
        SecItemSettingDeclaration(
            key: "rollback-check", scope: "sealed-store",
            help: "What the file and PostgreSQL stores do with their rollback evidence: on refuses a store rolled back (errSecDecode), report only remembers it, off keeps no evidence.",
            expected: "on, report or off", defaultDescription: RollbackCheckMode.enforce.rawValue),
        default: .enforce, parse: { RollbackCheckMode(rawValue: $0.lowercased()) })

    /// The mode a configuration asks for (``setting``); `on` when unset.
    /// - Throws: `errSecParam` naming the setting for another value.
    package static func mode(_ settings: SecItemConfiguration) throws(SecItemError) -> RollbackCheckMode {
        try settings.value(setting) ?? .enforce
    }

    /// The mode `env` alone asks for (no config file): ``mode(_:)-swift.type.method``.
    /// - Throws: `errSecParam` for a value other than on, report or off.
    package static func mode(_ env: [String: String]) throws(SecItemError) -> RollbackCheckMode {
        try mode(SecItemConfiguration.environmentOnly(env))
    }

    /// Whether a state differs from the last one checked (the only case a read must look further).
    package func isNew(_ state: HighWaterMark) -> Bool { state != lastSeen }

    /// Reads the mark now, for the next ``check(_:)``: call it before the snapshot the
    /// checked state is read in begins (unless a write lock holds the store still).
    package func prime() throws(SecItemError) {
        guard mode != .off, let witness else { return }
        primed = .some(try readMark(witness))
    }

    /// The witness's mark. A mark the witness cannot trust (`errSecDecode`: the login
    /// keyring's item does not authenticate) is thrown, except in
    /// ``RollbackCheckMode/report``, where it is the finding (so `secitem verify` says it
    /// and `secitem accept-restore` can replace it) and no mark.
    private func readMark(_ witness: any RollbackWitness) throws(SecItemError) -> HighWaterMark? {
        do throws(SecItemError) {
            let mark = try witness.mark(for: store)
            markFinding = nil
            return mark
        } catch where mode == .report && error.status == errSecDecode {
            markFinding = error.detail ?? error.message
            return nil
        }
    }

    /// Compares `state` (the store as just read) with the last state this connection
    /// saw and with the mark; records it when it is newer.
    /// - Throws: `errSecDecode` (``RollbackCheckMode/enforce``) when the store went back:
    ///   a lower generation, another digest at the same generation, or another store id.
    package func check(_ state: HighWaterMark) throws(SecItemError) {
        let proven = evidence(of: state)
        guard mode != .off, let witness else {
            remember(state, proving: proven)
            return
        }
        let mark: HighWaterMark?
        if let primed {
            mark = primed
            self.primed = nil
        } else {
            mark = try readMark(witness)
        }
        if let seen = lastEvidence, let problem = Self.problem(state, against: seen) {
            // Unless the operator accepted exactly this state since (the mark is it).
            guard let mark, mark.generation == state.generation, mark.digest == state.digest else {
                return try found(state, seen, "this process saw", problem)
            }
            lastSeen = state
            lastEvidence = state
            finding = nil
            return
        }
        if let mark, let problem = Self.problem(state, against: mark) {
            return try found(state, mark, "this host saw (its high-water mark, \(witness))", problem)
        }
        if mode == .report {
            finding = markFinding
            remember(state, proving: proven)
            return
        }
        if mark.map({ proven.generation > $0.generation }) ?? (proven.generation > 0 || !proven.digest.isEmpty) {
            if let directory = witness as? StateDirectoryWitness {
                // Not behind another thread or process changing the mark (the writer
                // recording its commit): with one thread adding without pause, a reader
                // waited for that on most lookups. The mark then lags this state until
                // the next check, as when recording fails.
                try directory.advanceUnlessBusy(store, to: proven)
            } else {
                try witness.advance(store, to: proven)
            }
        }
        remember(state, proving: proven)
    }

    /// After this connection's own commit of `state`: raises the mark to it (never
    /// lowers it). A failure to record is not the write's failure (it committed): the
    /// mark lags, which costs evidence, not correctness, and the next check retries.
    package func committed(_ state: HighWaterMark) {
        lastSeen = state
        lastEvidence = state
        guard mode == .enforce, let witness else { return }
        _ = try? witness.advance(store, to: state)
    }

    /// The operator's acceptance of the store as it is now (`secitem accept-restore`).
    /// - Returns: The mark before.
    package func accept(_ state: HighWaterMark, note: String) throws(SecItemError) -> HighWaterMark? {
        guard let witness else {
            throw SecItemError(
                errSecParam, "the rollback check is off (SECITEM_ROLLBACK_CHECK=off, or no state directory): nothing to accept")
        }
        // A mark that does not authenticate is what the operator replaces: "none" before.
        let before: HighWaterMark?
        do throws(SecItemError) {
            before = try witness.mark(for: store)
        } catch where error.status == errSecDecode {
            before = nil
        }
        try witness.reset(store, to: state, note: note)
        markFinding = nil
        lastSeen = state
        lastEvidence = state
        finding = nil
        return before
    }

    private func found(_ state: HighWaterMark, _ expected: HighWaterMark, _ who: String, _ problem: String)
        throws(SecItemError)
    {
        let message =
            "the keychain \(store.location) was rolled back or replaced: it is at commitment \(state), but \(who) "
            + "\(expected) (\(problem)); nothing was read or changed. If it was restored deliberately, "
            + "run `secitem accept-restore` (docs/file-format.md, \"Rollback evidence\")"
        if mode == .report {
            finding = message
            return
        }
        throw SecItemError(errSecDecode, message)
    }

    /// Why `state` cannot follow `mark` in a real store's history, or `nil` when it can.
    package static func problem(_ state: HighWaterMark, against mark: HighWaterMark) -> String? {
        if let a = mark.storeID, let b = state.storeID, a != b {
            return "another keychain: its store id is \(HighWaterMark.hex(b)), not \(HighWaterMark.hex(a))"
        }
        if state.generation < mark.generation {
            return "an older generation: put back from an older copy"
        }
        // A mark of a generation alone (a replicated store's read: digest unknown) has no digest to differ.
        if state.generation == mark.generation, !mark.digest.isEmpty, state.digest != mark.digest {
            return "another state at the same generation: replaced by a diverging copy"
        }
        return nil
    }
}

extension KeySource {
    /// The default: no storage of its own; marks go to the state directory.
    package func rollbackWitness(stateDirectory: String?, unlocked: UnlockedStoreKey?) -> (any RollbackWitness)? { nil }
}
