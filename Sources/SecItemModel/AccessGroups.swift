import Foundation
import SecItemSecurity

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

    /// Groups already cleaned (``init(_:)`` in SecItemAPI drops blanks and repeats and
    /// fills in the process's group; that needs the process configuration, which lives there).
    package init(checked groups: [String], coversEveryGroup: Bool) {
        self.groups = groups
        self.groupSet = Set(groups)
        self.coversEveryGroup = coversEveryGroup
    }

    /// Whether an item may be read or written in `group`.
    public func permits(_ group: String) -> Bool {
        coversEveryGroup || groupSet.contains(group)
    }

    /// `groups` without blank entries and repeats, in order.
    package static func cleaned(_ groups: [String]) -> [String] {
        var seen = Set<String>()
        return groups.map { $0.trimmingSpaces() }.filter { !$0.isEmpty && seen.insert($0).inserted }
    }
}
