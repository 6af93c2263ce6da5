internal import CSecItemLibsecret
import SecItemCore
import Foundation
import Dispatch
import Synchronization

/// What the backend knows about a Secret Service item it found.
struct FoundItem {
    /// The item's D-Bus object path.
    var path: String
    /// Its Secret Service attributes, as stored.
    var attributes: [String: String]
    /// Its Secret Service label.
    var label: String
    /// The decoded keychain item (data filled in when secrets were loaded).
    var item: StoredItem
}

/// A GCancellable that a timer cancels when a D-Bus call runs past its bound.
///
/// `@unchecked Sendable`: the timer fires on a Dispatch thread while the call
/// runs on the caller's. The only cross-thread operations are
/// `g_cancellable_cancel` (documented thread-safe), GObject reference counting
/// (atomic) and the `Atomic` flag.
private final class Deadline: @unchecked Sendable {
    let cancellable: UnsafeMutablePointer<GCancellable>
    let fired = Atomic<Bool>(false)

    init() { cancellable = g_cancellable_new() }
    deinit { g_object_unref(cancellable) }

    func fire() {
        fired.store(true, ordering: .sequentiallyConsistent)
        g_cancellable_cancel(cancellable)
    }
}

/// The GLib handles of one session with the Secret Service: the session-bus
/// connection, a `SecretService` proxy with an open encryption session, and the
/// resolved collection. Not thread-safe on its own: ``SecretServiceConnection``
/// only touches it under its lock.
final class Session {
    let connection: OpaquePointer
    let service: UnsafeMutablePointer<SecretService>
    let collectionPath: String
    /// How the collection was chosen ("alias default", "fallback: login", …).
    let collectionSource: String
    let timeout: Duration
    let promptTimeout: Duration

    var timeoutMilliseconds: Int32 {
        Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
    }

    private init(
        connection: OpaquePointer, service: UnsafeMutablePointer<SecretService>, collectionPath: String,
        collectionSource: String, timeout: Duration, promptTimeout: Duration
    ) {
        self.connection = connection
        self.service = service
        self.collectionPath = collectionPath
        self.collectionSource = collectionSource
        self.timeout = timeout
        self.promptTimeout = promptTimeout
    }

    deinit {
        if let lockWatch { csecitem_watch_stop(lockWatch) }
        csecitem_object_unref(UnsafeMutableRawPointer(service))
        csecitem_object_unref(UnsafeMutableRawPointer(connection))
    }

    // MARK: Opening

    /// What stage an open reached, for ``SecretServiceBackend/probe(timeout:)``.
    struct OpenProgress {
        var busReachable = false
        var providerAnswers = false
    }

    /// Connects, opens the service and resolves the collection, each step bounded by `timeout`.
    static func open(
        _ configuration: SecretServiceBackend.Configuration, progress: inout OpenProgress
    ) throws(SecItemError) -> Session {
        let timeout = configuration.timeout
        let ms = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let bus = try bounded("connecting to the D-Bus session bus", timeout, phase: .bus) { c, e in
            csecitem_connect(c, e)
        }
        guard let bus else { throw SecItemError(errSecNotAvailable, "cannot connect to the D-Bus session bus") }
        csecitem_object_unref(UnsafeMutableRawPointer(bus))  // the service holds its own reference
        progress.busReachable = true
        let service = try bounded("opening the Secret Service (org.freedesktop.secrets)", timeout, phase: .provider) {
            c, e in csecitem_service_open(ms, c, e)
        }
        guard let service else {
            throw SecItemError(errSecNotAvailable, "the Secret Service provider did not open a session")
        }
        let connection = csecitem_service_connection(service)!
        csecitem_object_ref(UnsafeMutableRawPointer(connection))
        progress.providerAnswers = true
        // From here the Session owns both handles.
        let resolved = try resolveCollection(
            configuration.collection, connection: connection, service: service, timeout: timeout, ms: ms,
            release: {
                csecitem_object_unref(UnsafeMutableRawPointer(service))
                csecitem_object_unref(UnsafeMutableRawPointer(connection))
            })
        return Session(
            connection: connection, service: service, collectionPath: resolved.path, collectionSource: resolved.source,
            timeout: timeout, promptTimeout: configuration.promptTimeout)
    }

    private static let loginPath = "/org/freedesktop/secrets/collection/login"

    private static func resolveCollection(
        _ configured: String?, connection: OpaquePointer, service: UnsafeMutablePointer<SecretService>,
        timeout: Duration, ms: Int32, release: () -> Void
    ) throws(SecItemError) -> (path: String, source: String) {
        func readAlias(_ alias: String) throws(SecItemError) -> String? {
            let path = try bounded("reading the collection alias \"\(alias)\"", timeout, phase: .provider) { c, e in
                secret_service_read_alias_dbus_path_sync(service, alias, c, e)
            }
            guard let path else { return nil }
            defer { g_free(path) }
            let s = String(cString: path)
            return s == "/" ? nil : s
        }
        func exists(_ path: String) throws(SecItemError) -> Bool {
            do throws(SecItemError) {
                _ = try bounded("reading the collection \(path)", timeout, phase: .provider) { c, e in
                    var locked: gboolean = 0
                    return csecitem_get_locked(connection, path, CSECITEM_COLLECTION_IFACE, ms, c, &locked, e)
                }
                return true
            } catch where error.status == errSecInvalidItemRef {
                return false
            }
        }
        do throws(SecItemError) {
            if let configured, configured.hasPrefix("/") {
                guard try exists(configured) else {
                    throw SecItemError(errSecNoSuchKeychain, "the collection \(configured) does not exist")
                }
                return (configured, "configured path")
            }
            if let configured {
                guard let path = try readAlias(configured) else {
                    throw SecItemError(errSecNoSuchKeychain, "no collection has the alias \"\(configured)\"")
                }
                return (path, "configured alias \"\(configured)\"")
            }
            if let path = try readAlias("default"), !path.hasSuffix("/session") {
                return (path, "alias \"default\"")
            }
            guard try exists(loginPath) else {
                throw SecItemError(
                    errSecNoSuchKeychain,
                    "no \"default\" collection alias and no \"login\" collection; set SECITEM_COLLECTION")
            }
            return (loginPath, "fallback to \"login\" (no \"default\" alias)")
        } catch {
            release()
            throw error
        }
    }

    // MARK: Bounded calls

    enum Phase {
        case bus, provider, call
    }

    /// Runs one GLib call with a cancellable that a timer cancels after `timeout`,
    /// and turns a GError into a ``SecItemError``.
    static func bounded<T>(
        _ what: String, _ timeout: Duration, phase: Phase = .call,
        _ body: (UnsafeMutablePointer<GCancellable>, UnsafeMutablePointer<UnsafeMutablePointer<GError>?>) -> T
    ) throws(SecItemError) -> T {
        let deadline = Deadline()
        let timer = DispatchWorkItem { [deadline] in deadline.fire() }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout.dispatchInterval, execute: timer)
        var error: UnsafeMutablePointer<GError>? = nil
        let result = body(deadline.cancellable, &error)
        timer.cancel()
        if let error {
            defer { g_error_free(error) }
            throw mapError(
                error, what: what, timeout: timeout, timedOut: deadline.fired.load(ordering: .sequentiallyConsistent),
                phase: phase)
        }
        return result
    }

    /// Runs direct GDBus calls (pipelined ones, reporting several GErrors) that
    /// carry `timeout` themselves (`timeout_ms` on every call: GDBus fails the
    /// call with G_IO_ERROR_TIMED_OUT, reported like the timer's cancellation),
    /// so they need no timer. `take` turns each GError into a ``SecItemError``
    /// (and frees it).
    func direct<T>(
        _ body: (_ timeoutMilliseconds: Int32) -> T
    ) -> (result: T, take: (UnsafeMutablePointer<GError>?, String) -> SecItemError?) {
        let result = body(timeoutMilliseconds)
        let timeout = self.timeout
        return (result, { error, what in
            guard let error else { return nil }
            defer { g_error_free(error) }
            return Session.mapError(error, what: what, timeout: timeout, timedOut: false, phase: .call)
        })
    }

    /// One direct GDBus call that carries the timeout itself (see ``direct(_:)``).
    func directCall<T>(
        _ what: String,
        _ body: (_ timeoutMilliseconds: Int32, UnsafeMutablePointer<UnsafeMutablePointer<GError>?>) -> T
    ) throws(SecItemError) -> T {
        var error: UnsafeMutablePointer<GError>? = nil
        let (result, take) = direct { ms in body(ms, &error) }
        if let failure = take(error, what) { throw failure }
        return result
    }

    func call<T>(
        _ what: String,
        _ body: (UnsafeMutablePointer<GCancellable>, UnsafeMutablePointer<UnsafeMutablePointer<GError>?>) -> T
    ) throws(SecItemError) -> T {
        try Self.bounded(what, timeout, body)
    }

    // MARK: Operations

    /// Collection.SearchItems: the paths of items having at least `attributes`.
    func search(_ attributes: [String: String]) throws(SecItemError) -> [String] {
        let table = Self.hashTable(attributes)
        defer { csecitem_hash_unref(table) }
        let paths = try directCall("searching the collection") { ms, e in
            csecitem_search(connection, collectionPath, table, ms, nil, e)
        }
        return Self.strings(consuming: paths)
    }

    /// Whether the last search of this session came back empty: then the next
    /// search asks for the collection's lock state along with it (misses tend to
    /// follow misses), else only when it comes back empty (a hit does not need it).
    var lastSearchWasEmpty = false

    /// The provider's signals, counted (`CSecItemWatch`); started by the first
    /// empty search, `nil` when the bus refused the match rules.
    private var lockWatch: UnsafeMutablePointer<CSecItemWatch>?
    private var lockWatchStarted = false
    /// The watch's count when the collection was last read unlocked: while the
    /// count has not moved, no lock, unlock or other change of the provider's
    /// has come in since, and the collection is still unlocked.
    private var unlockedAsOf: gint?
    /// How many times this session has read the collection's `Locked` (tests).
    private(set) var lockReads = 0

    /// The watch's count now, starting the watch on first use.
    private func lockGeneration() -> gint? {
        if !lockWatchStarted {
            lockWatchStarted = true
            lockWatch = csecitem_watch_start(connection, collectionPath, timeoutMilliseconds)
        }
        return lockWatch.map { csecitem_watch_generation($0) }
    }

    /// Whether the collection is known to be unlocked with no provider signal since.
    private var knownUnlocked: Bool {
        guard let unlockedAsOf, let lockWatch else { return false }
        return csecitem_watch_generation(lockWatch) == unlockedAsOf
    }

    /// Records a `Locked` read made when the watch's count was `generation`.
    private func noteLockState(_ locked: Bool, readAt generation: gint?) {
        lockReads += 1
        unlockedAsOf = locked ? nil : generation
    }

    /// Collection.SearchItems, and when it comes back empty, whether the
    /// collection is locked: known without asking while no provider signal has
    /// come in since it was last read unlocked, else asked at once (one round
    /// trip) after an empty search, or after this one. `locked` is only
    /// meaningful when `paths` is empty.
    func searchCheckingLock(
        _ attributes: [String: String]
    ) throws(SecItemError) -> (paths: [String], locked: Bool) {
        let table = Self.hashTable(attributes)
        defer { csecitem_hash_unref(table) }
        let speculate = lastSearchWasEmpty && !knownUnlocked
        let generation = speculate ? lockGeneration() : nil  // read before asking
        var locked: gboolean = 0
        var lockError: UnsafeMutablePointer<GError>? = nil
        var searchError: UnsafeMutablePointer<GError>? = nil
        let (paths, take) = direct { ms in
            csecitem_search_checking_lock(
                connection, collectionPath, table, speculate ? 1 : 0, ms, nil, &locked, &lockError, &searchError)
        }
        let lockFailure = take(lockError, "reading whether the collection is locked")
        if let failure = take(searchError, "searching the collection") {
            _ = Self.strings(consuming: paths)
            throw failure
        }
        let found = Self.strings(consuming: paths)
        lastSearchWasEmpty = found.isEmpty
        guard found.isEmpty else { return (found, false) }
        if knownUnlocked { return (found, false) }
        guard speculate else {
            let before = lockGeneration()
            let isLocked = try collectionLocked()
            noteLockState(isLocked, readAt: before)
            return (found, isLocked)
        }
        if let lockFailure {
            if lockFailure.status == errSecInvalidItemRef {
                throw SecItemError(errSecNoSuchKeychain, "the collection \(collectionPath) no longer exists")
            }
            throw lockFailure
        }
        noteLockState(locked != 0, readAt: generation)
        return (found, locked != 0)
    }

    typealias ItemProperties = (attributes: [String: String], label: String, locked: Bool)

    /// How many item property reads (`GetAll`) this session has sent: the
    /// daemon's costliest read, which data-only lookups avoid (tests check that).
    private(set) var propertyReads = 0

    /// Where the holder of a primary key was last seen: `primary-key` hash →
    /// item path. A hint only, never trusted: a lookup through it checks the
    /// item's attributes in the same round trip as its secret (another process
    /// may have changed or deleted it). Bounded by ``holderPathLimit``.
    private(set) var holderPaths: [String: String] = [:]
    static let holderPathLimit = 4_096

    /// Records (or with `nil`, forgets) where the holder of a primary key is.
    func rememberHolder(_ hash: String, at path: String?) {
        if path != nil, holderPaths[hash] == nil, holderPaths.count >= Self.holderPathLimit {
            holderPaths.removeAll(keepingCapacity: true)
        }
        holderPaths[hash] = path
    }

    /// Every item's properties (`nil`: vanished), and when `withSecrets` their
    /// secrets too (`nil` when that call failed), in one round trip: one
    /// `GetAll` per item (with `attributesOnly`, one `Get` of its attributes:
    /// the label is then empty and the lock state unknown, reported unlocked)
    /// and one `GetSecrets` for all, sent at once.
    func read(
        _ paths: [String], withSecrets: Bool, attributesOnly: Bool = false
    ) -> (properties: [Result<ItemProperties?, SecItemError>], secrets: [String: Data]?) {
        guard !paths.isEmpty else { return ([], withSecrets ? [:] : nil) }
        if !attributesOnly { propertyReads += paths.count }
        var variants = [OpaquePointer?](repeating: nil, count: paths.count)
        var errors = [UnsafeMutablePointer<GError>?](repeating: nil, count: paths.count)
        var table: OpaquePointer? = nil
        var secretsError: UnsafeMutablePointer<GError>? = nil
        let copies = paths.map { strdup($0) }
        defer { for p in copies { free(p) } }
        var array: [UnsafePointer<gchar>?] = copies.map { UnsafePointer($0) }
        array.append(nil)
        let (_, take) = direct { ms in
            array.withUnsafeBufferPointer { pathsBuffer in
                variants.withUnsafeMutableBufferPointer { v in
                    errors.withUnsafeMutableBufferPointer { e in
                        if withSecrets {
                            csecitem_read_items(
                                service, connection, pathsBuffer.baseAddress, guint(paths.count),
                                attributesOnly ? 1 : 0, ms, nil, v.baseAddress, e.baseAddress, &table, &secretsError)
                        } else {
                            csecitem_read_items(
                                service, connection, pathsBuffer.baseAddress, guint(paths.count),
                                attributesOnly ? 1 : 0, ms, nil, v.baseAddress, e.baseAddress, nil, nil)
                        }
                    }
                }
            }
        }
        var properties: [Result<ItemProperties?, SecItemError>] = []
        properties.reserveCapacity(paths.count)
        for i in paths.indices {
            if let failure = take(errors[i], "reading an item's attributes") {
                properties.append(failure.status == errSecInvalidItemRef ? .success(nil) : .failure(failure))
                continue
            }
            guard let props = variants[i] else {
                properties.append(.success(nil))
                continue
            }
            var keys: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>? = nil
            var values: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>? = nil
            var label: UnsafeMutablePointer<gchar>? = nil
            var locked: gboolean = 0
            csecitem_parse_properties(props, &keys, &values, &label, &locked)
            csecitem_variant_unref(props)
            properties.append(.success(Self.properties(consuming: keys, values, label, locked)))
        }
        _ = take(secretsError, "reading secrets")
        guard withSecrets, let table else { return (properties, nil) }
        return (properties, Self.secretBytes(consuming: table, paths))
    }

    /// An item's attributes, label and locked state; `nil` when it vanished.
    func properties(_ path: String) throws(SecItemError) -> (attributes: [String: String], label: String, locked: Bool)? {
        var keys: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>? = nil
        var values: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>? = nil
        var label: UnsafeMutablePointer<gchar>? = nil
        var locked: gboolean = 0
        propertyReads += 1
        do throws(SecItemError) {
            _ = try directCall("reading an item's attributes") { ms, e in
                csecitem_item_properties(connection, path, ms, nil, &keys, &values, &label, &locked, e)
            }
        } catch where error.status == errSecInvalidItemRef {
            return nil
        }
        return Self.properties(consuming: keys, values, label, locked)
    }

    /// Takes ownership of what `csecitem_parse_properties` returned and frees it.
    private static func properties(
        consuming keys: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?,
        _ values: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?, _ label: UnsafeMutablePointer<gchar>?,
        _ locked: gboolean
    ) -> (attributes: [String: String], label: String, locked: Bool) {
        var attributes: [String: String] = [:]
        for (key, value) in zip(strings(consuming: keys), strings(consuming: values)) { attributes[key] = value }
        let text = label.map { String(cString: $0) } ?? ""
        g_free(label)
        return (attributes, text, locked != 0)
    }

    /// Whether the collection is locked.
    func collectionLocked() throws(SecItemError) -> Bool {
        var locked: gboolean = 0
        do throws(SecItemError) {
            _ = try directCall("reading whether the collection is locked") { ms, e in
                csecitem_get_locked(connection, collectionPath, CSECITEM_COLLECTION_IFACE, ms, nil, &locked, e)
            }
        } catch where error.status == errSecInvalidItemRef {
            throw SecItemError(errSecNoSuchKeychain, "the collection \(collectionPath) no longer exists")
        }
        return locked != 0
    }

    /// Unlocks `paths` through the provider's prompt.
    /// - Throws: `errSecUserCanceled` when the prompt is dismissed.
    func unlock(_ paths: [String]) throws(SecItemError) {
        let count = try Self.withCStringArray(paths) { (array) throws(SecItemError) -> Int32 in
            try Self.bounded("waiting for the unlock prompt", promptTimeout) { c, e in
                secret_service_unlock_dbus_paths_sync(service, array, c, nil, e)
            }
        }
        if count <= 0 {
            throw SecItemError(errSecUserCanceled, "the unlock prompt was dismissed")
        }
    }

    /// The secrets of `paths`, by path (items without a secret are absent).
    /// The secret bytes of `paths` from a libsecret path → SecretValue table; frees the
    /// table, which unrefs (and so wipes) each SecretValue.
    private static func secretBytes(consuming table: OpaquePointer, _ paths: [String]) -> [String: Data] {
        defer { csecitem_hash_unref(table) }
        var out: [String: Data] = [:]
        for path in paths {
            var length: gsize = 0
            if let bytes = csecitem_secret_bytes(table, path, &length) {
                out[path] = Data(bytes: bytes, count: Int(length))
            }
        }
        return out
    }

    func secrets(_ paths: [String]) throws(SecItemError) -> [String: Data] {
        guard !paths.isEmpty else { return [:] }
        let table = try Self.withCStringArray(paths) { (array) throws(SecItemError) -> OpaquePointer? in
            try call("reading secrets") { c, e in
                secret_service_get_secrets_for_dbus_paths_sync(service, array, c, e)
            }
        }
        guard let table else { return [:] }
        return Self.secretBytes(consuming: table, paths)
    }

    /// Service.CreateItem: a new item, returning its path.
    func create(attributes: [String: String], label: String, data: Data?) throws(SecItemError) -> String {
        let table = Self.hashTable(attributes)
        defer { csecitem_hash_unref(table) }
        let bytes = data ?? Data()
        let path = try bytes.withUnsafeBytes { raw in
            Result { () throws(SecItemError) -> UnsafeMutablePointer<gchar>? in
                try call("creating an item") { c, e in
                    csecitem_create_item(service, collectionPath, label, table, raw.baseAddress, gsize(raw.count), c, e)
                }
            }
        }.get()
        guard let path else { throw SecItemError(errSecIO, "the Secret Service created no item") }
        defer { g_free(path) }
        return String(cString: path)
    }

    /// Item.Delete. Returns `false` when the item was already gone.
    func delete(_ path: String) throws(SecItemError) -> Bool {
        do throws(SecItemError) {
            _ = try call("deleting an item") { c, e in secret_service_delete_item_dbus_path_sync(service, path, c, e) }
            return true
        } catch where error.status == errSecInvalidItemRef {
            return false
        }
    }

    /// Changes an item's secret (when `secret` is set), attributes and label
    /// (when not `nil`) with the calls sent at once (one round trip). Throws the
    /// first failure, in that order; the others may have been applied.
    func write(
        _ path: String, secret: Data??, attributes: [String: String]?, label: String?
    ) throws(SecItemError) {
        let table = attributes.map { Self.hashTable($0) }
        defer { if let table { csecitem_hash_unref(table) } }
        let bytes: Data = (secret ?? nil) ?? Data()
        var errors = [UnsafeMutablePointer<GError>?](repeating: nil, count: 3)
        let (_, take) = bytes.withUnsafeBytes { raw in
            errors.withUnsafeMutableBufferPointer { e in
                direct { ms in
                    if let label {
                        csecitem_item_write(
                            service, connection, path, secret != nil ? 1 : 0, raw.baseAddress, gsize(raw.count), table,
                            label, ms, nil, e.baseAddress)
                    } else {
                        csecitem_item_write(
                            service, connection, path, secret != nil ? 1 : 0, raw.baseAddress, gsize(raw.count), table,
                            nil, ms, nil, e.baseAddress)
                    }
                }
            }
        }
        let failures = [
            take(errors[0], "changing an item's secret"), take(errors[1], "changing an item's attributes"),
            take(errors[2], "changing an item's label"),
        ]
        if let first = failures.compactMap({ $0 }).first { throw first }
    }

    func setAttributes(_ path: String, _ attributes: [String: String]) throws(SecItemError) {
        let table = Self.hashTable(attributes)
        defer { csecitem_hash_unref(table) }
        let ms = timeoutMilliseconds
        _ = try call("changing an item's attributes") { c, e in
            csecitem_item_set_attributes(connection, path, table, ms, c, e)
        }
    }

    func setLabel(_ path: String, _ label: String) throws(SecItemError) {
        let ms = timeoutMilliseconds
        _ = try call("changing an item's label") { c, e in csecitem_item_set_label(connection, path, label, ms, c, e) }
    }

    func setSecret(_ path: String, _ data: Data?) throws(SecItemError) {
        let bytes = data ?? Data()
        let ms = timeoutMilliseconds
        _ = try bytes.withUnsafeBytes { raw in
            Result { () throws(SecItemError) -> gboolean in
                try call("changing an item's secret") { c, e in
                    csecitem_item_set_secret(service, connection, path, raw.baseAddress, gsize(raw.count), ms, c, e)
                }
            }
        }.get()
    }

    // MARK: Helpers

    static func hashTable(_ attributes: [String: String]) -> OpaquePointer {
        let table = csecitem_strhash_new()!
        for (key, value) in attributes { csecitem_strhash_insert(table, key, value) }
        return table
    }

    /// The strings of a NULL-terminated `gchar **`, which is then freed.
    static func strings(consuming array: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?) -> [String] {
        guard let array else { return [] }
        defer { g_strfreev(array) }
        var out: [String] = []
        var i = 0
        while let p = array[i] {
            out.append(String(cString: p))
            i += 1
        }
        return out
    }

    static func withCStringArray<R>(
        _ strings: [String], _ body: (UnsafeMutablePointer<UnsafePointer<gchar>?>) throws(SecItemError) -> R
    ) throws(SecItemError) -> R {
        let copies = strings.map { strdup($0) }
        defer { for p in copies { free(p) } }
        var array: [UnsafePointer<gchar>?] = copies.map { UnsafePointer($0) }
        array.append(nil)
        return try array.withUnsafeMutableBufferPointer { (buffer) throws(SecItemError) -> R in
            try body(buffer.baseAddress!)
        }
    }

    // MARK: Errors

    /// Turns a GError into a status: unreachable bus or provider →
    /// errSecNotAvailable, locked → errSecInteractionNotAllowed, unknown object →
    /// errSecInvalidItemRef (callers decide what a vanished object means), other → errSecIO.
    static func mapError(
        _ error: UnsafeMutablePointer<GError>, what: String, timeout: Duration, timedOut: Bool, phase: Phase
    ) -> SecItemError {
        let domain = error.pointee.domain
        let code = error.pointee.code
        let message = error.pointee.message.map { String(cString: $0) } ?? "no detail"
        var remote: String? = nil
        if g_dbus_error_is_remote_error(error) != 0, let name = g_dbus_error_get_remote_error(error) {
            remote = String(cString: name)
            g_free(name)
        }
        let isIO = domain == csecitem_io_error_quark()
        let isDBus = domain == csecitem_dbus_error_quark()
        func dbus(_ c: GDBusError) -> Bool { isDBus && code == Int32(c.rawValue) }
        func io(_ c: GIOErrorEnum) -> Bool { isIO && code == Int32(c.rawValue) }

        if timedOut || io(G_IO_ERROR_TIMED_OUT) || dbus(G_DBUS_ERROR_NO_REPLY) || dbus(G_DBUS_ERROR_TIMEOUT)
            || dbus(G_DBUS_ERROR_TIMED_OUT)
        {
            let seconds = timeout.components.seconds
            return SecItemError(
                errSecNotAvailable,
                "the Secret Service provider did not answer within \(seconds) s while \(what)")
        }
        if phase == .bus {
            return SecItemError(errSecNotAvailable, "cannot connect to the D-Bus session bus: \(message)")
        }
        if dbus(G_DBUS_ERROR_SERVICE_UNKNOWN) || dbus(G_DBUS_ERROR_NAME_HAS_NO_OWNER)
            || remote == "org.freedesktop.DBus.Error.ServiceUnknown"
            || remote == "org.freedesktop.DBus.Error.NameHasNoOwner"
        {
            return SecItemError(
                errSecNotAvailable,
                "no Secret Service provider (org.freedesktop.secrets) answers on the session bus: \(message)")
        }
        if dbus(G_DBUS_ERROR_DISCONNECTED) || io(G_IO_ERROR_CLOSED) || io(G_IO_ERROR_NOT_CONNECTED)
            || io(G_IO_ERROR_BROKEN_PIPE) || io(G_IO_ERROR_CONNECTION_CLOSED)
        {
            return SecItemError(errSecNotAvailable, "the D-Bus session bus connection closed: \(message)")
        }
        if io(G_IO_ERROR_CANCELLED) {
            return SecItemError(errSecNotAvailable, "the Secret Service call was cancelled while \(what)")
        }
        if remote == "org.freedesktop.Secret.Error.IsLocked"
            || (domain == csecitem_secret_error_quark() && code == Int32(SECRET_ERROR_IS_LOCKED.rawValue))
        {
            return SecItemError(errSecInteractionNotAllowed, "the Secret Service collection or item is locked")
        }
        if dbus(G_DBUS_ERROR_UNKNOWN_OBJECT) || dbus(G_DBUS_ERROR_UNKNOWN_METHOD)
            || remote == "org.freedesktop.Secret.Error.NoSuchObject"
            || (domain == csecitem_secret_error_quark() && code == Int32(SECRET_ERROR_NO_SUCH_OBJECT.rawValue))
        {
            return SecItemError(errSecInvalidItemRef, "the Secret Service object no longer exists: \(message)")
        }
        if phase == .provider {
            return SecItemError(errSecNotAvailable, "the Secret Service provider failed while \(what): \(message)")
        }
        return SecItemError(errSecIO, "the Secret Service failed while \(what): \(message)")
    }
}

/// The one session of a backend, behind a lock: libsecret and GDBus proxies are
/// not meant to be driven from several threads at once, and the backend's
/// multi-step operations (check then create, update with rollback) must not
/// interleave within a process.
///
/// Checked `Sendable`: the non-Sendable `Session` lives only inside the `Mutex`.
final class SecretServiceConnection: Sendable {
    let configuration: SecretServiceBackend.Configuration
    private let state: Mutex<Session?>

    init(configuration: SecretServiceBackend.Configuration) throws(SecItemError) {
        self.configuration = configuration
        var progress = Session.OpenProgress()
        state = Mutex(try Session.open(configuration, progress: &progress))
    }

    /// Runs `body` with the session, reopening it if an earlier call found the
    /// provider gone. A call that finds the bus or provider unavailable drops the
    /// session so that the next call reconnects.
    func withSession<R: Sendable>(_ body: (Session) throws(SecItemError) -> R) throws(SecItemError) -> R {
        try state.withLock { (session: inout Session?) throws(SecItemError) -> R in
            let current: Session
            if let session {
                current = session
            } else {
                var progress = Session.OpenProgress()
                current = try Session.open(configuration, progress: &progress)
                session = current
            }
            do throws(SecItemError) {
                return try body(current)
            } catch {
                if error.status == errSecNotAvailable { session = nil }
                throw error
            }
        }
    }

    /// How the collection was chosen, for diagnostics.
    var collectionDescription: String? {
        state.withLock { session in session.map { "\($0.collectionPath) (\($0.collectionSource))" } }
    }
}

extension Duration {
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        let nanos = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if nanos.overflow { return .never }
        return .nanoseconds(Int(clamping: nanos.partialValue + attoseconds / 1_000_000_000))
    }
}

