import Foundation
import SecItem

/// The exit statuses of `secitem`, one per failure class (docs/cli.md).
///
/// The keychain classes use the same numbers as macOS `security`, which exits
/// with the low byte of the `OSStatus` (errSecItemNotFound −25300 → 44).
enum ExitStatus: Int32, Sendable {
    /// Success.
    case success = 0
    /// Any other failure: I/O, damaged data, a verify that found damage, a migration that could not finish.
    case failure = 1
    /// Bad usage: unknown verb or option, missing or malformed value, a query the API rejects (errSecParam…).
    case usage = 2
    /// errSecItemNotFound: nothing matched.
    case notFound = 44
    /// errSecDuplicateItem: the item already exists (add without -U, import, migrate).
    case duplicate = 45
    /// errSecAuthFailed and friends: wrong passphrase or key, refused key file,
    /// locked collection (errSecInteractionNotAllowed), prompt dismissed.
    case authFailed = 51
    /// errSecNotAvailable and friends: no usable backend, no bus or provider, not a keychain file.
    case notAvailable = 53

    /// The class a keychain status falls in.
    init(status: OSStatus) {
        switch status {
        case errSecSuccess: self = .success
        case errSecItemNotFound: self = .notFound
        case errSecDuplicateItem: self = .duplicate
        case errSecAuthFailed, errSecInteractionNotAllowed, errSecUserCanceled, errSecInteractionRequired:
            self = .authFailed
        case errSecNotAvailable, errSecNoSuchKeychain, errSecInvalidKeychain:
            self = .notAvailable
        case errSecParam, errSecNoSuchAttr, errSecNoSuchClass, errSecMissingEntitlement, errSecUnimplemented,
            errSecReadOnlyAttr:
            self = .usage
        default: self = .failure
        }
    }
}

/// A failure of a verb: its exit status and the message for stderr (never a secret).
struct CommandError: Error, Sendable {
    let status: ExitStatus
    let message: String

    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    /// A keychain error with what the command was doing: the context, the detail
    /// (the reason: libpq's, SQLite's, the bus's) first, then Apple's message for the
    /// status (`SecCopyErrorMessageString`) and the status.
    ///
    /// Apple's advice for errSecNotAvailable ("You may need to restart your computer.")
    /// is left out: on Linux the reason is in the detail, and a restart never helps.
    init(_ error: SecItemError, context: String) {
        status = ExitStatus(status: error.status)
        let apple = Self.commandLineMessage(error.status)
        if let detail = error.detail, !detail.isEmpty {
            message = "\(context): \(detail) (\(apple) \(error.status))"
        } else {
            message = "\(context): \(apple) (\(error.status))"
        }
    }

    /// Apple's message for `status`, without advice that does not apply on Linux.
    static func commandLineMessage(_ status: OSStatus) -> String {
        let text = SecItemError(status).message
        return text.replacingOccurrences(of: " You may need to restart your computer.", with: "")
    }
}
