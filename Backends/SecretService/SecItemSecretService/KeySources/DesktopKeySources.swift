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
