// What `import SecItem` exports besides this module's own functions (SecItemAdd, SecKey…,
// SecItemSystem): module SecItemAPI, whole, as swift-nio's `NIO` re-exports `NIOCore`.
// SecItemAPI holds the `SecItem…` types and re-exports SecItemSecurity, Apple's names; so
// `import SecItem` brings Apple's names and `SecItem…` names only, never a generic one
// (`ItemQuery`, `StoredItem`, … are SecItemModel's, which backends import through SecItemCore).
// SurfaceNamesTests (SourceCompatibilityTests) checks that against the symbol graphs.
@_exported public import SecItemAPI
