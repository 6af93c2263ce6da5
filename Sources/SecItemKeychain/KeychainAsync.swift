public import Foundation
import SecItemCore
import Dispatch

/// Async variants: the backend call runs on a Dispatch queue, so a slow store
/// (a D-Bus round trip, a file lock) never blocks Swift's cooperative thread pool.
extension Keychain {
    private static let queue = DispatchQueue(label: "SecItem.Keychain.async", attributes: .concurrent)

    /// Runs `body` off the cooperative pool and returns its result.
    public func perform<R: Sendable>(_ body: @escaping @Sendable (Keychain) throws -> R) async throws
        -> R
    {
        let keychain = self
        let result: Result<R, any Error> = await withCheckedContinuation { continuation in
            Self.queue.async {
                do {
                    continuation.resume(returning: .success(try body(keychain)))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// Async ``data(forKey:)``.
    public func data(forKey key: String) async throws -> Data? {
        try await perform { k in try k.data(forKey: key) }
    }

    /// Async ``string(forKey:)``.
    public func string(forKey key: String) async throws -> String? {
        try await perform { k in try k.string(forKey: key) }
    }

    /// Async ``decoded(_:forKey:)``.
    public func decoded<T: Decodable & Sendable>(_ type: T.Type, forKey key: String) async throws -> T? {
        try await perform { k in try k.decoded(type, forKey: key) }
    }

    /// Async ``set(_:forKey:)-(Data,_)``.
    public func set(_ data: Data, forKey key: String) async throws {
        try await perform { k in try k.set(data, forKey: key) }
    }

    /// Async ``set(_:forKey:)-(String,_)``.
    public func set(_ string: String, forKey key: String) async throws {
        try await perform { k in try k.set(string, forKey: key) }
    }

    /// Async `setEncoded(_:forKey:)`.
    public func setEncoded<T: Encodable & Sendable>(_ value: T, forKey key: String) async throws {
        try await perform { k in try k.setEncoded(value, forKey: key) }
    }

    /// Async ``contains(_:)``.
    public func contains(_ key: String) async throws -> Bool {
        try await perform { k in try k.contains(key) }
    }

    /// Async ``remove(_:)``.
    @discardableResult
    public func remove(_ key: String) async throws -> Bool {
        try await perform { k in try k.remove(key) }
    }

    /// Async `removeAll()`.
    @discardableResult
    public func removeAll() async throws -> Int {
        try await perform { k in try k.removeAll() }
    }

    /// Async ``allKeys()``.
    public func allKeys() async throws -> [String] {
        try await perform { k in try k.allKeys() }
    }
}
