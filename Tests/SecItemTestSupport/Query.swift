import SecItemCore

/// Query dictionaries the tests build over and over: one builder.
public enum Query {
    /// A generic password's dictionary: `kSecClass`, service, account, then `extra`.
    public static func genericPassword(_ service: String, _ account: String, _ extra: [String: Any] = [:]) -> [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecAttrAccount as String: account,
        ]
        query.merge(extra) { _, new in new }
        return query
    }
}
