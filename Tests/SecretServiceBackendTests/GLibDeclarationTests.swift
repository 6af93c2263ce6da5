import CSecItemGLibCheck
import Testing

/// Nothing links libsecret or GLib: CSecItemGLib declares the part of their API the
/// package calls (through pointers from dlsym) without their headers. CSecItemGLibCheck
/// compiles those declarations against the real headers with static assertions (each
/// function's type, each enumerator's value, each structure's size), so this target does
/// not build when they differ; the call below keeps the check linked in.
@Suite("GLib declarations")
struct GLibDeclarationTests {
    @Test("CSecItemGLib's functions are the ones GLib's and libsecret's headers declare")
    func declarationsMatchTheHeaders() {
        #expect(csecitem_glib_checked_functions() >= 120)
    }
}
