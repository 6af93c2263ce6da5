// Apple's LocalAuthentication error type, with Apple's codes (LAError.h).
public import Foundation

/// The error domain of LocalAuthentication errors.
public let LAErrorDomain = "com.apple.LocalAuthentication"

/// An error from evaluating a policy, as Apple's `LAError`: a `code`, matched by name
/// (`catch LAError.userCancel`), bridging to an `NSError` in ``LAErrorDomain``.
public struct LAError: Error, Hashable, Sendable, CustomNSError, LocalizedError {
    /// Apple's codes (`LAError.h`), with Apple's raw values.
    public enum Code: Int, Sendable, Hashable {
        /// The user tried and failed (polkit refused the authentication).
        case authenticationFailed = -1
        /// The user dismissed the authentication dialog.
        case userCancel = -2
        /// The user chose the fallback button (never on Linux: polkit's dialog has none).
        case userFallback = -3
        /// The system cancelled the authentication.
        case systemCancel = -4
        /// Nothing can authenticate the device owner here: no polkit on a system bus.
        case passcodeNotSet = -5
        /// No biometric sensor: fprintd is not running.
        case biometryNotAvailable = -6
        /// No enrolled fingerprints (not reported on Linux: fprintd is asked only by PAM).
        case biometryNotEnrolled = -7
        /// Too many failed attempts (not reported on Linux).
        case biometryLockout = -8
        /// The app cancelled (``LAContext/invalidate()`` during an evaluation).
        case appCancel = -9
        /// The context was invalidated.
        case invalidContext = -10
        /// No companion device (Apple Watch): never available on Linux.
        case companionNotAvailable = -11
        /// No paired biometric accessory.
        case biometryNotPaired = -12
        /// The biometric accessory is disconnected.
        case biometryDisconnected = -13
        /// Invalid dimensions.
        case invalidDimensions = -14
        /// Showing the authentication dialog is forbidden (``LAContext/interactionNotAllowed``),
        /// or no authentication agent could show one.
        case notInteractive = -1004

        /// Apple's deprecated name of ``biometryNotAvailable``.
        public static let touchIDNotAvailable = Code.biometryNotAvailable
        /// Apple's deprecated name of ``biometryNotEnrolled``.
        public static let touchIDNotEnrolled = Code.biometryNotEnrolled
        /// Apple's deprecated name of ``biometryLockout``.
        public static let touchIDLockout = Code.biometryLockout
        /// Apple's older name of ``companionNotAvailable``.
        public static let watchNotAvailable = Code.companionNotAvailable
    }

    /// What went wrong.
    public let code: Code
    /// The reason in words (never a secret).
    public let reason: String?

    /// An error with `code` and, optionally, the reason.
    public init(_ code: Code, reason: String? = nil) {
        self.code = code
        self.reason = reason
    }

    /// An error with `code`, as Apple's `LAError(_:userInfo:)`.
    public init(_ code: Code, userInfo: [String: Any]) {
        self.init(code, reason: userInfo[NSLocalizedDescriptionKey] as? String)
    }

    public static let authenticationFailed = Code.authenticationFailed
    public static let userCancel = Code.userCancel
    public static let userFallback = Code.userFallback
    public static let systemCancel = Code.systemCancel
    public static let passcodeNotSet = Code.passcodeNotSet
    public static let biometryNotAvailable = Code.biometryNotAvailable
    public static let biometryNotEnrolled = Code.biometryNotEnrolled
    public static let biometryLockout = Code.biometryLockout
    public static let appCancel = Code.appCancel
    public static let invalidContext = Code.invalidContext
    public static let companionNotAvailable = Code.companionNotAvailable
    public static let biometryNotPaired = Code.biometryNotPaired
    public static let biometryDisconnected = Code.biometryDisconnected
    public static let invalidDimensions = Code.invalidDimensions
    public static let notInteractive = Code.notInteractive
    public static let touchIDNotAvailable = Code.biometryNotAvailable
    public static let touchIDNotEnrolled = Code.biometryNotEnrolled
    public static let touchIDLockout = Code.biometryLockout
    public static let watchNotAvailable = Code.companionNotAvailable

    /// Equality is by code, as for Apple's bridged errors' `code` comparisons.
    public static func == (lhs: LAError, rhs: LAError) -> Bool { lhs.code == rhs.code }

    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public static var errorDomain: String { LAErrorDomain }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: message] }
    public var errorDescription: String? { message }

    /// Apple's message for the code, then the reason.
    var message: String {
        let base: String
        switch code {
        case .authenticationFailed: base = "Authentication failed."
        case .userCancel: base = "Canceled by user."
        case .userFallback: base = "Fallback authentication mechanism selected."
        case .systemCancel: base = "Canceled by system."
        case .passcodeNotSet: base = "Passcode not set."
        case .biometryNotAvailable: base = "Biometry is not available on this device."
        case .biometryNotEnrolled: base = "No identities are enrolled."
        case .biometryLockout: base = "Biometry is locked out."
        case .appCancel: base = "Canceled by another authentication."
        case .invalidContext: base = "Invalid context."
        case .companionNotAvailable: base = "No paired companion device is nearby."
        case .biometryNotPaired: base = "No biometric accessory is paired."
        case .biometryDisconnected: base = "The biometric accessory is disconnected."
        case .invalidDimensions: base = "Invalid dimensions."
        case .notInteractive: base = "Authentication user interface is not allowed."
        }
        guard let reason, !reason.isEmpty else { return base }
        return "\(base) (\(reason))"
    }
}

extension LAError.Code {
    /// `catch LAError.userCancel`: matches any error whose LocalAuthentication code is `code`.
    public static func ~= (code: LAError.Code, error: any Error) -> Bool {
        (error as? LAError)?.code == code
    }
}
