import SecItemCore

/// What a session knows of its collection's lock state, so that a search that
/// finds nothing can say "locked" without a second round trip.
///
/// The provider's signals are counted by a watch (`csecitem_watch_*`, started
/// by the first empty search): while the count has not moved since the
/// collection was last read unlocked, no lock, unlock or other change of the
/// provider's has come in, and the collection is still unlocked.
struct LockStateCache {
    /// Whether the last search of this session came back empty: then the next
    /// search asks for the lock state along with it (misses tend to follow
    /// misses), else only when it comes back empty (a hit does not need it).
    var lastSearchWasEmpty = false
    /// The signal counter; `nil` until started or when the bus refused the match rules.
    private(set) var watch: OpaquePointer?
    private var watchStarted = false
    /// The watch's count when the collection was last read unlocked.
    private var unlockedAsOf: Int32?
    /// How many times the collection's `Locked` was read.
    private(set) var reads = 0

    /// The watch's count now, starting the watch on first use.
    mutating func generation(_ session: SecretServiceSession) -> Int32? {
        if !watchStarted {
            watchStarted = true
            watch = session.startLockWatch()
        }
        return watch.map(SecretServiceSession.lockWatchGeneration)
    }

    /// Whether the collection is known to be unlocked with no provider signal since.
    var knownUnlocked: Bool {
        guard let unlockedAsOf, let watch else { return false }
        return SecretServiceSession.lockWatchGeneration(watch) == unlockedAsOf
    }

    /// Records a `Locked` read made when the watch's count was `generation`.
    mutating func note(locked: Bool, readAt generation: Int32?) {
        reads += 1
        unlockedAsOf = locked ? nil : generation
    }
}

extension SecretServiceSession {
    /// Collection.SearchItems, and when it comes back empty, whether the
    /// collection is locked: known without asking while no provider signal has
    /// come in since it was last read unlocked, else asked at once (one round
    /// trip) after an empty search, or after this one. `locked` is only
    /// meaningful when `paths` is empty.
    func searchCheckingLock(_ attributes: [String: String]) throws(SecItemError) -> (paths: [String], locked: Bool) {
        let speculate = lockState.lastSearchWasEmpty && !lockState.knownUnlocked
        let generation = speculate ? lockState.generation(self) : nil  // read before asking
        let reply = try search(attributes, checkingLock: speculate)
        lockState.lastSearchWasEmpty = reply.paths.isEmpty
        guard reply.paths.isEmpty else { return (reply.paths, false) }
        if lockState.knownUnlocked { return (reply.paths, false) }
        guard speculate else {
            let before = lockState.generation(self)
            let isLocked = try collectionLocked()
            lockState.note(locked: isLocked, readAt: before)
            return (reply.paths, isLocked)
        }
        if let failure = reply.lockFailure {
            if failure.status == errSecInvalidItemRef {
                throw SecItemError(errSecNoSuchKeychain, "the collection \(collectionPath) no longer exists")
            }
            throw failure
        }
        lockState.note(locked: reply.locked, readAt: generation)
        return (reply.paths, reply.locked)
    }
}
