// `import SecItem` re-exports this module whole, and this module re-exports SecItemSecurity
// whole: Apple's Security names (kSec…, errSec…, OSStatus, the CF types, SecItemError, …) and
// this package's `SecItem…` types, nothing else. A file can then import SecItem next to a
// module with its own `Keychain`, `ItemClass` or `AccessGroups` without "ambiguous use"
// errors; SurfaceNamesTests (SourceCompatibilityTests) checks both promises against the
// modules' symbol graphs. The generic names of the item model (SecItemModel) stay out.
@_exported public import SecItemSecurity
