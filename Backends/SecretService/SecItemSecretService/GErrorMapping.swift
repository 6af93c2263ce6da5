internal import CSecItemLibsecret
import SecItemCore

/// A GError, read into Swift values (`Libsecret.swift` reads it and frees it).
struct GErrorFacts {
    enum Domain {
        case io, dbus, secret, other
    }

    var domain: Domain
    var code: Int32
    var message: String
    /// The D-Bus error name of a remote error (`org.freedesktop.Secret.Error.IsLocked`, …).
    var remote: String?

    /// Whether the provider no longer knows our encryption session, or cannot use it:
    /// the Secret Service's `NoSession` (the session was closed; libsecret strips the
    /// error's name from some messages, so gnome-keyring's wording counts too), or
    /// KWallet's "Can't find session", which kwalletd5 also answers for a secret it
    /// cannot decrypt with the session's key, and KWallet's "Client public key size is
    /// invalid", its answer to a DH key shorter than 128 bytes (libsecret sends one 1 time
    /// in 256 when it opens a session of its own, which only a prompt makes it do now; the
    /// backend's own session always sends 128) (docs/secret-service-mapping.md,
    /// "Providers"). A new session fixes all three.
    var losesSession: Bool {
        remote == "org.freedesktop.Secret.Error.NoSession" || message.contains("Secret.Error.NoSession")
            || message.contains("Can't find session") || message.contains("The session wrapping the secret does not exist")
            || message.contains("The session does not exist") || message.contains("Client public key size is invalid")
    }

    /// The item a `GetSecrets` named that the provider no longer has: KWallet fails the
    /// whole call with `InvalidArgs` "Can't find item at path P" for the first such
    /// item (gnome-keyring leaves it out of the answer instead).
    var vanishedItem: String? {
        guard remote == "org.freedesktop.DBus.Error.InvalidArgs" || message.contains("DBus.Error.InvalidArgs") else { return nil }
        return Self.vanishedItem(in: message)
    }

    /// The path KWallet's "Can't find item at path P" names at the end of `text` (a GError
    /// message, or an error's detail that ends with one).
    static func vanishedItem(in text: String) -> String? {
        guard let range = text.ranges(of: "Can't find item at path ").last else { return nil }
        let path = text[range.upperBound...]
        return path.hasPrefix("/") && !path.contains(" ") ? String(path) : nil
    }
}

/// The stage a call belongs to, which decides what an unexplained failure means.
enum CallPhase {
    case bus, provider, call
}

extension SecItemError {
    /// A GError as a status: unreachable bus or provider → errSecNotAvailable,
    /// locked → errSecInteractionNotAllowed, unknown object → errSecInvalidItemRef
    /// (callers decide what a vanished object means), other → errSecIO.
    init(_ error: GErrorFacts, what: String, timeout: Duration, timedOut: Bool, phase: CallPhase) {
        let message = error.message
        let remote = error.remote
        func dbus(_ c: GDBusError) -> Bool { error.domain == .dbus && error.code == Int32(c.rawValue) }
        func io(_ c: GIOErrorEnum) -> Bool { error.domain == .io && error.code == Int32(c.rawValue) }
        func secret(_ c: SecretError) -> Bool { error.domain == .secret && error.code == Int32(c.rawValue) }

        if timedOut || io(G_IO_ERROR_TIMED_OUT) || dbus(G_DBUS_ERROR_NO_REPLY) || dbus(G_DBUS_ERROR_TIMEOUT) || dbus(G_DBUS_ERROR_TIMED_OUT) {
            self.init(
                errSecNotAvailable,
                "the Secret Service provider did not answer within \(timeout.components.seconds) s while \(what)")
        } else if phase == .bus {
            self.init(errSecNotAvailable, "cannot connect to the D-Bus session bus: \(message)")
        } else if dbus(G_DBUS_ERROR_SERVICE_UNKNOWN) || dbus(G_DBUS_ERROR_NAME_HAS_NO_OWNER) || remote == "org.freedesktop.DBus.Error.ServiceUnknown"
            || remote == "org.freedesktop.DBus.Error.NameHasNoOwner"
        {
            self.init(
                errSecNotAvailable,
                "no Secret Service provider (org.freedesktop.secrets) answers on the session bus: \(message)")
        } else if dbus(G_DBUS_ERROR_DISCONNECTED) || io(G_IO_ERROR_CLOSED) || io(G_IO_ERROR_NOT_CONNECTED) || io(G_IO_ERROR_BROKEN_PIPE) || io(G_IO_ERROR_CONNECTION_CLOSED) {
            self.init(errSecNotAvailable, "the D-Bus session bus connection closed: \(message)")
        } else if io(G_IO_ERROR_CANCELLED) {
            self.init(errSecNotAvailable, "the Secret Service call was cancelled while \(what)")
        } else if remote == "org.freedesktop.Secret.Error.IsLocked" || secret(SECRET_ERROR_IS_LOCKED) {
            self.init(errSecInteractionNotAllowed, "the Secret Service collection or item is locked")
        } else if dbus(G_DBUS_ERROR_UNKNOWN_OBJECT) || dbus(G_DBUS_ERROR_UNKNOWN_METHOD) || remote == "org.freedesktop.Secret.Error.NoSuchObject"
            || secret(SECRET_ERROR_NO_SUCH_OBJECT) || error.vanishedItem != nil
        {
            self.init(errSecInvalidItemRef, "the Secret Service object no longer exists: \(message)")
        } else if phase == .provider {
            self.init(errSecNotAvailable, "the Secret Service provider failed while \(what): \(message)")
        } else {
            self.init(errSecIO, "the Secret Service failed while \(what): \(message)")
        }
    }
}
