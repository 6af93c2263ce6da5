public import Foundation

/// An error from a keychain operation: its `OSStatus`, Apple's message for it,
/// and, where there is one, the detail that says what went wrong.
///
/// Match failures by name:
///
/// ```swift
/// do {
///     try client.add(query)
/// } catch SecItemError.duplicateItem {
///     // already there
/// }
/// ```
///
/// The ``detail`` never holds a secret value: it names keys, files and causes,
/// never data, passphrases or key material.
public struct SecItemError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The status code, as the Apple-style functions return it.
    public var status: OSStatus
    /// What went wrong, in words (which key, which file, which component); no secrets.
    public var detail: String?

    /// Creates an error with a status and an optional detail.
    public init(_ status: OSStatus, _ detail: String? = nil) {
        self.status = status
        self.detail = detail
    }

    /// Apple's message for ``status`` (`SecCopyErrorMessageString`).
    public var message: String {
        statusMessage(status)
    }

    /// Apple's message, the status and the detail; never a secret.
    public var description: String {
        if let detail, !detail.isEmpty {
            return "\(message) (\(status)): \(detail)"
        }
        return "\(message) (\(status))"
    }

    /// Equality is by status only, so `catch SecItemError.itemNotFound` matches
    /// whatever detail the error carries.
    public static func == (lhs: SecItemError, rhs: SecItemError) -> Bool {
        lhs.status == rhs.status
    }

    /// Pattern matching by status (`catch SecItemError.duplicateItem`) on any error.
    public static func ~= <E: Error>(pattern: SecItemError, value: E) -> Bool {
        (value as? SecItemError)?.status == pattern.status
    }

    /// Pattern matching by status where the error is already typed (`throws(SecItemError)`).
    public static func ~= (pattern: SecItemError, value: SecItemError) -> Bool {
        value.status == pattern.status
    }

    /// `errSecUnimplemented`, for matching: `catch SecItemError.unimplemented`.
    public static let unimplemented = SecItemError(errSecUnimplemented)
    /// `errSecIO`, for matching: `catch SecItemError.io`.
    public static let io = SecItemError(errSecIO)
    /// `errSecParam`, for matching: `catch SecItemError.param`.
    public static let param = SecItemError(errSecParam)
    /// `errSecAllocate`, for matching: `catch SecItemError.allocate`.
    public static let allocate = SecItemError(errSecAllocate)
    /// `errSecUserCanceled`, for matching: `catch SecItemError.userCanceled`.
    public static let userCanceled = SecItemError(errSecUserCanceled)
    /// `errSecBadReq`, for matching: `catch SecItemError.badReq`.
    public static let badReq = SecItemError(errSecBadReq)
    /// `errSecMissingEntitlement`, for matching: `catch SecItemError.missingEntitlement`.
    public static let missingEntitlement = SecItemError(errSecMissingEntitlement)
    /// `errSecNotAvailable`, for matching: `catch SecItemError.notAvailable`.
    public static let notAvailable = SecItemError(errSecNotAvailable)
    /// `errSecReadOnly`, for matching: `catch SecItemError.readOnly`.
    public static let readOnly = SecItemError(errSecReadOnly)
    /// `errSecAuthFailed`, for matching: `catch SecItemError.authFailed`.
    public static let authFailed = SecItemError(errSecAuthFailed)
    /// `errSecNoSuchKeychain`, for matching: `catch SecItemError.noSuchKeychain`.
    public static let noSuchKeychain = SecItemError(errSecNoSuchKeychain)
    /// `errSecInvalidKeychain`, for matching: `catch SecItemError.invalidKeychain`.
    public static let invalidKeychain = SecItemError(errSecInvalidKeychain)
    /// `errSecDuplicateItem`, for matching: `catch SecItemError.duplicateItem`.
    public static let duplicateItem = SecItemError(errSecDuplicateItem)
    /// `errSecItemNotFound`, for matching: `catch SecItemError.itemNotFound`.
    public static let itemNotFound = SecItemError(errSecItemNotFound)
    /// `errSecNoSuchAttr`, for matching: `catch SecItemError.noSuchAttr`.
    public static let noSuchAttr = SecItemError(errSecNoSuchAttr)
    /// `errSecInvalidItemRef`, for matching: `catch SecItemError.invalidItemRef`.
    public static let invalidItemRef = SecItemError(errSecInvalidItemRef)
    /// `errSecNoSuchClass`, for matching: `catch SecItemError.noSuchClass`.
    public static let noSuchClass = SecItemError(errSecNoSuchClass)
    /// `errSecInteractionNotAllowed`, for matching: `catch SecItemError.interactionNotAllowed`.
    public static let interactionNotAllowed = SecItemError(errSecInteractionNotAllowed)
    /// `errSecReadOnlyAttr`, for matching: `catch SecItemError.readOnlyAttr`.
    public static let readOnlyAttr = SecItemError(errSecReadOnlyAttr)
    /// `errSecInteractionRequired`, for matching: `catch SecItemError.interactionRequired`.
    public static let interactionRequired = SecItemError(errSecInteractionRequired)
    /// `errSecDataNotAvailable`, for matching: `catch SecItemError.dataNotAvailable`.
    public static let dataNotAvailable = SecItemError(errSecDataNotAvailable)
    /// `errSecDecode`, for matching: `catch SecItemError.decode`.
    public static let decode = SecItemError(errSecDecode)
}

/// `error.localizedDescription` is Apple's message with the detail (``SecItemError/description``),
/// not Foundation's "The operation could not be completed".
extension SecItemError: LocalizedError {
    public var errorDescription: String? { description }
}

/// As an `NSError` (or a `CFError`), a `SecItemError` is what Security's errors are on Apple
/// platforms: domain `NSOSStatusErrorDomain`, code the status, and the description with
/// the detail under `NSLocalizedDescriptionKey`.
extension SecItemError: CustomNSError {
    public static var errorDomain: String { NSOSStatusErrorDomain }
    public var errorCode: Int { Int(status) }
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: description] }
}

/// The detailed error of the last failed SecItem call on this thread, for code that uses
/// the C-style functions (which return only an `OSStatus`).
///
/// The functions `SecItemAdd`, `SecItemCopyMatching`, `SecItemUpdate` and `SecItemDelete`
/// (and `SecItemClient`'s methods of the same shape) keep their error per thread, as
/// `errno` is kept; a successful call clears it. Ask right after the call, on the same
/// thread (no `await` in between):
///
/// ```swift
/// let status = SecItemAdd(query as CFDictionary, nil)
/// if status != errSecSuccess, let error = SecItemCopyLastError(status) {
///     print(error.localizedDescription)  // "One or more parameters … (-50): kSecAttrLabel holds 20000 bytes; …"
/// }
/// ```
///
/// - Parameter status: The status the call returned; an error of another status is not returned.
/// - Returns: A `CFError` (`NSError`) in `NSOSStatusErrorDomain` with code `status`, whose
///   `localizedDescription` is Apple's message and what went wrong (which attribute, which
///   size, which file; never a secret); `nil` when the last call on this thread succeeded or
///   returned another status. Not an Apple function: Apple's Security keeps no such detail.
public func SecItemCopyLastError(_ status: OSStatus) -> CFError? {
    guard let error = LastError.get(), error.status == status else { return nil }
    return NSError(domain: NSOSStatusErrorDomain, code: Int(status), userInfo: error.errorUserInfo)
}

/// The per-thread store behind ``SecItemCopyLastError(_:)``.
package enum LastError {
    private final class Box {
        let error: SecItemError
        init(_ error: SecItemError) { self.error = error }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            if let pointer { Unmanaged<AnyObject>.fromOpaque(pointer).release() }
        }
        return key
    }()

    package static func set(_ error: SecItemError) {
        clear()
        pthread_setspecific(key, Unmanaged.passRetained(Box(error) as AnyObject).toOpaque())
    }

    package static func clear() {
        guard let old = pthread_getspecific(key) else { return }
        pthread_setspecific(key, nil)
        Unmanaged<AnyObject>.fromOpaque(old).release()
    }

    static func get() -> SecItemError? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return (Unmanaged<AnyObject>.fromOpaque(pointer).takeUnretainedValue() as? Box)?.error
    }
}
