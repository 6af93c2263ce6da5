import Foundation
public import SecItemCore

/// The `SecItemError` `body` throws (another error as status -1 with its text), or
/// `nil` when it returns: for tests that check a refusal's exact status and message.
public func thrownSecItemError(_ body: () throws -> Void) -> SecItemError? {
    do {
        try body()
        return nil
    } catch let error as SecItemError {
        return error
    } catch {
        return SecItemError(-1, "\(error)")
    }
}
