// The Core Foundation names Apple-platform keychain code is written against.
//
// On Apple platforms these are CF classes, toll-free bridged to Foundation's. Linux has
// no Core Foundation in the public SDK, so each is the Foundation class it bridges to
// (`CFString` is `NSString`, `CFDictionary` is `NSDictionary`, `CFError` is `NSError`):
// CF, NS and Swift values convert into each other with as/as?/as! as on Apple platforms.
// Why this representation, and what it costs: docs/secitem-semantics.md §8
// ("Core Foundation on Linux").
public import Foundation

/// A status code returned by every SecItem function (`errSecSuccess` is 0).
public typealias OSStatus = Int32

/// MacTypes' "no error", 0: an `OSStatus`, as Apple's SDK declares it for Swift, so
/// `var lastResultCode: OSStatus = noErr`, `status == noErr` and `OSStatus(noErr)` compile.
public let noErr: OSStatus = 0

/// Any Core Foundation object; results come back as `CFTypeRef?` (or `AnyObject?`).
public typealias CFTypeRef = AnyObject

/// Apple's `CFString`, a class as on Apple platforms: the `kSec…` constants pass where
/// an `AnyObject` is expected, go into `[String: AnyObject]` dictionaries, and convert
/// with `kSecClass as String`. Not `Sendable`, as on Apple's SDK.
public typealias CFString = NSString

/// Apple's `CFDictionary`, toll-free bridged to `NSDictionary` there and the same class
/// here: `query as CFDictionary` compiles for `[String: Any]`, `[String: AnyObject]`,
/// `[AnyHashable: Any]` and `NSDictionary`, a `[kSecClass: kSecClassGenericPassword, …]`
/// literal is one, and `cf as NSDictionary`, `cf as? [String: Any]`, `cf as! [String: Any]`
/// convert back.
public typealias CFDictionary = NSDictionary

/// Apple's `CFData`.
public typealias CFData = NSData

/// Apple's `CFArray`.
public typealias CFArray = NSArray

/// Apple's `CFBoolean`.
public typealias CFBoolean = NSNumber

/// Apple's `CFNumber`.
public typealias CFNumber = NSNumber

/// Apple's `CFDate`.
public typealias CFDate = NSDate

/// Apple's `CFError`, toll-free bridged to `NSError` there and the same class here:
/// `Unmanaged<CFError>?` out-parameters, `takeRetainedValue() as Error` and
/// `extension CFError` compile as on Apple platforms.
public typealias CFError = NSError

/// Apple's `CFIndex`.
public typealias CFIndex = Int

/// Apple's `CFOptionFlags` (the raw type of `SecAccessControlCreateFlags`).
public typealias CFOptionFlags = UInt

/// Apple's `CFErrorDomain`.
public typealias CFErrorDomain = CFString

/// Apple's `CFAllocator`. Linux code never needs one: every function that takes one
/// ignores it, as Apple's do for `kCFAllocatorDefault`.
public final class CFAllocator: Sendable {
    private init() {}
}

/// The default allocator, `NULL` as on Apple platforms.
public let kCFAllocatorDefault: CFAllocator! = nil

/// `kCFBooleanTrue`: an object (`[String: AnyObject]` takes it), implicitly unwrapped as on Apple platforms.
public let kCFBooleanTrue: CFBoolean! = NSNumber(value: true)

/// `kCFBooleanFalse`, implicitly unwrapped as on Apple platforms.
public let kCFBooleanFalse: CFBoolean! = NSNumber(value: false)

/// The error's code (for a Security error, its `OSStatus`).
public func CFErrorGetCode(_ err: CFError!) -> CFIndex {
    err.code
}

/// The error's domain (`NSOSStatusErrorDomain` for Security errors).
public func CFErrorGetDomain(_ err: CFError!) -> CFErrorDomain! {
    NSString(string: err.domain)
}

/// The error's user info (`kCFErrorDescriptionKey` holds what was wrong).
public func CFErrorCopyUserInfo(_ err: CFError!) -> CFDictionary! {
    err.userInfo as NSDictionary
}

/// The error's description, as `CFErrorCopyDescription` gives it.
public func CFErrorCopyDescription(_ err: CFError!) -> CFString! {
    NSString(string: err.localizedDescription)
}

/// `kCFErrorDescriptionKey`, the user-info key of an error's description.
nonisolated(unsafe) public let kCFErrorDescriptionKey: CFString = "NSDescription"

/// A query as `SecItemClient`'s methods take it: Swift dictionaries of any key and value
/// type, and `NSDictionary` (`CFDictionary`). Not meant for other conformances; the client
/// reads the dictionary through it.
public protocol SecItemDictionaryConvertible {
    /// The dictionary as the core reads it: string keys (`CFString`, `String`,
    /// `String?`, `AnyHashable` holding either), values as they are.
    /// - Throws: `errSecParam` for a key that is not a string (or is `nil`), or a key given twice.
    func _secItemDictionary() throws(SecItemError) -> [String: Any]
}

extension Dictionary: SecItemDictionaryConvertible {
    public func _secItemDictionary() throws(SecItemError) -> [String: Any] {
        // The common `[String: Any]`: handed over as it is (a metadata compare, no copy).
        if Key.self == String.self && Value.self == Any.self {
            return unsafeBitCast(self, to: [String: Any].self)
        }
        var out = [String: Any](minimumCapacity: count)
        for (key, value) in self {
            // A `Value` that is `Any` would be boxed again as an `Any` inside an `Any`, which the
            // parser's by-type fast paths do not look through: pass the value itself.
            let plain: Any = Value.self == Any.self ? unsafeBitCast(value, to: Any.self) : value
            try insertSecItemEntry(key, plain, into: &out)
        }
        return out
    }
}

extension NSDictionary: SecItemDictionaryConvertible {
    public func _secItemDictionary() throws(SecItemError) -> [String: Any] {
        var out = [String: Any](minimumCapacity: count)
        for (key, value) in self {
            try insertSecItemEntry(key, value, into: &out)
        }
        return out
    }
}

private func insertSecItemEntry(_ key: Any, _ value: Any, into out: inout [String: Any]) throws(SecItemError) {
    guard let name = secItemKeyString(key) else {
        throw SecItemError(errSecParam, "a dictionary key is \(secItemKeyTypeName(key)), not a string such as kSecClass")
    }
    guard out.updateValue(value, forKey: name) == nil else {
        // `["class": …]` and `[kSecClass: …]` in one AnyHashable dictionary: one key to Apple's CFDictionary.
        throw SecItemError(errSecParam, "the key '\(name)' is given twice")
    }
}

/// A key as a string: `String`, `NSString` (`CFString`), `Optional` and `AnyHashable` looked through.
private func secItemKeyString(_ key: Any) -> String? {
    if let s = key as? String { return s }
    if let s = key as? NSString { return s as String }
    if let h = key as? AnyHashable, type(of: key) == AnyHashable.self { return secItemKeyString(h.base) }
    if let optional = key as? any OptionalValue { return optional.wrappedAny.flatMap(secItemKeyString) }
    return nil
}

private func secItemKeyTypeName(_ key: Any) -> String {
    if let optional = key as? any OptionalValue, optional.wrappedAny == nil { return "nil" }
    return String(describing: type(of: key))
}

// MARK: - CFString keys in AnyHashable

/// On Apple platforms an `NSString` (a `CFString`) is hashed and compared as the `String`
/// it holds once it is an `AnyHashable` (Foundation declares this conformance there), so
/// `AnyHashable(kSecAttrAccount) == AnyHashable("acct")` and a result read as
/// `[AnyHashable: Any]` finds `attributes[kSecAttrAccount]` and
/// `attributes[kSecAttrAccount as String]` alike. swift-corelibs-foundation does not
/// declare it; this is Apple's declaration.
extension NSString: @retroactive _HasCustomAnyHashableRepresentation {
    public func _toCustomAnyHashable() -> AnyHashable? {
        AnyHashable(self as String)
    }
}

/// Lets a dictionary's key (here) and `RawValue` (SecItemAPI) look inside an `Optional` held in an `Any` without reflection.
package protocol OptionalValue {
    var wrappedAny: Any? { get }
}

extension Optional: OptionalValue {
    package var wrappedAny: Any? {
        switch self {
        case .some(let value): return value
        case .none: return nil
        }
    }
}
