@_exported public import SecItemCore
