import SecItemSecurity
import SecItemModel
// What a backend can do beyond the four calls of ``SecItemBackend``, asked for by
// capability, never by type: tools test `backend as? any SecItemForeignItemsExposing`
// (or ``MaintainableStore``), not `backend as? SomeBackend`, so a new backend gains a
// feature by adopting one protocol in its own folder.

/// A backend that shows items other programs stored (not through SecItem) in an
/// access group of their own, readable and erasable in place by a client entitled
/// to it (the Secret Service: `secret-tool`, git-credential-libsecret).
public protocol SecItemForeignItemsExposing: SecItemBackend {
    /// The access group those items appear in.
    var foreignItemsAccessGroup: String { get }
}
