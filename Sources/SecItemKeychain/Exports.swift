// `import SecItemKeychain` gives the typed layer (`Keychain`) and everything `import SecItem` gives.
@_exported public import SecItem
