import SecItemCore

extension BackendChoice {
    static func openPersistent(_ name: String, environment: [String: String]) throws(SecItemError) -> any SecItemBackend {
        throw SecItemError(errSecNotAvailable, "the \(name) backend is not available in this build")
    }

    static func automatic(environment: [String: String]) throws(SecItemError) -> BackendChoice {
        throw SecItemError(errSecNotAvailable, "no persistent backend is available; set SECITEM_BACKEND=memory")
    }
}
