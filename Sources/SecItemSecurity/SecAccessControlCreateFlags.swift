// Apple's access-control flags (SecAccessControl.h); the object and
// SecAccessControlCreateWithFlags are SecItemAPI's (SecAccessControl.swift).

/// Apple's `SecAccessControlCreateFlags`, with Apple's bit values.
public struct SecAccessControlCreateFlags: OptionSet, Sendable, Hashable {
    public let rawValue: CFOptionFlags
    public init(rawValue: CFOptionFlags) { self.rawValue = rawValue }

    /// Biometry or the device passcode.
    public static let userPresence = SecAccessControlCreateFlags(rawValue: 1 << 0)
    /// Any enrolled biometry.
    public static let biometryAny = SecAccessControlCreateFlags(rawValue: 1 << 1)
    /// Deprecated spelling of ``biometryAny``.
    public static let touchIDAny = SecAccessControlCreateFlags(rawValue: 1 << 1)
    /// The biometry enrolled when the item was added.
    public static let biometryCurrentSet = SecAccessControlCreateFlags(rawValue: 1 << 3)
    /// Deprecated spelling of ``biometryCurrentSet``.
    public static let touchIDCurrentSet = SecAccessControlCreateFlags(rawValue: 1 << 3)
    /// The device passcode.
    public static let devicePasscode = SecAccessControlCreateFlags(rawValue: 1 << 4)
    /// A paired watch (macOS).
    public static let watch = SecAccessControlCreateFlags(rawValue: 1 << 5)
    /// A paired companion device (`watch`'s newer name).
    public static let companion = SecAccessControlCreateFlags(rawValue: 1 << 5)
    /// At least one of the constraints.
    public static let or = SecAccessControlCreateFlags(rawValue: 1 << 14)
    /// Every constraint.
    public static let and = SecAccessControlCreateFlags(rawValue: 1 << 15)
    /// A private key's signing use (keys).
    public static let privateKeyUsage = SecAccessControlCreateFlags(rawValue: 1 << 30)
    /// An application-supplied password.
    public static let applicationPassword = SecAccessControlCreateFlags(rawValue: 1 << 31)
}
