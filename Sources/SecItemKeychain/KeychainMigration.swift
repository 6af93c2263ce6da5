public import Foundation
public import SecItemCore

/// What a migration moved.
public struct MigrationReport: Sendable, Hashable {
    /// The keys written to the target, in order.
    public var migratedKeys: [String] = []
    /// Whether the source items (or the legacy file) were removed afterwards.
    public var removedFromSource = false
}

extension Keychain {
    /// Moves the items matching `query` in `source` into this keychain, under their
    /// accounts as keys — all or nothing.
    ///
    /// Every item is checked as an add would be, then all are written as one batch
    /// (on the file backend one SQLite transaction, so a crash at any instant leaves
    /// all or none), then each is read back and compared whole (attributes and
    /// data); only when all of them verify are they removed from the source (with
    /// `removeFromSource`). On any failure the items this call wrote are removed
    /// again, the source is left untouched, and the error says how far it got
    /// ("migration failed after N of M items and was rolled back: …") and which key
    /// failed. The copy is the one `secitem import`/`migrate` use. Modelled on Valet's
    /// `migrateObjects(matching:removeOnCompletion:)`.
    ///
    /// - Parameters:
    ///   - query: A SecItem query for the source items (class, service, group…);
    ///     `kSecReturn…`/`kSecMatchLimit` are set by this method.
    ///   - source: The client (store) to read from.
    ///   - removeFromSource: Delete the source items after a verified copy.
    /// - Throws: `errSecDuplicateItem` when a key already exists here (nothing is
    ///   written), `errSecDataNotAvailable` for a source item without data, the
    ///   add's own check naming the key (entitlement, size; nothing is written), or
    ///   the failing call's error.
    @discardableResult
    public func migrateItems(matching query: [String: Any], from source: SecItemClient, removeFromSource: Bool = false)
        throws -> MigrationReport
    {
        try migrateItems(
            matching: try ClientRequest.parse(query, role: .search), from: source, removeFromSource: removeFromSource)
    }

    /// ``migrateItems(matching:from:removeFromSource:)`` for a request in the core's types.
    func migrateItems(matching query: ClientRequest, from source: SecItemClient, removeFromSource: Bool)
        throws -> MigrationReport
    {
        var q = query
        q.returns.attributes = true
        q.returns.data = true
        q.returns.ref = false
        q.returns.persistentRef = false
        q.limit = .all
        let found = try absentAsNil { () throws(SecItemError) in try source.find(q) } ?? []
        var entries: [(key: String, data: Data)] = []
        for item in found {
            guard let data = item.data else {
                throw SecItemError(errSecDataNotAvailable, "a source item has no data; nothing was migrated")
            }
            entries.append((KeychainItem(item: item).key, data))
        }
        var report = try write(entries)
        if removeFromSource {
            for item in found {
                var byReference = ClientRequest()
                byReference.persistentRef = (item.itemClass, item.id)
                // Already gone (not found) is fine: the goal is reached.
                _ = try absentAsNil { () throws(SecItemError) in try source.delete(byReference) }
            }
            report.removedFromSource = true
        }
        return report
    }

    /// Moves every item of `source` into this keychain (see ``migrateItems(matching:from:removeFromSource:)``).
    @discardableResult
    public func migrate(from source: Keychain, removeFromSource: Bool = false) throws -> MigrationReport {
        try migrateItems(matching: try source.request(), from: source.client, removeFromSource: removeFromSource)
    }

    /// Writes `entries` as new items, all or nothing (see ``commit(_:)``).
    func write(_ entries: [(key: String, data: Data)]) throws -> MigrationReport {
        try Self.commit([(self, try prepare(entries))]).first ?? MigrationReport()
    }

    /// The new items `entries` become in this keychain (validated, as an add would
    /// be); nothing is written.
    /// - Throws: `errSecDuplicateItem` when two entries share a key or a key already
    ///   exists here; the add's own check (entitlement, size) naming the key.
    func prepare(_ entries: [(key: String, data: Data)]) throws -> [(key: String, item: StoredItem)] {
        var seen = Set<String>()
        for entry in entries {
            guard seen.insert(entry.key).inserted else {
                throw SecItemError(errSecDuplicateItem, "two source items have the key '\(entry.key)'; nothing was migrated")
            }
            if try contains(entry.key) {
                throw SecItemError(errSecDuplicateItem, "the key '\(entry.key)' already exists in the target; nothing was migrated")
            }
        }
        return try entries.map { entry throws(SecItemError) in
            do throws(SecItemError) {
                return (entry.key, try client.newItem(try newItem(entry.data, forKey: entry.key)))
            } catch {
                throw SecItemError(
                    error.status,
                    "the key '\(entry.key)' cannot be migrated: \(error.detail ?? error.message); nothing was migrated")
            }
        }
    }

    /// Adds the prepared items of every keychain in one ``VerifiedCopy`` — the copy
    /// → verify → roll back that `secitem import`/`migrate` use: one batch (one
    /// transaction on the file backend), each item read back and compared, and on
    /// any failure nothing stays written. All keychains share one client.
    static func commit(_ batches: [(keychain: Keychain, items: [(key: String, item: StoredItem)])]) throws
        -> [MigrationReport]
    {
        guard let client = batches.first?.keychain.client else { return [] }
        let items = batches.flatMap { $0.items.map(\.item) }
        let keys = batches.flatMap { $0.items.map(\.key) }
        var done = 0
        do throws(SecItemError) {
            try VerifiedCopy.copy(items, into: client.backend, progress: { done = $0 }, naming: { "the key '\(keys[$0])'" })
        } catch {
            throw SecItemError(
                error.status,
                "migration failed after \(done) of \(items.count) items and was rolled back: \(error.detail ?? error.message)")
        }
        return batches.map { MigrationReport(migratedKeys: $0.items.map(\.key)) }
    }

    /// Moves the secrets of a legacy plaintext file into keychains of `client` —
    /// all or nothing — and optionally deletes the file afterwards.
    ///
    /// Every service's items go in one copy, as ``migrateItems(matching:from:removeFromSource:)``
    /// does (on the file backend one transaction: a crash part-way leaves none of
    /// them). The file is removed only after that copy verified; a crash between the
    /// two leaves the secrets stored and the file in place, and running the
    /// migration again then fails with `errSecDuplicateItem`, writing nothing.
    ///
    /// The Linux counterpart of "moving tokens out of UserDefaults". Accepted formats:
    /// - JSON object of objects: `{"service": {"account": "secret", …}, …}`
    /// - JSON array: `[{"service": "…", "account": "…", "secret": "…"}, …]`
    ///   (`password` is accepted for `secret`)
    /// - INI: `[service]` sections of `account = secret` lines (`#`/`;` comments)
    ///
    /// - Returns: One report per service, keyed by service.
    /// - Throws: `errSecDecode` for a file that is not one of the formats (nothing
    ///   written), `errSecIO` when it cannot be read, or a write error (everything
    ///   written by this call removed again; the file is untouched).
    @discardableResult
    public static func migrateLegacyFile(
        at url: URL, into client: SecItemClient, accessGroup: String? = nil, removeFile: Bool = false
    ) throws -> [String: MigrationReport] {
        let contents: Data
        do {
            contents = try Data(contentsOf: url)
        } catch {
            throw SecItemError(errSecIO, "cannot read the legacy file \(url.path)")
        }
        let entries = try LegacyFile.parse(contents)
        var byService: [String: [(key: String, data: Data)]] = [:]
        var order: [String] = []
        for entry in entries {
            if byService[entry.service] == nil { order.append(entry.service) }
            byService[entry.service, default: []].append((entry.account, Data(entry.secret.utf8)))
        }
        var batches: [(keychain: Keychain, items: [(key: String, item: StoredItem)])] = []
        for service in order {
            let keychain = try Keychain(service: service, client: client, accessGroup: accessGroup)
            batches.append((keychain, try keychain.prepare(byService[service] ?? [])))
        }
        var reports: [String: MigrationReport] = [:]
        for (service, report) in zip(order, try Keychain.commit(batches)) { reports[service] = report }
        if removeFile {
            do {
                try FileManager.default.removeItem(at: url)
            } catch {
                throw SecItemError(errSecIO, "the secrets were migrated but the legacy file could not be removed")
            }
            for key in reports.keys { reports[key]?.removedFromSource = true }
        }
        return reports
    }
}
