import SecItemCore
import Foundation
import Synchronization

/// One read per call (issue 24): each keychain call reaches the backend once,
/// and a search returning `kSecReturnData` alone, which a backend may answer
/// without reading most attributes (``ItemProjection/dataAndAccess``), still
/// brings the attributes the access check needs, so the core never reads the
/// item a second time for them.
enum ReadCountCases {
    static let all: [ConformanceCase] = [
        ConformanceCase("one read per call: every search shape, update and delete reach the backend once") { c in
            let counting = CountingBackend(c.backend)
            let client = SecItemClient(
                backend: counting, accessGroups: AccessGroups(ConformanceSuite.entitledGroups),
                accessAuthority: KitAuthority(lock: .unlocked, presence: .authorized))
            let presence = try AccessControlCases.accessControl(kSecAttrAccessibleAfterFirstUnlock, [.userPresence], c)
            try c.addGenp("reads", "plain", data: Data("plain".utf8))
            try c.addGenp("reads", "after-first-unlock", data: Data("afu".utf8),
                          [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock])
            try c.addGenp("reads", "presence", data: Data("presence".utf8), [kSecAttrAccessControl as String: presence])
            // Naming the group pins the whole primary key (ItemQuery.exactPrimaryKey):
            // the backends' fast paths for data alone answer these.
            let data: [String: Any] = [kSecReturnData as String: true, kSecAttrAccessGroup as String: ConformanceSuite.entitledGroups[0]]
            let shapes: [(String, [String: Any], OSStatus)] = [
                ("data alone by the whole primary key", c.genp("reads", "plain", data), errSecSuccess),
                ("data alone in every entitled group", c.genp("reads", "plain", [kSecReturnData as String: true]), errSecSuccess),
                ("data alone, AfterFirstUnlock", c.genp("reads", "after-first-unlock", data), errSecSuccess),
                ("data alone, user presence", c.genp("reads", "presence", data), errSecSuccess),
                ("data alone, a miss", c.genp("reads", "absent", data), errSecItemNotFound),
                ("data alone by service", [kSecClass as String: kSecClassGenericPassword,
                                           kSecAttrService as String: "reads", kSecReturnData as String: true], errSecSuccess),
                ("data alone, every match", [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "reads",
                                             kSecReturnData as String: true, kSecMatchLimit as String: kSecMatchLimitAll],
                 errSecSuccess),
                ("data alone, kSecUseAuthenticationUISkip",
                 c.genp("reads", "presence", data.merging([kSecUseAuthenticationUI as String: kSecUseAuthenticationUISkip]) { $1 }),
                 errSecItemNotFound),
                ("data and attributes", c.genp("reads", "plain", data.merging([kSecReturnAttributes as String: true]) { $1 }),
                 errSecSuccess),
                ("attributes alone", c.genp("reads", "presence", [kSecReturnAttributes as String: true]), errSecSuccess),
                ("a persistent reference", c.genp("reads", "plain", [kSecReturnPersistentRef as String: true]), errSecSuccess),
                ("no return keys", c.genp("reads", "plain"), errSecSuccess),
            ]
            for (what, query, expected) in shapes {
                _ = counting.take()
                var result: AnyObject?
                try c.expectStatus(client.copyMatching(query, &result), expected, what)
                let counts = counting.take()
                try c.expect(
                    counts == CountingBackend.Counts(fetches: 1),
                    "\(what): SecItemCopyMatching read the backend \(counts.fetches) time(s) (and made \(counts.writes) write call(s)); one read per call")
            }
            _ = counting.take()
            try c.expectStatus(
                client.update(c.genp("reads", "plain"), [kSecValueData as String: Data("new".utf8)]),
                errSecSuccess, "update of the data")
            var counts = counting.take()
            try c.expect(counts == CountingBackend.Counts(updates: 1),
                         "SecItemUpdate of the data: \(counts.fetches) read(s), \(counts.writes) write call(s); one update call")
            try c.expectStatus(client.delete(c.genp("reads", "plain")), errSecSuccess, "delete")
            counts = counting.take()
            try c.expect(counts == CountingBackend.Counts(deletes: 1),
                         "SecItemDelete: \(counts.fetches) read(s), \(counts.writes) write call(s); one delete call")
        },
        ConformanceCase("data alone brings the access check's pdmn and accc: the gate decides as with every attribute") { c in
            let presenceAFU = try AccessControlCases.accessControl(kSecAttrAccessibleAfterFirstUnlock, [.userPresence], c)
            let presenceAlways = try AccessControlCases.accessControl(kSecAttrAccessibleAlwaysThisDeviceOnly, [.devicePasscode], c)
            try c.addGenp("gate", "when-unlocked", data: Data("wu".utf8))
            try c.addGenp("gate", "after-first-unlock", data: Data("afu".utf8),
                          [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock])
            try c.addGenp("gate", "presence-afu", data: Data("pafu".utf8), [kSecAttrAccessControl as String: presenceAFU])
            try c.addGenp("gate", "presence-always", data: Data("pal".utf8), [kSecAttrAccessControl as String: presenceAlways])
            // What each authority must answer for each item, asked for its data alone
            // (the fast paths) and for data with attributes (the whole item): the same.
            let cases: [(KitAuthority, [(String, OSStatus)])] = [
                (KitAuthority(lock: .locked, presence: .authorized), [
                    ("when-unlocked", errSecInteractionNotAllowed), ("after-first-unlock", errSecSuccess),
                    ("presence-afu", errSecSuccess), ("presence-always", errSecSuccess),
                ]),
                (KitAuthority(lock: .unlocked, presence: .denied), [
                    ("when-unlocked", errSecSuccess), ("after-first-unlock", errSecSuccess),
                    ("presence-afu", errSecAuthFailed), ("presence-always", errSecAuthFailed),
                ]),
                (KitAuthority(lock: .locked, presence: .dismissed), [
                    ("presence-afu", errSecUserCanceled), ("presence-always", errSecUserCanceled),
                ]),
            ]
            for (authority, expectations) in cases {
                let client = SecItemClient(
                    backend: c.backend, accessGroups: AccessGroups(ConformanceSuite.entitledGroups), accessAuthority: authority)
                for (account, expected) in expectations {
                    for withAttributes in [false, true] {
                        var q = c.genp("gate", account, [
                            kSecReturnData as String: true, kSecAttrAccessGroup as String: ConformanceSuite.entitledGroups[0],
                        ])
                        if withAttributes { q[kSecReturnAttributes as String] = true }
                        var result: AnyObject?
                        let status = client.copyMatching(q, &result)
                        try c.expectStatus(
                            status, expected,
                            "\(account), session \(authority.lock), presence \(authority.presence), data\(withAttributes ? " and attributes" : " alone")")
                        if status == errSecSuccess {
                            let data = withAttributes ? (result as? [String: Any])?[kSecValueData as String] as? Data : result as? Data
                            try c.expect(data != nil, "\(account): the data comes back")
                        }
                    }
                }
            }
        },
    ]
}

/// An authority that answers as told: the session's lock state and the user's answer.
struct KitAuthority: AccessAuthority {
    let lock: SessionLockState
    let presence: PresenceOutcome

    func sessionLockState() -> SessionLockState { lock }

    func authorizeUserPresence(prompt: String?) -> PresenceOutcome { presence }
}

/// A backend that forwards every call to another and counts them: how often one
/// keychain call reaches the store.
final class CountingBackend: SecItemBackend {
    /// Calls made since the last ``take()``.
    struct Counts: Sendable, Equatable {
        var fetches = 0
        var adds = 0
        var updates = 0
        var deletes = 0

        var writes: Int { adds + updates + deletes }
    }

    private let inner: any SecItemBackend
    private let counts = Mutex(Counts())

    init(_ inner: any SecItemBackend) { self.inner = inner }

    var kind: BackendKind { inner.kind }

    /// The calls counted so far; the count starts again from zero.
    func take() -> Counts {
        counts.withLock { counts in
            defer { counts = Counts() }
            return counts
        }
    }

    func add(_ item: StoredItem) throws(SecItemError) {
        counts.withLock { $0.adds += 1 }
        try inner.add(item)
    }

    func fetch(matching query: ItemQuery, limit: Int?) throws(SecItemError) -> [StoredItem] {
        counts.withLock { $0.fetches += 1 }
        return try inner.fetch(matching: query, limit: limit)
    }

    func update(matching query: ItemQuery, _ transform: (StoredItem) -> StoredItem) throws(SecItemError) -> Int {
        counts.withLock { $0.updates += 1 }
        return try inner.update(matching: query, transform)
    }

    func delete(matching query: ItemQuery) throws(SecItemError) -> Int {
        counts.withLock { $0.deletes += 1 }
        return try inner.delete(matching: query)
    }
}
