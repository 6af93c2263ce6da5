// Waiting on a condition instead of sleeping a guessed time: a test that sleeps is
// slow on a fast machine and flaky on a loaded one; one that waits on the state it
// needs is neither, and says what never happened when it times out.
#if canImport(Glibc)
import Glibc
#endif

/// Polls a condition until it holds, with a deadline that fails loudly.
///
/// ```swift
/// try Wait.until("the child printed its prompt") { child.printed.contains("password:") }
/// ```
public enum Wait {
    /// Returns as soon as `condition` holds; checks it every `interval`.
    /// - Parameters:
    ///   - what: The awaited state in words, for the error ("the key expired").
    ///   - timeout: How long to wait: generous, since a loaded CI machine is slow; a
    ///     passing run never waits for it.
    ///   - interval: How long to pause between checks.
    ///   - condition: The observable state (a file, a process's lines, `/proc`, a store).
    /// - Throws: ``TestSetupError`` naming `what` and `timeout` when the deadline passes
    ///   first (the condition is checked once more at the deadline); what `condition` throws.
    public static func until(
        _ what: String, timeout: Duration = .seconds(30), interval: Duration = .milliseconds(5), _ condition: () throws -> Bool
    ) throws {
        let deadline = ContinuousClock.now + timeout
        while try !condition() {
            guard ContinuousClock.now < deadline else {
                if try condition() { return }
                throw TestSetupError("waited \(timeout) and \(what) did not happen")
            }
            pause(interval)
        }
    }

    /// Whether `condition` came to hold within `timeout` (for tests whose expectation is
    /// that it does *not*, or that record the failure themselves).
    public static func holds(
        within timeout: Duration, interval: Duration = .milliseconds(5), _ condition: () throws -> Bool
    ) rethrows -> Bool {
        let deadline = ContinuousClock.now + timeout
        while try !condition() {
            guard ContinuousClock.now < deadline else { return try condition() }
            pause(interval)
        }
        return true
    }

    private static func pause(_ interval: Duration) {
        let (seconds, attoseconds) = interval.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
