// Apple's LocalAuthentication, on the keychain's access gate: polkit asks the user
// (password, or fingerprint where PAM has fprintd). Semantics and what differs from Apple
// platforms: docs/secitem-semantics.md §9, "LocalAuthentication".
public import Foundation
public import SecItemCore
internal import SecItemPolkit
internal import Dispatch
import Synchronization

/// The longest reuse duration a context accepts, in seconds (Apple's value).
public let LATouchIDAuthenticationMaximumAllowableReuseDuration: TimeInterval = 300

/// What the user must prove, as Apple's `LAPolicy` (same raw values).
public enum LAPolicy: Int, Sendable, Hashable {
    /// Biometrics only: here a polkit authentication, offered only where fprintd runs.
    case deviceOwnerAuthenticationWithBiometrics = 1
    /// The device owner: a polkit authentication (the user's password, or a fingerprint where PAM has fprintd).
    case deviceOwnerAuthentication = 2
    /// A paired watch: never available on Linux (``LAError/Code/companionNotAvailable``).
    case deviceOwnerAuthenticationWithWatch = 3
    /// Biometrics or a watch: as ``deviceOwnerAuthenticationWithBiometrics``.
    case deviceOwnerAuthenticationWithBiometricsOrWatch = 4
}

/// The biometric sensor, as Apple's `LABiometryType`.
public enum LABiometryType: Int, Sendable, Hashable {
    /// No sensor: fprintd does not run on the system bus.
    case none = 0
    /// A fingerprint reader served by fprintd (`net.reactivated.Fprint` on the system bus).
    case touchID = 1
    /// Never on Linux.
    case faceID = 2
    /// Never on Linux.
    case opticID = 4
}

/// An authentication context, as Apple's `LAContext`: evaluate a policy once, then pass the
/// context with `kSecUseAuthenticationContext` so that one authentication covers several
/// keychain reads.
///
/// ```swift
/// let context = LAContext()
/// context.touchIDAuthenticationAllowableReuseDuration = 60
/// var error: NSError?
/// if context.canEvaluatePolicy(.deviceOwnerAuthentication, error: &error) {
///     try await context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "Unlock your tokens")
/// }
/// let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecReturnData as String: true,
///                             kSecUseAuthenticationContext as String: context]
/// ```
///
/// Here the user proves presence to polkit (its authentication agent asks for the user's
/// password, or a fingerprint where PAM uses fprintd): the same authority that guards
/// items whose access control asks for user presence.
///
/// A context remembers its last successful authentication (by ``evaluatePolicy(_:localizedReason:reply:)``
/// or by a keychain read that asked). A read with the context releases protected items
/// without asking while that authentication is fresh: for
/// ``touchIDAuthenticationAllowableReuseDuration`` seconds when it is set (at most 300),
/// else until ``invalidate()``.
///
/// `@unchecked Sendable`: an `open` class cannot be checked; every stored property is
/// immutable or behind the lock.
open class LAContext: NSObject, AuthenticationContext, @unchecked Sendable {
    private struct State {
        var localizedReason = ""
        var localizedFallbackTitle: String?
        var localizedCancelTitle: String?
        var reuseDuration: TimeInterval = 0
        var interactionNotAllowed = false
        var authenticatedAt: ContinuousClock.Instant?
        var invalidated = false
    }

    private let state = Mutex(State())
    private let authority: any AccessAuthority

    /// A context that asks the process's authority: polkit on the system bus
    /// (`SECITEM_POLKIT_ACTION`, else the shipped `org.secitem.item.read-protected`).
    public override convenience init() {
        self.init(accessAuthority: PolkitAccessAuthority.processDefault)
    }

    /// A context that asks `accessAuthority` (the keychain client's, in tests).
    package init(accessAuthority: any AccessAuthority) {
        self.authority = accessAuthority
        super.init()
    }

    // MARK: Properties

    /// The reason shown by the authentication dialog when a keychain read with this context asks.
    open var localizedReason: String {
        get { state.withLock { $0.localizedReason } }
        set { state.withLock { $0.localizedReason = newValue } }
    }

    /// Apple's fallback button title; polkit's dialog has no such button (kept, unused).
    open var localizedFallbackTitle: String? {
        get { state.withLock { $0.localizedFallbackTitle } }
        set { state.withLock { $0.localizedFallbackTitle = newValue } }
    }

    /// Apple's cancel button title; polkit's agent names its own button (kept, unused).
    open var localizedCancelTitle: String? {
        get { state.withLock { $0.localizedCancelTitle } }
        set { state.withLock { $0.localizedCancelTitle = newValue } }
    }

    /// How long, in seconds, an authentication on this context covers later evaluations and
    /// keychain reads with it; 0 (the default) means until ``invalidate()``. Clamped to
    /// ``LATouchIDAuthenticationMaximumAllowableReuseDuration``.
    open var touchIDAuthenticationAllowableReuseDuration: TimeInterval {
        get { state.withLock { $0.reuseDuration } }
        set {
            let clamped = newValue.isNaN ? 0 : min(max(newValue, 0), LATouchIDAuthenticationMaximumAllowableReuseDuration)
            state.withLock { $0.reuseDuration = clamped }
        }
    }

    /// When `true`, nothing asks the user: an evaluation that would have to fails with
    /// ``LAError/Code/notInteractive``, a keychain read with errSecInteractionNotAllowed.
    open var interactionNotAllowed: Bool {
        get { state.withLock { $0.interactionNotAllowed } }
        set { state.withLock { $0.interactionNotAllowed = newValue } }
    }

    /// ``LABiometryType/touchID`` when fprintd runs on the system bus, else ``LABiometryType/none``.
    open var biometryType: LABiometryType {
        guard let polkit = authority as? PolkitAccessAuthority else { return .none }
        return polkit.busNameHasOwner("net.reactivated.Fprint") ? .touchID : .none
    }

    /// Apple's enrolled-biometrics fingerprint; `nil` on Linux (fprintd does not give one).
    open var evaluatedPolicyDomainState: Data? { nil }

    // MARK: Evaluating

    /// Whether `policy` can be evaluated here, without asking the user.
    /// - Parameter error: Set to an ``LAError`` (as `NSError`) when it cannot:
    ///   ``LAError/Code/passcodeNotSet`` without polkit on a system bus,
    ///   ``LAError/Code/biometryNotAvailable`` for a biometric policy without fprintd,
    ///   ``LAError/Code/companionNotAvailable`` for a watch policy, ``LAError/Code/invalidContext``
    ///   after ``invalidate()``.
    open func canEvaluatePolicy(_ policy: LAPolicy, error: UnsafeMutablePointer<NSError?>?) -> Bool {
        if let failure = unavailability(of: policy) {
            error?.pointee = failure as NSError
            return false
        }
        return true
    }

    /// Asks the user to authenticate for `policy`; `reply` runs on another thread when done.
    ///
    /// Succeeds without asking while an earlier authentication on this context is fresh
    /// (see the type's discussion). Fails with ``LAError``: `userCancel` (the dialog was
    /// dismissed), `authenticationFailed` (polkit refused), `notInteractive`
    /// (``interactionNotAllowed``, or no authentication agent), or what ``canEvaluatePolicy(_:error:)`` says.
    open func evaluatePolicy(_ policy: LAPolicy, localizedReason: String, reply: @escaping @Sendable (Bool, (any Error)?) -> Void) {
        DispatchQueue.global().async { [self] in
            switch evaluate(policy, reason: localizedReason) {
            case .success: reply(true, nil)
            case .failure(let error): reply(false, error)
            }
        }
    }

    /// Asks the user to authenticate for `policy`.
    /// - Returns: `true` on success.
    /// - Throws: ``LAError`` as ``evaluatePolicy(_:localizedReason:reply:)`` reports it.
    @discardableResult
    open func evaluatePolicy(_ policy: LAPolicy, localizedReason: String) async throws -> Bool {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
            evaluatePolicy(policy, localizedReason: localizedReason) { success, error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: success) }
            }
        }
    }

    /// Ends the context: later evaluations fail with ``LAError/Code/invalidContext``, and it
    /// no longer covers keychain reads.
    open func invalidate() {
        state.withLock {
            $0.invalidated = true
            $0.authenticatedAt = nil
        }
    }

    // MARK: AuthenticationContext (kSecUseAuthenticationContext)

    public var forbidsInteraction: Bool { interactionNotAllowed }

    public var promptReason: String? {
        let reason = localizedReason
        return reason.isEmpty ? nil : reason
    }

    public func coversRead() -> Bool {
        state.withLock { Self.isFresh($0) }
    }

    public func recordAuthentication() {
        state.withLock { state in
            if !state.invalidated { state.authenticatedAt = .now }
        }
    }

    // MARK: Internals

    private static func isFresh(_ state: State) -> Bool {
        guard !state.invalidated, let at = state.authenticatedAt else { return false }
        guard state.reuseDuration > 0 else { return true }
        return ContinuousClock.now - at <= .milliseconds(Int64(state.reuseDuration * 1000))
    }

    private func unavailability(of policy: LAPolicy) -> LAError? {
        if state.withLock({ $0.invalidated }) { return LAError(.invalidContext, reason: "the context was invalidated") }
        switch policy {
        case .deviceOwnerAuthenticationWithWatch:
            return LAError(.companionNotAvailable, reason: "Linux has no companion device")
        case .deviceOwnerAuthenticationWithBiometrics, .deviceOwnerAuthenticationWithBiometricsOrWatch:
            if biometryType == .none {
                return LAError(.biometryNotAvailable, reason: "fprintd is not running on the system bus")
            }
        case .deviceOwnerAuthentication:
            break
        }
        if authority is HeadlessAccessAuthority {
            return LAError(.passcodeNotSet, reason: "this keychain client has no authority that can ask the user")
        }
        if let polkit = authority as? PolkitAccessAuthority, !polkit.busNameHasOwner("org.freedesktop.PolicyKit1") {
            return LAError(.passcodeNotSet, reason: "polkit is not running on the system bus")
        }
        return nil
    }

    private func evaluate(_ policy: LAPolicy, reason: String) -> Result<Void, LAError> {
        if let failure = unavailability(of: policy) { return .failure(failure) }
        if coversRead() { return .success(()) }
        if interactionNotAllowed { return .failure(LAError(.notInteractive, reason: "interactionNotAllowed is set")) }
        switch authority.authorizeUserPresence(prompt: reason.isEmpty ? nil : reason) {
        case .authorized:
            recordAuthentication()
            if state.withLock({ $0.invalidated }) { return .failure(LAError(.appCancel, reason: "invalidated while asking")) }
            return .success(())
        case .dismissed:
            return .failure(LAError(.userCancel, reason: "the authentication dialog was dismissed"))
        case .denied:
            return .failure(LAError(.authenticationFailed, reason: "polkit did not authorize the user"))
        case .unavailable(let why):
            return .failure(LAError(.notInteractive, reason: why))
        }
    }
}
