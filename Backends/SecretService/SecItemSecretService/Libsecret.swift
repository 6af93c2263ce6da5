// Every call into libsecret, GDBus and GLib, in one file (as swift-system's
// Syscalls.swift): the session's handles, bounded calls, the item operations and
// the lock watch. The C half is the CSecItemLibsecret target.
internal import CSecItemLibsecret
import SecItemCore
import Foundation
import Dispatch
import Synchronization
import SecItemSealedStore

/// A GCancellable that a timer cancels when a D-Bus call runs past its bound.
///
/// `@unchecked Sendable`: the timer fires on a Dispatch thread while the call
/// runs on the caller's. The only cross-thread operations are
/// `g_cancellable_cancel` (documented thread-safe), GObject reference counting
/// (atomic) and the `Atomic` flag.
private final class Deadline: @unchecked Sendable {
    let cancellable: OpaquePointer
    let fired = Atomic<Bool>(false)

    init() { cancellable = g_cancellable_new() }
    deinit { g_object_unref(UnsafeMutableRawPointer(cancellable)) }

    func fire() {
        fired.store(true, ordering: .sequentiallyConsistent)
        g_cancellable_cancel(cancellable)
    }
}

typealias GErrorPointer = UnsafeMutablePointer<UnsafeMutablePointer<GError>?>

/// Reads a GError into Swift values and frees it.
private func consume(_ error: UnsafeMutablePointer<GError>) -> GErrorFacts {
    defer { g_error_free(error) }
    let domain: GErrorFacts.Domain
    switch error.pointee.domain {
    case csecitem_io_error_quark(): domain = .io
    case csecitem_dbus_error_quark(): domain = .dbus
    case csecitem_secret_error_quark(): domain = .secret
    default: domain = .other
    }
    var remote: String?
    if g_dbus_error_is_remote_error(error) != 0, let name = g_dbus_error_get_remote_error(error) {
        remote = String(cString: name)
        g_free(name)
    }
    return GErrorFacts(
        domain: domain, code: error.pointee.code, message: error.pointee.message.map { String(cString: $0) } ?? "no detail",
        remote: remote)
}

extension SecretServiceSession {
    // MARK: Bounded calls

    /// Runs one GLib call with a cancellable that a timer cancels after `timeout`,
    /// and turns a GError into a ``SecItemError``.
    static func bounded<T>(
        _ what: String, _ timeout: Duration, phase: CallPhase = .call, session: SecretServiceSession? = nil,
        _ body: (OpaquePointer, GErrorPointer) -> T
    ) throws(SecItemError) -> T {
        let deadline = Deadline()
        let timer = DispatchWorkItem { [deadline] in deadline.fire() }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout.dispatchInterval, execute: timer)
        var error: UnsafeMutablePointer<GError>? = nil
        let result = body(deadline.cancellable, &error)
        timer.cancel()
        if let error {
            let facts = consume(error)
            if facts.losesSession { session?.sessionLost = true }
            throw SecItemError(
                facts, what: what, timeout: timeout,
                timedOut: deadline.fired.load(ordering: .sequentiallyConsistent), phase: phase)
        }
        return result
    }

    /// The failure of a read whose secrets this session could not decrypt (the
    /// session is then marked lost: see ``sessionLost``).
    func undecodableSecrets(_ count: guint) -> SecItemError {
        sessionLost = true
        return SecItemError(
            errSecIO, "the Secret Service sent \(count) secret(s) that this session cannot decrypt (the provider lost its key)")
    }

    /// Runs direct GDBus calls (pipelined ones, reporting several GErrors) that
    /// carry the timeout themselves (`timeout_ms` on every call: GDBus fails the
    /// call with G_IO_ERROR_TIMED_OUT, reported like the timer's cancellation),
    /// so they need no timer. `take` turns each GError into a ``SecItemError``
    /// (and frees it).
    private func direct<T>(
        _ body: (_ timeoutMilliseconds: Int32) -> T
    ) -> (result: T, take: (UnsafeMutablePointer<GError>?, String) -> SecItemError?) {
        let result = body(timeoutMilliseconds)
        let timeout = self.timeout
        return (result, { [self] error, what in
            guard let error else { return nil }
            let facts = consume(error)
            if facts.losesSession { sessionLost = true }
            return SecItemError(facts, what: what, timeout: timeout, timedOut: false, phase: .call)
        })
    }

    /// One direct GDBus call that carries the timeout itself (see ``direct(_:)``).
    private func directCall<T>(
        _ what: String, _ body: (_ timeoutMilliseconds: Int32, GErrorPointer) -> T
    ) throws(SecItemError) -> T {
        var error: UnsafeMutablePointer<GError>? = nil
        let (result, take) = direct { ms in body(ms, &error) }
        if let failure = take(error, what) { throw failure }
        return result
    }

    /// A libsecret call bounded by the session's timeout (libsecret's own calls
    /// take a cancellable, not a timeout).
    private func call<T>(
        _ what: String, _ body: (OpaquePointer, GErrorPointer) -> T
    ) throws(SecItemError) -> T {
        try Self.bounded(what, timeout, session: self, body)
    }

    // MARK: Opening and closing

    /// Loads libsecret, GIO and GLib (nothing links them: CSecItemGLib), once per process:
    /// every way into the Secret Service or the portal starts with ``connectBus(_:)``, which
    /// calls this first.
    /// - Throws: `errSecNotAvailable` naming the library and the package when one is missing.
    static func loadLibsecret() throws(SecItemError) {
        var reason = [CChar](repeating: 0, count: 512)
        guard csecitem_secret_load(&reason, reason.count) == 0 else { return }
        let detail = String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        throw SecItemError(errSecNotAvailable, "the Secret Service backend cannot load libsecret: \(detail)")
    }

    /// Connects to the session bus: the process's connection, referenced (the session
    /// keeps the reference: while it is referenced, a libsecret proxy opened later uses
    /// this very connection, so a process has one).
    static func connectBus(_ timeout: Duration) throws(SecItemError) -> OpaquePointer {
        try loadLibsecret()
        var timedOut: gboolean = 0
        var error: UnsafeMutablePointer<GError>? = nil
        let bus = csecitem_connect(timeout.milliseconds, &timedOut, &error)
        if let error {
            throw SecItemError(
                consume(error), what: "connecting to the D-Bus session bus", timeout: timeout, timedOut: timedOut != 0,
                phase: .bus)
        }
        guard let bus else { throw SecItemError(errSecNotAvailable, "cannot connect to the D-Bus session bus") }
        return bus
    }

    /// A new encryption session on `bus` (a `CSecItemSession`: free it with
    /// ``release(session:proxy:connection:watch:)``), opened with plain D-Bus calls; with
    /// `alias`, the collection path that alias names, read in the same round trip as the
    /// session is opened (`nil` when the alias is unset, a failure when reading it failed).
    static func beginSession(_ bus: OpaquePointer, readingAlias alias: String?, _ timeout: Duration) throws(SecItemError)
        -> (session: OpaquePointer, alias: Result<String?, SecItemError>?)
    {
        var timedOut: gboolean = 0
        var error: UnsafeMutablePointer<GError>? = nil
        var aliasError: UnsafeMutablePointer<GError>? = nil
        var aliasPath: UnsafeMutablePointer<gchar>? = nil
        var session = csecitem_session_begin(bus, alias, timeout.milliseconds, &aliasPath, &aliasError, &timedOut, &error)
        // KWallet (kwalletd ≤ 5.103) refuses a DH public key of fewer than 128 bytes, and
        // libsecret sent its key without leading zero bytes: 1 session in 256 failed with
        // InvalidArgs "Client public key size is invalid". The session is now ours
        // (session.c), whose key is always 128 bytes; a new session would have a new key.
        var attempts = 1
        while session == nil, attempts < 4, let failed = error, Self.isRejectedSessionKey(failed) {
            g_error_free(failed)
            error = nil
            if let aliasPath { g_free(aliasPath) }
            if let aliasError { g_error_free(aliasError) }
            aliasPath = nil
            aliasError = nil
            attempts += 1
            session = csecitem_session_begin(bus, alias, timeout.milliseconds, &aliasPath, &aliasError, &timedOut, &error)
        }
        var aliasResult: Result<String?, SecItemError>?
        if let alias {
            let what = "reading the collection alias \"\(alias)\""
            if let aliasPath {
                let path = String(cString: aliasPath)
                g_free(aliasPath)
                aliasResult = .success(path == "/" ? nil : path)
            } else if let aliasError {
                aliasResult = .failure(
                    SecItemError(consume(aliasError), what: what, timeout: timeout, timedOut: timedOut != 0, phase: .provider))
            } else {
                aliasResult = .failure(SecItemError(errSecNotAvailable, "the Secret Service gave no answer while \(what)"))
            }
        }
        if let error {
            throw SecItemError(
                consume(error), what: "opening the Secret Service (org.freedesktop.secrets)", timeout: timeout,
                timedOut: timedOut != 0, phase: .provider)
        }
        guard let session else {
            throw SecItemError(errSecNotAvailable, "the Secret Service provider did not open a session")
        }
        return (session, aliasResult)
    }

    /// libsecret's `SecretService` proxy on this session's connection, opened on first use
    /// (what needs libsecret: its prompts) and kept for the session's life.
    func libsecretService() throws(SecItemError) -> OpaquePointer {
        if let proxy { return proxy }
        var timedOut: gboolean = 0
        var error: UnsafeMutablePointer<GError>? = nil
        let opened = csecitem_service_open(connection, nil, timeoutMilliseconds, nil, nil, &timedOut, &error)
        if let error {
            let facts = consume(error)
            throw SecItemError(
                facts, what: "opening the Secret Service (org.freedesktop.secrets)", timeout: timeout,
                timedOut: timedOut != 0, phase: .provider)
        }
        guard let opened else { throw SecItemError(errSecNotAvailable, "the Secret Service could not be opened") }
        proxy = opened
        return opened
    }

    /// Whether opening the session failed because the provider refused the client's DH key.
    private static func isRejectedSessionKey(_ error: UnsafeMutablePointer<GError>) -> Bool {
        guard let message = error.pointee.message else { return false }
        // The error's D-Bus name is part of the message only where libsecret did not strip it.
        let text = String(cString: message)
        return text.contains("Client public key size is invalid")
            || (text.hasPrefix("GDBus.Error:org.freedesktop.DBus.Error.InvalidArgs:") && text.contains("public key"))
    }

    /// `Session.Close` on the provider: the session's key is gone from then on, as
    /// when KWallet cannot decrypt with it (tests force that condition with this).
    /// Both sessions: the backend's own (reads, `SetSecret`) and, once `CreateItem` has
    /// made libsecret open one, libsecret's.
    func closeOnProvider() throws(SecItemError) {
        var paths: [String] = []
        if let own = csecitem_session_object_path(secretSession) { paths.append(String(cString: own)) }
        if let proxy, let theirs = secret_service_get_session_dbus_path(proxy) { paths.append(String(cString: theirs)) }
        for path in paths {
            let reply = try directCall("closing the session") { ms, e in
                g_dbus_connection_call_sync(
                    connection, "org.freedesktop.secrets", path, "org.freedesktop.Secret.Session", "Close", nil, nil,
                    G_DBUS_CALL_FLAGS_NONE, ms, nil, e)
            }
            if let reply { g_variant_unref(reply) }
        }
    }

    static func setProxyTimeout(_ service: OpaquePointer, _ milliseconds: Int32) {
        csecitem_service_set_timeout(service, milliseconds)
    }

    static func release(session: OpaquePointer, proxy: OpaquePointer?, connection: OpaquePointer, watch: OpaquePointer?) {
        if let watch { csecitem_watch_stop(watch) }
        csecitem_session_free(UnsafeMutableRawPointer(session))
        if let proxy { g_object_unref(UnsafeMutableRawPointer(proxy)) }
        g_object_unref(UnsafeMutableRawPointer(connection))
    }

    /// Whether a collection exists at `path`.
    static func collectionExists(_ path: String, connection: OpaquePointer, timeout: Duration) throws(SecItemError) -> Bool {
        // A direct GDBus call: its own timeout bounds it (no timer needed).
        var locked: gboolean = 0
        var error: UnsafeMutablePointer<GError>? = nil
        _ = csecitem_get_locked(connection, path, CSECITEM_COLLECTION_IFACE, timeout.milliseconds, nil, &locked, &error)
        guard let error else { return true }
        let failure = SecItemError(
            consume(error), what: "reading the collection \(path)", timeout: timeout, timedOut: false, phase: .provider)
        if failure.status == errSecInvalidItemRef { return false }
        throw failure
    }

    // MARK: The lock watch (LockStateCache.swift)

    func startLockWatch() -> OpaquePointer? {
        csecitem_watch_start(connection, collectionPath, timeoutMilliseconds)
    }

    static func lockWatchGeneration(_ watch: OpaquePointer) -> Int32 {
        csecitem_watch_generation(watch)
    }

    // MARK: Searching

    /// Collection.SearchItems: the paths of items having at least `attributes`.
    func search(_ attributes: [String: String]) throws(SecItemError) -> [String] {
        let table = Self.hashTable(attributes)
        defer { g_hash_table_unref(table) }
        let paths = try directCall("searching the collection") { ms, e in
            csecitem_search(connection, collectionPath, table, ms, nil, e)
        }
        return Self.strings(consuming: paths)
    }

    /// Collection.SearchItems and, with `checkingLock`, the collection's `Locked`
    /// in the same round trip. Throws when the search fails; a failed lock read is
    /// returned (`lockFailure`) for the caller to judge.
    func search(_ attributes: [String: String], checkingLock: Bool) throws(SecItemError)
        -> (paths: [String], locked: Bool, lockFailure: SecItemError?)
    {
        let table = Self.hashTable(attributes)
        defer { g_hash_table_unref(table) }
        var locked: gboolean = 0
        var lockError: UnsafeMutablePointer<GError>? = nil
        var searchError: UnsafeMutablePointer<GError>? = nil
        let (paths, take) = direct { ms in
            csecitem_search_checking_lock(
                connection, collectionPath, table, checkingLock ? 1 : 0, ms, nil, &locked, &lockError, &searchError)
        }
        let lockFailure = take(lockError, "reading whether the collection is locked")
        if let failure = take(searchError, "searching the collection") {
            _ = Self.strings(consuming: paths)
            throw failure
        }
        return (Self.strings(consuming: paths), locked != 0, lockFailure)
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

    // MARK: Reading items

    typealias ItemProperties = (attributes: [String: String], label: String, locked: Bool)

    /// Every item's properties (`nil`: vanished), and when `withSecrets` their
    /// secrets too (`nil` when that call failed), in one round trip: one
    /// `GetAll` per item (with `attributesOnly`, one `Get` of its attributes:
    /// the label is then empty and the lock state unknown, reported unlocked)
    /// and one `GetSecrets` for all, sent at once.
    ///
    /// Secrets the provider sent that this session cannot decrypt mark the session
    /// lost (``sessionLost``) and are missing from `secrets`.
    func read(
        _ paths: [String], withSecrets: Bool, attributesOnly: Bool = false
    ) -> (properties: [Result<ItemProperties?, SecItemError>], secrets: [String: Data]?) {
        guard !paths.isEmpty else { return ([], withSecrets ? [:] : nil) }
        if !attributesOnly { propertyReads += paths.count }
        var variants = [OpaquePointer?](repeating: nil, count: paths.count)
        var errors = [UnsafeMutablePointer<GError>?](repeating: nil, count: paths.count)
        var table: OpaquePointer? = nil
        var secretsError: UnsafeMutablePointer<GError>? = nil
        var undecodable: guint = 0
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
                                secretSession, connection, pathsBuffer.baseAddress, guint(paths.count),
                                attributesOnly ? 1 : 0, ms, nil, v.baseAddress, e.baseAddress, &table, &secretsError,
                                &undecodable)
                        } else {
                            csecitem_read_items(
                                secretSession, connection, pathsBuffer.baseAddress, guint(paths.count),
                                attributesOnly ? 1 : 0, ms, nil, v.baseAddress, e.baseAddress, nil, nil, nil)
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
            g_variant_unref(props)
            properties.append(.success(Self.properties(consuming: keys, values, label, locked)))
        }
        _ = take(secretsError, "reading secrets")
        if undecodable > 0 { _ = undecodableSecrets(undecodable) }
        guard withSecrets, let table else { return (properties, nil) }
        return (properties, Self.secretBytes(consuming: table, paths))
    }

    /// An item's attributes, label and locked state; `nil` when it vanished.
    func properties(_ path: String) throws(SecItemError) -> ItemProperties? {
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

    /// The secrets of `paths`, by path (items without a secret, or deleted since the
    /// caller found them, are absent).
    /// - Throws: `errSecIO`, marking the session lost, when the provider sent a
    ///   secret this session cannot decrypt.
    func secrets(_ paths: [String]) throws(SecItemError) -> [String: Data] {
        var paths = paths
        // KWallet fails the whole GetSecrets when one of the items is gone (another client
        // deleted it since the search): ask again without it, as gnome-keyring answers.
        while !paths.isEmpty {
            do throws(SecItemError) {
                return try secretsOnce(paths)
            } catch where error.status == errSecInvalidItemRef {
                guard let vanished = error.detail.flatMap(GErrorFacts.vanishedItem(in:)), let gone = paths.firstIndex(of: vanished)
                else { throw error }
                paths.remove(at: gone)
            }
        }
        return [:]
    }

    private func secretsOnce(_ paths: [String]) throws(SecItemError) -> [String: Data] {
        guard !paths.isEmpty else { return [:] }
        var undecodable: guint = 0
        let table = try Self.withCStringArray(paths) { (array) throws(SecItemError) -> OpaquePointer? in
            try directCall("reading secrets") { ms, e in
                csecitem_get_secrets(secretSession, connection, array, ms, nil, &undecodable, e)
            }
        }
        guard let table else { return [:] }
        let bytes = Self.secretBytes(consuming: table, paths)
        if undecodable > 0 { throw undecodableSecrets(undecodable) }
        return bytes
    }

    /// Unlocks `paths` through the provider's prompt.
    /// - Throws: `errSecUserCanceled` when the prompt is dismissed.
    func unlock(_ paths: [String]) throws(SecItemError) {
        let service = try libsecretService()
        let count = try Self.withCStringArray(paths) { (array) throws(SecItemError) -> Int32 in
            try Self.bounded("waiting for the unlock prompt", promptTimeout) { c, e in
                secret_service_unlock_dbus_paths_sync(service, array, c, nil, e)
            }
        }
        if count <= 0 {
            throw SecItemError(errSecUserCanceled, "the unlock prompt was dismissed")
        }
    }

    // MARK: Writing items

    /// Collection.CreateItem: a new item, returning its path. The secret goes in the backend's
    /// own session, as every read and `SetSecret` does; libsecret's proxy is opened only when
    /// the provider answers with a prompt (a collection locked since the add checked it).
    /// - Throws: `errSecUserCanceled` when that prompt is dismissed.
    func create(attributes: [String: String], label: String, data: Data?) throws(SecItemError) -> String {
        let table = Self.hashTable(attributes)
        defer { g_hash_table_unref(table) }
        let bytes = data ?? Data()
        var prompt: UnsafeMutablePointer<gchar>? = nil
        defer { g_free(prompt) }
        let created = try bytes.withUnsafeBytes { raw in
            Result { () throws(SecItemError) -> UnsafeMutablePointer<gchar>? in
                try directCall("creating an item") { ms, e in
                    csecitem_create_item(
                        secretSession, connection, collectionPath, label, table, raw.baseAddress, gsize(raw.count), ms, nil,
                        &prompt, e)
                }
            }
        }.get()
        var path = created
        if path == nil, let prompt {
            let service = try libsecretService()
            let completed = try Self.bounded("waiting for the prompt to create an item", promptTimeout, session: self) { c, e in
                csecitem_run_prompt(service, prompt, c, &path, e)
            }
            if completed == 0 { throw SecItemError(errSecUserCanceled, "the prompt to create the item was dismissed") }
        }
        guard let path, path.pointee != 0, String(cString: path) != "/" else {
            g_free(path)
            throw SecItemError(errSecIO, "the Secret Service created no item")
        }
        defer { g_free(path) }
        return String(cString: path)
    }

    /// Item.Delete, as a direct call; libsecret's proxy is opened only when the provider
    /// answers with a prompt. Returns `false` when the item was already gone.
    /// - Throws: `errSecUserCanceled` when that prompt is dismissed.
    func delete(_ path: String) throws(SecItemError) -> Bool {
        var prompt: UnsafeMutablePointer<gchar>? = nil
        defer { g_free(prompt) }
        do throws(SecItemError) {
            _ = try directCall("deleting an item") { ms, e in csecitem_delete_item(connection, path, ms, nil, &prompt, e) }
        } catch where error.status == errSecInvalidItemRef {
            return false
        }
        if let prompt {
            let service = try libsecretService()
            let completed = try Self.bounded("waiting for the prompt to delete an item", promptTimeout, session: self) { c, e in
                csecitem_run_prompt(service, prompt, c, nil, e)
            }
            if completed == 0 { throw SecItemError(errSecUserCanceled, "the prompt to delete the item was dismissed") }
        }
        return true
    }

    /// Changes an item's secret (when `secret` is set), attributes and label
    /// (when not `nil`) with the calls sent at once (one round trip). Throws the
    /// first failure, in that order; the others may have been applied.
    func write(_ path: String, secret: Data??, attributes: [String: String]?, label: String?) throws(SecItemError) {
        let table = attributes.map { Self.hashTable($0) }
        defer { if let table { g_hash_table_unref(table) } }
        let bytes: Data = (secret ?? nil) ?? Data()
        var errors = [UnsafeMutablePointer<GError>?](repeating: nil, count: 3)
        let (_, take) = bytes.withUnsafeBytes { raw in
            errors.withUnsafeMutableBufferPointer { e in
                direct { ms in
                    csecitem_item_write(
                        secretSession, connection, path, secret != nil ? 1 : 0, raw.baseAddress, gsize(raw.count), table,
                        label, ms, nil, e.baseAddress)
                }
            }
        }
        let failures = [
            take(errors[0], "changing an item's secret"), take(errors[1], "changing an item's attributes"),
            take(errors[2], "changing an item's label"),
        ]
        if let first = failures.compactMap({ $0 }).first { throw first }
    }

    // MARK: C values

    private static func hashTable(_ attributes: [String: String]) -> OpaquePointer {
        let table = csecitem_strhash_new()!
        for (key, value) in attributes { csecitem_strhash_insert(table, key, value) }
        return table
    }

    /// The strings of a NULL-terminated `gchar **`, which is then freed.
    private static func strings(consuming array: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?) -> [String] {
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

    private static func withCStringArray<R>(
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

    /// Takes ownership of what `csecitem_parse_properties` returned and frees it.
    private static func properties(
        consuming keys: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?,
        _ values: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?, _ label: UnsafeMutablePointer<gchar>?,
        _ locked: gboolean
    ) -> ItemProperties {
        var attributes: [String: String] = [:]
        for (key, value) in zip(strings(consuming: keys), strings(consuming: values)) { attributes[key] = value }
        let text = label.map { String(cString: $0) } ?? ""
        g_free(label)
        return (attributes, text, locked != 0)
    }

    /// The secret bytes of `paths` from a libsecret path → SecretValue table; frees the
    /// table, which unrefs (and so wipes) each SecretValue.
    private static func secretBytes(consuming table: OpaquePointer, _ paths: [String]) -> [String: Data] {
        defer { g_hash_table_unref(table) }
        var out: [String: Data] = [:]
        for path in paths {
            var length: gsize = 0
            if let bytes = csecitem_secret_bytes(table, path, &length) {
                out[path] = Data(bytes: bytes, count: Int(length))
            }
        }
        return out
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

// MARK: The Flatpak Secret portal (KeySources/PortalKeySource.swift)

/// The calls of the portal key source: RetrieveSecret and the interface's version.
package enum SecretPortal {
    /// The longest secret accepted from the portal (gnome-keyring's and KWallet's give 64 bytes).
    package static let capacity = 1024

    /// Connects to the session bus within `timeout`.
    private static func bus(_ timeout: Duration) throws(SecItemError) -> OpaquePointer {
        do throws(SecItemError) {
            return try SecretServiceSession.connectBus(timeout)
        } catch {
            throw SecItemError(error.status, "the Flatpak Secret portal is out of reach: \(error.detail ?? error.message)")
        }
    }

    /// The per-application secret, read from the pipe the portal wrote it to.
    /// - Throws: `errSecNotAvailable` when no portal (or no Secret portal) answers,
    ///   `errSecUserCanceled` when the request was cancelled, `errSecAuthFailed` when the
    ///   portal refused; the message names the portal.
    static func retrieveSecret(timeout: Duration) throws(SecItemError) -> SecretBytes {
        let connection = try bus(timeout)
        defer { g_object_unref(UnsafeMutableRawPointer(connection)) }
        var buffer = [UInt8](repeating: 0, count: capacity)
        defer { wipe(&buffer) }
        var length: gsize = 0
        var response: guint32 = 0
        var error: UnsafeMutablePointer<GError>? = nil
        let result = buffer.withUnsafeMutableBufferPointer { out in
            csecitem_portal_retrieve_secret(
                connection, timeout.milliseconds, out.baseAddress, gsize(capacity), &length, &response, &error)
        }
        return try outcome(result, buffer, Int(length), response: response, error: error, timeout: timeout)
    }

    /// What a RetrieveSecret (or a read of the pipe alone) ended with, as the secret or the error.
    static func outcome(
        _ result: csecitem_portal_result, _ buffer: [UInt8], _ length: Int, response: guint32,
        error: UnsafeMutablePointer<GError>?, timeout: Duration
    ) throws(SecItemError) -> SecretBytes {
        switch result {
        case CSECITEM_PORTAL_OK:
            guard (1...buffer.count).contains(length) else {
                throw SecItemError(errSecAuthFailed, "the Flatpak Secret portal answered but wrote no usable secret (none, or over \(capacity) bytes)")
            }
            return SecretBytes(copying: buffer[0..<length])
        case CSECITEM_PORTAL_CANCELLED:
            throw SecItemError(errSecUserCanceled, "the Flatpak Secret portal's request was cancelled (response 1)")
        case CSECITEM_PORTAL_FAILED:
            throw SecItemError(
                errSecAuthFailed, "the Flatpak Secret portal refused to give this application's secret (response \(response))")
        case CSECITEM_PORTAL_TIMED_OUT:
            throw SecItemError(
                errSecNotAvailable, "the Flatpak Secret portal gave no secret within \(timeout.components.seconds) s")
        case CSECITEM_PORTAL_BAD_SECRET:
            throw SecItemError(
                errSecAuthFailed, "the Flatpak Secret portal answered but wrote no usable secret (none, or over \(capacity) bytes)")
        default:
            throw mapped(error, what: "asking the Flatpak Secret portal (org.freedesktop.portal.Secret.RetrieveSecret)")
        }
    }

    /// The Secret interface's version when a portal offers it (reads a property, asks for no secret).
    static func version(timeout: Duration) throws(SecItemError) -> UInt32 {
        let connection = try bus(timeout)
        defer { g_object_unref(UnsafeMutableRawPointer(connection)) }
        var error: UnsafeMutablePointer<GError>? = nil
        let version = csecitem_portal_secret_version(connection, timeout.milliseconds, &error)
        if version == 0 { throw mapped(error, what: "reading the Flatpak Secret portal's version") }
        return version
    }

    /// A failed portal call as a status: no portal, or a portal without the Secret
    /// interface → errSecNotAvailable; refused → errSecAuthFailed.
    private static func mapped(_ error: UnsafeMutablePointer<GError>?, what: String) -> SecItemError {
        guard let error else { return SecItemError(errSecNotAvailable, "the Flatpak Secret portal failed while \(what)") }
        let facts = consume(error)
        let missing = [
            "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
            "org.freedesktop.DBus.Error.UnknownInterface", "org.freedesktop.DBus.Error.UnknownMethod",
            "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.UnknownProperty",
            "org.freedesktop.DBus.Error.InvalidArgs",
        ]
        if let remote = facts.remote, missing.contains(remote) {
            return SecItemError(errSecNotAvailable, "no Flatpak Secret portal answers on the session bus (\(remote)) while \(what)")
        }
        if facts.remote == "org.freedesktop.DBus.Error.AccessDenied" || facts.remote == "org.freedesktop.portal.Error.NotAllowed" {
            return SecItemError(errSecAuthFailed, "the Flatpak Secret portal refused while \(what): \(facts.message)")
        }
        return SecItemError(errSecNotAvailable, "the Flatpak Secret portal failed while \(what): \(facts.message)")
    }
}
