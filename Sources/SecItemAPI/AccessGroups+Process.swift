public import SecItemModel
public import Foundation

// The parts of `AccessGroups` (SecItemModel) that read the process configuration: the
// default group of an empty list is the process's application identifier.
extension AccessGroups {
    /// Creates a list of entitled groups (blank entries and repeats dropped).
    /// An empty list means the process's application identifier
    /// (``SecItemConfiguration/applicationIdentifier`` of ``SecItemConfiguration/process``).
    public init(_ groups: [String]) {
        let cleaned = Self.cleaned(groups)
        self.init(checked: cleaned.isEmpty ? [Self.processApplicationGroup()] : cleaned, coversEveryGroup: false)
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
