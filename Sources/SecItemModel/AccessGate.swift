import Foundation
public import SecItemSecurity

// MARK: - The authority the core asks

/// Whether the caller's login session is locked, as far as the platform says.
public enum SessionLockState: Sendable, Hashable {
    /// The session is unlocked, or there is no session that could be locked.
    case unlocked
    /// The session is locked (logind's `LockedHint`): `WhenUnlocked` items are not readable.
    case locked
}

/// What came of asking the user to prove presence before an item's data is released.
public enum PresenceOutcome: Sendable, Hashable {
    /// The user authenticated: the data is released.
    case authorized
    /// The user dismissed the authentication dialog (`errSecUserCanceled`).
    case dismissed
    /// Authentication failed or policy refuses (`errSecAuthFailed`).
    case denied
    /// Nobody could be asked: no authentication agent, no polkit, no system bus
    /// (`errSecInteractionNotAllowed`). The reason says which, without secrets.
    case unavailable(reason: String)
}

/// What the core asks before it releases an item's data: the lock state of the
/// caller's session, and the user's proof of presence.
///
/// The core decides which items need what (``AccessRequirement``) and what each
/// answer means (``AccessGate``); an authority only answers. It never sees an
/// item's data. ``SecItemClient`` holds one; the `SecItem` module gives the
/// global functions one that asks logind and polkit on the system bus
/// (`SecItemPolkit`), and ``HeadlessAccessAuthority`` is the answer of a machine
/// with neither.
///
/// Rules a conforming type keeps:
/// - ``sessionLockState()`` is called on every read of a `WhenUnlocked` item's
///   data, so it must be cheap (a cached value kept current by change signals,
///   not a round trip per call), and must not block.
/// - ``authorizeUserPresence(prompt:)`` may block for as long as the user takes;
///   it is called at most once per keychain call, never with a lock held.
/// - Both are safe to call from any thread.
public protocol AccessAuthority: Sendable {
    /// The caller's session lock state now.
    func sessionLockState() -> SessionLockState

    /// Asks the user to prove presence (password, fingerprint) to read protected items.
    /// - Parameter prompt: `kSecUseOperationPrompt`, shown by the authentication
    ///   dialog where the platform lets the caller set it; `nil` for the default message.
    func authorizeUserPresence(prompt: String?) -> PresenceOutcome
}

/// The authority of a machine without a session manager or a policy authority:
/// the session counts as unlocked (there is nothing to lock), and nobody can be
/// asked for presence, so user-presence items cannot be read.
///
/// The default of a ``SecItemClient`` built in code; headless servers and
/// containers behave like this whatever authority they have.
public struct HeadlessAccessAuthority: AccessAuthority {
    /// Creates the authority.
    public init() {}

    public func sessionLockState() -> SessionLockState { .unlocked }

    public func authorizeUserPresence(prompt: String?) -> PresenceOutcome {
        .unavailable(reason: "this keychain client has no authority that can ask the user (no polkit configured)")
    }
}

// MARK: - An authentication that covers several reads

/// What `kSecUseAuthenticationContext` carries: module LocalAuthentication's `LAContext`.
///
/// The gate asks it before the authority: a context whose earlier authentication still
/// covers a read releases protected items without asking again (one authentication for
/// several reads), and a context that forbids interaction makes a read that would have to
/// ask fail with `errSecInteractionNotAllowed`. A successful authentication the gate
/// obtains is recorded in the context, so the next read with it is covered too.
public protocol AuthenticationContext: AnyObject, Sendable {
    /// `LAContext.interactionNotAllowed`.
    var forbidsInteraction: Bool { get }
    /// `LAContext.localizedReason`, the prompt when the query sets no `kSecUseOperationPrompt`; `nil` when empty.
    var promptReason: String? { get }
    /// Whether an earlier authentication on this context covers a read now.
    func coversRead() -> Bool
    /// Records that the user just authenticated on this context.
    func recordAuthentication()
}

// MARK: - What an item needs

/// The access-control flags an item stores (`accc`): Apple's `SecAccessControlCreateFlags`
/// (SecAccessControl.swift), under the name the access check uses.
public typealias AccessControlFlags = SecAccessControlCreateFlags

extension SecAccessControlCreateFlags {
    /// The flags that on Apple platforms make reading the item's data ask the
    /// user; here each is one polkit authorization (there is one mechanism, so
    /// `.or` and `.and` of them ask once).
    public static let asksUser: SecAccessControlCreateFlags = [
        .userPresence, .biometryAny, .biometryCurrentSet, .devicePasscode, .watch, .applicationPassword,
    ]
}

/// What reading an item's data needs, from its stored `pdmn` and `accc`.
public struct AccessRequirement: Sendable, Hashable {
    /// The session must be unlocked: `kSecAttrAccessibleWhenUnlocked`,
    /// `…WhenUnlockedThisDeviceOnly`, `…WhenPasscodeSetThisDeviceOnly`.
    public var unlockedSession: Bool
    /// The user must prove presence: the access control has a flag of `AccessControlFlags.asksUser`.
    public var userPresence: Bool

    /// The accessibility classes bound to the session lock.
    public static let whenUnlockedClasses: Set<String> = [
        SecConstant.kSecAttrAccessibleWhenUnlocked, SecConstant.kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
        SecConstant.kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly,
    ]

    /// The requirement of a stored item. An item without `pdmn` (written by
    /// another program) counts as `WhenUnlocked`, the default of `SecItemAdd`.
    public init(_ item: StoredItem) {
        var accessible: AttributeValue?, accessControl: AttributeValue?
        if item.attributes.count <= 4 {
            // A data-alone search's item holds its protection alone: comparing a few
            // short keys costs less than hashing two.
            for (key, value) in item.attributes {
                if key == SecConstant.kSecAttrAccessible {
                    accessible = value
                } else if key == SecConstant.kSecAttrAccessControl {
                    accessControl = value
                }
            }
        } else {
            accessible = item.attributes[SecConstant.kSecAttrAccessible]
            accessControl = item.attributes[SecConstant.kSecAttrAccessControl]
        }
        let protection: String
        if case .string(let value)? = accessible {
            protection = value
        } else {
            protection = SecConstant.kSecAttrAccessibleWhenUnlocked
        }
        let flags = Self.flags(accessControl)
        // Three comparisons of short strings: cheaper than hashing one for the set.
        switch protection {
        case SecConstant.kSecAttrAccessibleWhenUnlocked, SecConstant.kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
            SecConstant.kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly:
            unlockedSession = true
        default:
            unlockedSession = false
        }
        userPresence = !flags.intersection(.asksUser).isEmpty
    }

    /// The access-control flags an `accc` value holds: the flags as a number, or
    /// a `SecAccessControl`'s stored form `"<pdmn>;<flags>"`.
    public static func flags(_ value: AttributeValue?) -> AccessControlFlags {
        switch value {
        case .number(let n)?:
            return AccessControlFlags(rawValue: UInt(truncatingIfNeeded: n))
        case .string(let s)?:
            return flags(text: Substring(s))
        case .data(let d)?:
            return flags(text: Substring(String(decoding: d, as: UTF8.self)))
        default:
            return []
        }
    }

    private static func flags(text: Substring) -> AccessControlFlags {
        let number = text.split(separator: ";").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard let raw = UInt(number) else { return [] }
        return AccessControlFlags(rawValue: raw)
    }
}

// MARK: - The check every data-returning path goes through

/// `kSecUseAuthenticationUI`: what a search does with items that would ask the user.
public enum AuthenticationUI: Sendable, Hashable {
    /// `kSecUseAuthenticationUIAllow` (the default): ask.
    case allow
    /// `kSecUseAuthenticationUIFail`: fail with `errSecInteractionNotAllowed` without asking.
    case fail
    /// `kSecUseAuthenticationUISkip`: leave such items out of the results, silently.
    case skip
}

/// The one place where an item's data is released or withheld. Every path that
/// returns secrets goes through ``release(_:authenticationUI:prompt:authority:context:)``:
/// `SecItemCopyMatching` with `kSecReturnData` (any match limit, by attributes
/// or by persistent reference), the typed layer and the CLI (which call it),
/// and export (which calls it directly).
public enum AccessGate {
    /// Checks `items` before their data is returned.
    ///
    /// 1. An item bound to the session lock, while the session is locked →
    ///    `errSecInteractionNotAllowed` (no dialog can help; as Apple's locked device).
    /// 2. Items needing presence: with ``AuthenticationUI/skip`` they are left out;
    ///    with ``AuthenticationUI/fail`` → `errSecInteractionNotAllowed`; otherwise
    ///    the authority is asked once for all of them: authorized → released;
    ///    dismissed → `errSecUserCanceled`; denied → `errSecAuthFailed`;
    ///    nobody to ask → `errSecInteractionNotAllowed` with the reason.
    /// 3. With an authentication `context` (`kSecUseAuthenticationContext`): a context whose
    ///    earlier authentication still covers the read releases without asking; one that
    ///    forbids interaction (`interactionNotAllowed`) fails as ``AuthenticationUI/fail``;
    ///    an authorization obtained here is recorded in it.
    ///
    /// - Returns: The items whose data may be returned, in order (fewer only with `.skip`).
    /// - Throws: ``SecItemError`` as above; nothing is returned then.
    public static func release(
        _ items: [StoredItem], authenticationUI: AuthenticationUI, prompt: String?, authority: any AccessAuthority,
        context: (any AuthenticationContext)? = nil
    ) throws(SecItemError) -> [StoredItem] {
        var released = items
        if authenticationUI == .skip {
            released.removeAll { AccessRequirement($0).userPresence }
        }
        var needsPresence = false
        var needsUnlock = false
        for item in released {
            let requirement = AccessRequirement(item)
            needsUnlock = needsUnlock || requirement.unlockedSession
            needsPresence = needsPresence || requirement.userPresence
        }
        if needsUnlock, authority.sessionLockState() == .locked {
            throw SecItemError(
                errSecInteractionNotAllowed,
                "the session is locked (logind LockedHint) and an item found is kSecAttrAccessibleWhenUnlocked; unlock the session, or store it AfterFirstUnlock"
            )
        }
        guard needsPresence else { return released }
        if let context, context.coversRead() { return released }
        if authenticationUI == .fail {
            throw SecItemError(
                errSecInteractionNotAllowed,
                "an item found requires user presence and kSecUseAuthenticationUI is kSecUseAuthenticationUIFail")
        }
        if let context, context.forbidsInteraction {
            throw SecItemError(
                errSecInteractionNotAllowed,
                "an item found requires user presence and the LAContext of kSecUseAuthenticationContext has interactionNotAllowed set")
        }
        switch authority.authorizeUserPresence(prompt: prompt ?? context?.promptReason) {
        case .authorized:
            context?.recordAuthentication()
            return released
        case .dismissed:
            throw SecItemError(errSecUserCanceled, "the user dismissed the authentication dialog")
        case .denied:
            throw SecItemError(errSecAuthFailed, "polkit did not authorize reading the protected item")
        case .unavailable(let reason):
            throw SecItemError(errSecInteractionNotAllowed, "the item requires user presence, but \(reason)")
        }
    }
}
