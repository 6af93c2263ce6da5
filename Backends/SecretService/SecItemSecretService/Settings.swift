public import SecItemCore

extension SecretServiceBackend {
    /// The settings the Secret Service backend reads (its provider declares ``all``). A
    /// new setting is one `static let` here and its line in ``all``.
    public enum Settings {
        /// `collection`, `SECITEM_COLLECTION`.
        public static let collection = SecItemSetting<String>.text(
            "collection", scope: "secret-service",
            help: "The Secret Service collection; unset: the alias default, else the login collection.", expected: "alias or object path")
        /// `probe-timeout`, `SECITEM_PROBE_TIMEOUT`.
        public static let probeTimeout = SecItemSetting<Duration>.seconds(
            "probe-timeout", scope: "secret-service", help: "The bound on each step of the automatic choice's Secret Service probe.",
            range: 0...60, default: .milliseconds(800))
        /// `secret-service-timeout`, `SECITEM_SECRET_SERVICE_TIMEOUT`.
        public static let timeout = SecItemSetting<Duration>.seconds(
            "secret-service-timeout", scope: "secret-service", help: "The bound on every D-Bus call.",
            range: 0...3600, default: .seconds(5))
        /// `secret-service-namespace`, `SECITEM_SECRET_SERVICE_NAMESPACE`.
        public static let namespace = SecItemSetting<String>.text(
            "secret-service-namespace", scope: "secret-service",
            help: "A namespace attribute on every item, so that separate stores share one collection (tests).", expected: "name")
        /// `secret-service-foreign-writes`, `SECITEM_SECRET_SERVICE_FOREIGN_WRITES`.
        public static let foreignWrites = SecItemSetting<Bool>.flag(
            "secret-service-foreign-writes", scope: "secret-service",
            help: "Whether items other programs stored may be changed and deleted (secitem migrate --move sets it).")

        /// Every setting the Secret Service backend reads.
        public static var all: [SecItemSettingDeclaration] {
            [collection.declaration, namespace.declaration, probeTimeout.declaration, timeout.declaration, foreignWrites.declaration]
        }
    }
}
