// The Core Foundation type names Apple-platform keychain code is written against.
//
// On Apple platforms these are toll-free bridged CF types. On Linux there is no
// Core Foundation in the public SDK, so they are aliases of the Swift types that
// the same source code already converts to and from (`kSecClass as String`,
// `query as CFDictionary`, `result as? Data`). Code written for Apple platforms
// compiles unchanged.
public import Foundation

/// A status code returned by every SecItem function (`errSecSuccess` is 0).
public typealias OSStatus = Int32

/// Any Core Foundation object; results come back as `CFTypeRef?` (or `AnyObject?`).
public typealias CFTypeRef = AnyObject

/// Apple's `CFString`; on Linux the `kSec…` constants are plain `String`s.
public typealias CFString = String

/// Apple's `CFDictionary`; on Linux a `[String: Any]`, which is what
/// `[kSecClass: …] as CFDictionary` and `query as CFDictionary` produce.
public typealias CFDictionary = [String: Any]

/// Apple's `CFData`.
public typealias CFData = Data

/// Apple's `CFArray`.
public typealias CFArray = [Any]

/// Apple's `CFBoolean`.
public typealias CFBoolean = Bool

/// Apple's `CFNumber`.
public typealias CFNumber = NSNumber

/// Apple's `CFDate`.
public typealias CFDate = Date

/// `kCFBooleanTrue`, optional as on Apple platforms (`kCFBooleanTrue!` compiles).
public let kCFBooleanTrue: CFBoolean? = true

/// `kCFBooleanFalse`, optional as on Apple platforms.
public let kCFBooleanFalse: CFBoolean? = false
