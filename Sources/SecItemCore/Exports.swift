// `import SecItemCore`: everything a backend writer needs, in one import. It re-exports
// SecItemAPI (the `SecItem…` types: SecItemBackend, SecItemClient, SecItemConfiguration,
// and with it SecItemSecurity, Apple's names) and SecItemModel (the item model: StoredItem,
// ItemQuery, AttributeValue, AccessGroups, …), and adds the provider protocol and the
// maintenance capability. Apps import SecItem instead, which exports none of the generic names.
@_exported public import SecItemAPI
@_exported public import SecItemModel
