public import SecItemCore

/// The file keychain as `secitem verify`, `rekey` and `upgrade` maintain it.
extension SQLiteBackend: MaintainableStore {
    public var storeLocation: String { configuration.path }

    public func verifyStore() throws(SecItemError) -> StoreVerificationReport {
        let report = try verify()
        return StoreVerificationReport(problems: report.problems, commitment: report.commitment)
    }

    public func rekey(to newKey: NewStoreKey, rewrapOnly: Bool) throws(SecItemError) {
        switch newKey {
        case .passphrase(let passphrase): try rekey(to: KeySource.passphrase(passphrase), rewrapOnly: rewrapOnly)
        case .keyFile(let path): try rekey(to: KeySource.keyFile(path), rewrapOnly: rewrapOnly)
        case .configured(let settings):
            try rekey(to: KeySources.resolve(settings, configuration.keyContext), rewrapOnly: rewrapOnly)
        }
    }

    public func upgradeFormat() throws(SecItemError) -> Bool {
        try upgrade()
    }
}
