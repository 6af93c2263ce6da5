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
        SecCopyErrorMessageString(status, nil) ?? "OSStatus \(status)"
    }

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
    public static func ~= (pattern: SecItemError, value: any Error) -> Bool {
        (value as? SecItemError)?.status == pattern.status
    }

    /// Pattern matching by status where the error is already typed (`throws(SecItemError)`).
    public static func ~= (pattern: SecItemError, value: SecItemError) -> Bool {
        value.status == pattern.status
    }

    public static let unimplemented = SecItemError(errSecUnimplemented)
    public static let io = SecItemError(errSecIO)
    public static let param = SecItemError(errSecParam)
    public static let allocate = SecItemError(errSecAllocate)
    public static let userCanceled = SecItemError(errSecUserCanceled)
    public static let badReq = SecItemError(errSecBadReq)
    public static let missingEntitlement = SecItemError(errSecMissingEntitlement)
    public static let notAvailable = SecItemError(errSecNotAvailable)
    public static let readOnly = SecItemError(errSecReadOnly)
    public static let authFailed = SecItemError(errSecAuthFailed)
    public static let noSuchKeychain = SecItemError(errSecNoSuchKeychain)
    public static let invalidKeychain = SecItemError(errSecInvalidKeychain)
    public static let duplicateItem = SecItemError(errSecDuplicateItem)
    public static let itemNotFound = SecItemError(errSecItemNotFound)
    public static let noSuchAttr = SecItemError(errSecNoSuchAttr)
    public static let invalidItemRef = SecItemError(errSecInvalidItemRef)
    public static let noSuchClass = SecItemError(errSecNoSuchClass)
    public static let interactionNotAllowed = SecItemError(errSecInteractionNotAllowed)
    public static let readOnlyAttr = SecItemError(errSecReadOnlyAttr)
    public static let interactionRequired = SecItemError(errSecInteractionRequired)
    public static let dataNotAvailable = SecItemError(errSecDataNotAvailable)
    public static let decode = SecItemError(errSecDecode)
}
