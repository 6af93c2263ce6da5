import SecItemSealedStore

/// The key sources that need the desktop's D-Bus services: the Secret Service item
/// and the Flatpak Secret portal. They live here, on the Secret Service side (its
/// package trait), because the sealed store links no GLib; the module `SecItem`
/// calls ``register()`` before resolving a configuration.
package enum DesktopKeySources {
    /// Adds both sources to the sealed store's list (idempotent).
    package static func register() {
        KeySources.register(SecretServiceKeySource.self, protection: SecretServiceKeySource.protectionKind)
        KeySources.register(PortalKeySource.self, protection: PortalKeySource.protectionKind)
    }

}

extension DesktopKeySources {
    /// Inside a Flatpak sandbox whose Secret portal answers (its `version` is read; no
    /// secret is asked for), why the automatic choice passes over the Secret Service for
    /// the file keychain keyed by the portal, as libsecret does for sandboxed apps;
    /// `nil` outside a sandbox or when the portal does not answer within `timeout`.
    package static func sandboxPortal(_ environment: [String: String], timeout: Duration) -> String? {
        guard let sandbox = FlatpakSandbox.detect(environment) else { return nil }
        guard let version = try? SecretPortal.version(timeout: timeout) else { return nil }
        return "inside the \(sandbox.description) the Secret portal answers (version \(version)): "
            + "the encrypted file keyed by the portal is used instead, as libsecret does for sandboxed apps"
    }
}
