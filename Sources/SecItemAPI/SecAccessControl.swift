import SecItemModel
// Apple's access-control API (SecAccessControl.h): the object, its flags with Apple's bit
// values, and SecAccessControlCreateWithFlags with the same validation.
//
// An item added with `kSecAttrAccessControl` stores the object's protection class as its
// accessibility (`pdmn`) and its flags as `accc` (a number); `kSecReturnAttributes` gives
// the object back. What the flags require at read time is issue 16's; here they are
// stored, matched and returned (docs/secitem-semantics.md §8, "Access control").
public import Foundation
public import SecItemSecurity

/// Apple's `SecAccessControl`: a protection class (a `kSecAttrAccessible…` value) and
/// the ``SecAccessControlCreateFlags`` an item's use requires.
///
/// Made by ``SecAccessControlCreateWithFlags(_:_:_:_:)``; given to `SecItemAdd` and
/// `SecItemUpdate` as `kSecAttrAccessControl`; returned in `kSecReturnAttributes`
/// results. Two objects are equal when their protection and flags are.
public final class SecAccessControl: Hashable, Sendable, CustomStringConvertible {
    /// The protection class as stored (`pdmn`): `ak`, `ck`, `dk`, `aku`, `cku`, `dku` or `akpu`.
    public let accessibility: String
    /// The flags the object was created with, as given.
    public let flags: SecAccessControlCreateFlags

    init(accessibility: String, flags: SecAccessControlCreateFlags) {
        self.accessibility = accessibility
        self.flags = flags
    }

    /// The protection class as the `kSecAttrAccessible…` constant's value.
    public var protection: CFString { NSString(string: accessibility) }

    public static func == (lhs: SecAccessControl, rhs: SecAccessControl) -> Bool {
        lhs.accessibility == rhs.accessibility && lhs.flags == rhs.flags
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(accessibility)
        hasher.combine(flags.rawValue)
    }

    public var description: String {
        "<SecAccessControl: protection \(accessibility), flags 0x\(String(flags.rawValue, radix: 16))>"
    }

    /// The protection classes `SecAccessControlCreateWithFlags` accepts (Apple's list in
    /// SecAccessControlSetProtection: the seven public `kSecAttrAccessible…` values).
    static var protections: Set<String> { Schema.accessibilityValues }

    /// Apple's checks in SecAccessControlCreateWithFlags, in Apple's order; the message
    /// for the first that fails, or `nil`.
    static func problem(protection: String?, shown: String, flags: SecAccessControlCreateFlags) -> String? {
        guard let protection, protections.contains(protection) else {
            return "SecAccessControl: invalid protection: \(shown)"
        }
        if flags.contains(.or) && flags.contains(.and) {
            return "only one logical operation can be set"
        }
        if flags.contains(.biometryAny) && flags.contains(.biometryCurrentSet) {
            return "only one bio constraint can be set"
        }
        if flags.contains(.userPresence)
            && !flags.subtracting([.userPresence, .applicationPassword, .privateKeyUsage]).isEmpty
        {
            return "kSecAccessControlUserPresence can be combined only with kSecAccessControlApplicationPassword and kSecAccessControlPrivateKeyUsage"
        }
        return nil
    }
}

/// Creates an access-control object, or returns `nil` and sets `error` for the
/// combinations Apple rejects (errSecParam in `NSOSStatusErrorDomain`):
/// a protection that is not a `kSecAttrAccessible…` value; `.or` with `.and`;
/// `.biometryAny` with `.biometryCurrentSet`; `.userPresence` with anything but
/// `.applicationPassword` and `.privateKeyUsage`.
///
/// ```swift
/// var error: Unmanaged<CFError>?
/// guard let access = SecAccessControlCreateWithFlags(
///     kCFAllocatorDefault, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, .userPresence, &error)
/// else { throw error!.takeRetainedValue() as Error }
/// ```
/// - Parameters:
///   - allocator: Ignored (`kCFAllocatorDefault` or `nil`).
///   - protection: A `kSecAttrAccessible…` constant.
///   - flags: What using the item requires (stored and returned; enforced by the store
///     where it can, see the contract).
///   - error: Receives a retained error when the result is `nil`; may be `nil`.
public func SecAccessControlCreateWithFlags(
    _ allocator: CFAllocator?, _ protection: CFTypeRef, _ flags: SecAccessControlCreateFlags,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecAccessControl? {
    let name = protection as? String
    if let problem = SecAccessControl.problem(
        protection: name, shown: name ?? String(describing: type(of: protection)), flags: flags)
    {
        error?.pointee = Unmanaged.passRetained(
            NSError(
                domain: NSOSStatusErrorDomain, code: Int(errSecParam),
                userInfo: [NSLocalizedDescriptionKey: problem]))
        return nil
    }
    return SecAccessControl(accessibility: name!, flags: flags)
}

/// Apple's `SecRandomRef`; only ``kSecRandomDefault`` exists.
public typealias SecRandomRef = OpaquePointer

/// The default random number generator (`NULL`, as on Apple platforms).
nonisolated(unsafe) public let kSecRandomDefault: SecRandomRef? = nil  // always nil: nothing to share

/// Fills `bytes` with `count` cryptographically secure random bytes from the system
/// generator (getrandom(2)), as Apple's does.
/// - Returns: `errSecSuccess`, or `errSecParam` for a negative count.
@discardableResult
public func SecRandomCopyBytes(_ rnd: SecRandomRef?, _ count: Int, _ bytes: UnsafeMutableRawPointer) -> Int32 {
    guard count >= 0 else { return errSecParam }
    var generator = SystemRandomNumberGenerator()
    var offset = 0
    while offset < count {
        var word = generator.next() as UInt64
        let n = min(8, count - offset)
        withUnsafeBytes(of: &word) { (bytes + offset).copyMemory(from: $0.baseAddress!, byteCount: n) }
        offset += n
    }
    return errSecSuccess
}
