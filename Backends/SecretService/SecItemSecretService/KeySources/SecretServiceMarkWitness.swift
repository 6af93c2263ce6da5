import Foundation
import SecItemCore
import SecItemSealedStore
import Synchronization

/// The ``RollbackWitness`` of a sealed store whose key lives in the login keyring (key
/// source `secret-service`): each high-water mark is also kept as an item of the login
/// keyring, so deleting the state directory (or putting it back from the same backup as
/// an older copy of the store) does not lose the evidence.
///
/// The state directory's marks stay as ``StateDirectoryWitness`` keeps them (its lock
/// orders the changes); the keyring adds a copy the state directory's deletion does not
/// reach. The item:
/// - attributes `xdg:schema` = ``schema`` and `witnessed` = 32 hex digits naming the
///   store (the digest of its identity: the state directory's file name for it); no
///   secret, no mark in the attributes; its label names the store's location;
/// - secret: ``KeyringMarkPayload``, the generation, the commitment's digest at that
///   generation, the store's id and the identity's digest, authenticated by an
///   HMAC-SHA256 under a key derived (HKDF) from the store's key-encryption key, and
///   naming the key item (`store` attribute) whose key that is.
///
/// ``advance(_:to:)`` runs after the store's commit, holding the state directory's lock
/// for the store: it records the file's mark, then reads the keyring's and raises it
/// (never lowers it). A crash between the commit and either write leaves the marks
/// behind the store (no false alarm); the next mark catches the keyring up. A failed
/// keyring write (locked, no Secret Service) is not the write's failure: the evidence lags.
///
/// ``mark(for:)`` is the higher of the file's mark and the keyring's. The keyring is
/// read once per process and store, and again (at most once a second) while the file
/// has no mark or a lower one than the keyring's: so reads and writes in the steady
/// state cost no D-Bus call beyond the write's own.
///
/// - A missing item with no file mark is a first use: nothing is known, the check starts
///   from the store as it is. A missing item beside a file mark (the item was deleted,
///   or never written: a store older than this witness, a keyring locked at every commit)
///   is no alarm: the file's mark is the evidence, and the next commit writes the item again.
/// - A locked keyring or no Secret Service: the process goes on with what it read
///   before (it read the keyring when it opened the store, whose key is there); with
///   nothing read yet, `errSecInteractionNotAllowed` (locked) or `errSecNotAvailable`.
/// - An item that does not authenticate (not a mark, another store's, a MAC that does
///   not verify) is `errSecDecode`: something other than secitem wrote it, and a forged
///   lower mark must not pass silently. `secitem accept-restore` replaces it, logged.
///   A mark made under a key the store no longer has (a rekey since) is checked with
///   that key's item while the keyring keeps it; without it the mark counts as missing.
///
/// What it cannot stop: a program running as the user while the keyring is unlocked can
/// read the store's key item (the Secret Service has no per-program access control),
/// so it can forge a valid lower mark, or delete the mark item and the state directory
/// together; then an older copy put back is not noticed. The MAC stops anything that
/// can write the keyring but not read the key item, and every accident.
struct SecretServiceMarkWitness: RollbackWitness, CustomStringConvertible {
    /// The mark item's `xdg:schema`.
    static let schema = "org.secitem.RollbackMark"

    /// The bound on each D-Bus call; the default collection, as the key item's.
    let service: SecretServiceBackend.Configuration
    /// The marks' files and the lock each change is made under.
    let files: StateDirectoryWitness
    /// The `store` attribute of the key item the store was opened with.
    let keyID: String
    /// ``KeyringMarkPayload/macKey(kek:)`` of that key.
    let macKey: SecretBytes

    var description: String { "in the login keyring (an \(Self.schema) item) and \(files.directory)" }

    /// The item's attributes for `store`.
    static func attributes(_ store: WitnessedStore) -> [String: String] {
        [ItemCodec.Reserved.schema: schema, "witnessed": HighWaterMark.hex(KeyringMarkPayload.identityDigest(store))]
    }

    func mark(for store: WitnessedStore) throws(SecItemError) -> HighWaterMark? {
        let file = try files.mark(for: store)
        return Self.merged(file, try keyringMark(store, file: file))
    }

    @discardableResult
    func advance(_ store: WitnessedStore, to state: HighWaterMark) throws(SecItemError) -> HighWaterMark {
        try files.locked(store) { () throws(SecItemError) -> HighWaterMark in
            let recorded = try files.advanceHoldingLock(store, to: state)
            let kept = try? raise(store, to: recorded)
            return Self.merged(recorded, kept ?? nil) ?? recorded
        }
    }

    func reset(_ store: WitnessedStore, to state: HighWaterMark?, note: String) throws(SecItemError) {
        try files.locked(store) { () throws(SecItemError) in
            let file = try files.mark(for: store)
            let before = Self.merged(file, (try? keyringMark(store, file: nil)) ?? nil)
            try withSession(store) { (session) throws(SecItemError) in
                let found = try search(session, store)
                if let state {
                    try write(session, store, found, state)
                } else {
                    for path in found { _ = try session.delete(path) }
                }
            }
            remember(store, state)
            let keyring = state == nil ? " (login keyring mark removed)" : " (login keyring mark set to it)"
            try files.resetHoldingLock(store, to: state, note: note + keyring, before: .some(before))
        }
    }

    /// The file's mark, unless the keyring's is higher (or has the digest the file's lacks).
    static func merged(_ file: HighWaterMark?, _ keyring: HighWaterMark?) -> HighWaterMark? {
        guard let keyring else { return file }
        guard let file else { return keyring }
        if keyring.generation > file.generation { return keyring }
        if keyring.generation == file.generation, file.digest.isEmpty, !keyring.digest.isEmpty { return keyring }
        return file
    }

    // MARK: What this process knows

    private struct Known {
        var mark: HighWaterMark?
        var read: ContinuousClock.Instant
    }

    private static let known = Mutex<[String: Known]>([:])

    private func cacheKey(_ store: WitnessedStore) -> String { keyID + "\n" + store.identity }

    private func remember(_ store: WitnessedStore, _ mark: HighWaterMark?) {
        let key = cacheKey(store)
        Self.known.withLock { $0[key] = Known(mark: mark, read: .now) }
    }

    /// The keyring's mark: read once per process, and again (at most once a second) while
    /// `file` is missing or lower than it. A keyring that cannot be read now gives what
    /// was read before; with nothing read before, its error.
    private func keyringMark(_ store: WitnessedStore, file: HighWaterMark?) throws(SecItemError) -> HighWaterMark? {
        let key = cacheKey(store)
        let cached = Self.known.withLock { $0[key] }
        if let cached {
            let behind = file == nil || (cached.mark.map { $0.generation > file!.generation } ?? false)
            if !behind || ContinuousClock.now - cached.read < .seconds(1) { return cached.mark }
        }
        do throws(SecItemError) {
            let mark = try withSession(store) { (session) throws(SecItemError) -> HighWaterMark? in
                try read(session, store, try search(session, store))?.mark
            }
            remember(store, mark)
            return mark
        } catch where error.status != errSecDecode && cached != nil {
            return cached?.mark
        }
    }

    /// Raises the keyring's mark to `state` (creating the item when there is none).
    /// Called holding the store's lock. Returns the keyring's mark afterwards.
    private func raise(_ store: WitnessedStore, to state: HighWaterMark) throws(SecItemError) -> HighWaterMark? {
        let mark = try withSession(store) { (session) throws(SecItemError) -> HighWaterMark in
            let found = try search(session, store)
            if let current = try read(session, store, found)?.mark, current.generation >= state.generation { return current }
            try write(session, store, found, state)
            return state
        }
        remember(store, mark)
        return mark
    }

    // MARK: The item

    /// The store's mark items (one, unless another program added some).
    /// - Throws: `errSecInteractionNotAllowed` when the keyring is locked.
    private func search(_ session: SecretServiceSession, _ store: WitnessedStore) throws(SecItemError) -> [String] {
        let found = try session.search(Self.attributes(store), checkingLock: true)
        if found.locked {
            throw SecItemError(
                errSecInteractionNotAllowed,
                "the rollback mark of the keychain \(store.location) is kept in the login keyring "
                    + "(\(session.collectionPath)), which is locked; unlock it (log in) and try again")
        }
        if let failure = found.lockFailure { throw failure }
        return found.paths
    }

    /// The highest authentic mark among `paths`; `nil` when there is none (or only marks
    /// made under a key whose item is gone).
    /// - Throws: `errSecDecode` when an item is not an authentic mark of this store.
    private func read(_ session: SecretServiceSession, _ store: WitnessedStore, _ paths: [String]) throws(SecItemError)
        -> KeyringMarkPayload?
    {
        guard !paths.isEmpty else { return nil }
        let secrets = try session.secrets(paths)
        var best: KeyringMarkPayload?
        for path in paths {
            guard let secret = secrets[path] else { continue }
            guard let payload = KeyringMarkPayload.parse(secret) else {
                throw unauthentic(store, "the item \(path) holds no rollback mark")
            }
            guard payload.identity == KeyringMarkPayload.identityDigest(store) else {
                throw unauthentic(store, "the item \(path) is the mark of another keychain")
            }
            let key: SecretBytes
            if payload.keyID == keyID {
                key = macKey
            } else if let other = try otherKey(session, payload.keyID) {
                key = other
            } else {
                continue  // made under a key whose item is gone: no evidence (as a missing item)
            }
            guard try payload.verifies(key) else {
                throw unauthentic(store, "the item \(path) claims \(payload.mark), but its MAC does not verify")
            }
            if best.map({ payload.mark.generation > $0.mark.generation }) ?? true { best = payload }
        }
        return best
    }

    /// Replaces the mark items with one holding `state`, authenticated with this store's key.
    private func write(_ session: SecretServiceSession, _ store: WitnessedStore, _ found: [String], _ state: HighWaterMark)
        throws(SecItemError)
    {
        var payload = KeyringMarkPayload(mark: state, keyID: keyID, identity: KeyringMarkPayload.identityDigest(store))
        guard payload.isEncodable else {
            throw SecItemError(errSecParam, "the rollback mark \(state) of the keychain \(store.location) cannot be kept in the login keyring")
        }
        try payload.seal(macKey)
        let secret = Data(payload.bytes)
        if let first = found.first {
            try session.write(first, secret: .some(secret), attributes: nil, label: nil)
            for extra in found.dropFirst() { _ = try session.delete(extra) }
        } else {
            _ = try session.create(
                attributes: Self.attributes(store), label: "secitem rollback mark: \(store.location)", data: secret)
        }
    }

    /// The MAC key of another key item of this schema (`store` = `keyID`), while the keyring has it.
    private func otherKey(_ session: SecretServiceSession, _ keyID: String) throws(SecItemError) -> SecretBytes? {
        let paths = try session.search([ItemCodec.Reserved.schema: SecretServiceKeySource.schema, "store": keyID])
        var secrets = try session.secrets(paths)
        defer {
            for path in secrets.keys { secrets[path]!.resetBytes(in: 0..<secrets[path]!.count) }
        }
        guard let secret = paths.lazy.compactMap({ secrets[$0] }).first(where: { $0.count == Crypto.keyLength }) else {
            return nil
        }
        return try KeyringMarkPayload.macKey(kek: SecretBytes(copying: secret))
    }

    private func unauthentic(_ store: WitnessedStore, _ why: String) -> SecItemError {
        SecItemError(
            errSecDecode,
            "the rollback mark kept in the login keyring for the keychain \(store.location) is not authentic (\(why)): "
                + "a program other than secitem wrote it, and a forged mark could hide a rollback; nothing was read or "
                + "changed. If the keychain is as it should be, run `secitem accept-restore` (docs/file-format.md, "
                + "\"Rollback evidence\")")
    }

    /// Runs `body` on a new session with the default collection; errors name the mark.
    private func withSession<R>(_ store: WitnessedStore, _ body: (SecretServiceSession) throws(SecItemError) -> R)
        throws(SecItemError) -> R
    {
        do throws(SecItemError) {
            var progress = SecretServiceSession.OpenProgress()
            let session = try SecretServiceSession.open(service, progress: &progress)
            return try body(session)
        } catch where !(error.detail ?? "").contains("rollback mark") {
            throw SecItemError(
                error.status,
                "the rollback mark of the keychain \(store.location) in the login keyring: \(error.detail ?? error.message)")
        }
    }
}

extension SecretServiceKeySource {
    /// The login keyring's mark item beside the state directory's marks (none without a
    /// state directory, or without the key the store was opened with).
    func rollbackWitness(stateDirectory: String?, unlocked: UnlockedStoreKey?) -> (any RollbackWitness)? {
        guard let stateDirectory, let unlocked,
            let keyID = unlocked.header.parameters[Self.storeParameter]?.text, !keyID.isEmpty,
            let macKey = try? KeyringMarkPayload.macKey(kek: unlocked.kek)
        else { return nil }
        return SecretServiceMarkWitness(
            service: service, files: StateDirectoryWitness(directory: stateDirectory), keyID: keyID, macKey: macKey)
    }
}
