import SecItemConformance

/// Query dictionaries the tests build over and over: the conformance kit's one builder.
public enum Query {
    /// A generic password's dictionary: `kSecClass`, service, account, then `extra`.
    public static func genericPassword(_ service: String, _ account: String, _ extra: [String: Any] = [:]) -> [String: Any] {
        ConformanceContext.genericPasswordQuery(service, account, extra)
    }
}
