public import Foundation

/// The access groups a process is entitled to: the Linux stand-in for the
/// `keychain-access-groups` entitlement. The first is where items go by default.
///
/// With nothing configured a process is entitled to exactly one group, its
/// ``SecItemApplicationIdentifier``. Programs share items by listing the same group
/// (`SECITEM_ACCESS_GROUPS=com.example.app,com.example.shared`).
///
/// Access groups are a namespace against mistakes, not a security boundary: every
/// process of the same Linux user can open the same store.
public struct AccessGroups: Sendable, Hashable {
    /// The entitled groups, in order; never empty.
    public let groups: [String]
    /// The same groups as a set (what a search covers when it names no group).
    public let groupSet: Set<String>
    /// Whether every group is entitled: operator tools (the `secitem` command), which,
    /// like Keychain Access on a Mac, see every group present in the store. A search
    /// that names no group then covers every group; new items still go to ``defaultGroup``.
    public let coversEveryGroup: Bool

    /// The group new items go to when they name none.
    public var defaultGroup: String { groups[0] }

    /// The group earlier versions put every item in when nothing was configured.
    /// A program that lists it among its groups still reads those items.
    public static let legacyDefaultGroup = "default"

    /// Creates a list of entitled groups (blank entries and repeats dropped).
    /// An empty list means the process's application identifier
    /// (``SecItemConfiguration/applicationIdentifier`` of ``SecItemConfiguration/process``).
    public init(_ groups: [String]) {
        var seen = Set<String>()
        let cleaned = groups.map { $0.trimmingSpaces() }.filter { !$0.isEmpty && seen.insert($0).inserted }
        self.init(checked: cleaned.isEmpty ? [Self.processApplicationGroup()] : cleaned, coversEveryGroup: false)
    }

    private init(checked groups: [String], coversEveryGroup: Bool) {
        self.groups = groups
        self.groupSet = Set(groups)
        self.coversEveryGroup = coversEveryGroup
    }

    /// The single group of an application: `identifier`, as on Apple platforms when
    /// no `keychain-access-groups` entitlement is given.
    public static func application(_ identifier: String) -> AccessGroups {
        AccessGroups([identifier])
    }

    /// Every group, for operator tools; items added without a group go to `defaultGroup`.
    public static func everyGroup(defaultGroup: String) -> AccessGroups {
        everyGroup(listing: [defaultGroup])
    }

    /// Every group, for operator tools, keeping `groups` as the listed ones: the first
    /// is where items added without a group go, and a backend that shows some items
    /// only to a client naming their group (the Secret Service's foreign items) sees
    /// them when it is listed.
    public static func everyGroup(listing groups: [String]) -> AccessGroups {
        let listed = AccessGroups(groups)
        return AccessGroups(checked: listed.groups, coversEveryGroup: true)
    }

    /// Whether an item may be read or written in `group`.
    public func permits(_ group: String) -> Bool {
        coversEveryGroup || groupSet.contains(group)
    }

    /// The groups from `SECITEM_ACCESS_GROUPS` (`a,b,c`), else the single group of
    /// the application identifier `environment` gives (no config file, no code:
    /// ``SecItemConfiguration/process`` has those).
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        -> AccessGroups
    {
        SecItemConfiguration.environmentOnly(environment).accessGroups
    }

    /// The process's application identifier's group (an unusable explicit one is
    /// passed over here; opening the process keychain reports it).
    private static func processApplicationGroup() -> String {
        SecItemConfiguration.process.applicationIdentifier.value
    }
}

/// `["app", "shared"]` where access groups are expected, so code importing only
/// `SecItem` (which does not export this type's name) can still write
/// `SecItemClient(backend: store, accessGroups: ["app"])`.
extension AccessGroups: ExpressibleByArrayLiteral {
    public init(arrayLiteral groups: String...) {
        self.init(groups)
    }
}
