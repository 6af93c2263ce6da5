import Foundation
import SecItemSecurity
import Synchronization

/// Secret environment variables taken out of the process environment as
/// ``Passphrase`` values, never as `String`s.
///
/// A program that wants `SECITEM_PASSPHRASE` and friends gone from
/// `/proc/PID/environ` and from its child processes (the `secitem` command does)
/// calls ``take(_:)`` first thing in `main`, before anything reads the environment
/// into a dictionary: each value's bytes are copied straight from the environment
/// block into a ``Passphrase``, the `NAME=value` string is zeroed in place, and
/// the variable is unset. the configuration's reader
/// then finds a taken `SECITEM_PASSPHRASE` as if it were still set (same origin
/// in messages), so the rest of the program keeps passing plain dictionaries.
/// The program drops each value when it is done with it (``forget(_:)``,
/// ``consume(_:)``); backends keep only the derived key, never the passphrase.
public enum SecretEnvironment {
    /// The variables a program that takes its secrets out of the environment takes:
    /// the key's passphrase and the PostgreSQL connection string (which may hold a
    /// password; the configuration finds it taken as it finds the passphrase). The
    /// `secitem` command and `git-credential-secitem` take these, and the command its
    /// export and new passphrases too. `PGPASSWORD` stays: libpq reads it itself (keep
    /// passwords in `~/.pgpass`).
    public static let standardSecrets = ["SECITEM_PASSPHRASE", "SECITEM_POSTGRESQL_URL"]

    private static let taken = Mutex<[String: Passphrase]>([:])

    /// Takes each of `names` that is set (an empty value included) out of the
    /// process environment. Call it before other threads run: `getenv`/`unsetenv`
    /// are not thread-safe.
    public static func take(_ names: [String]) {
        for name in names {
            guard let value = getenv(name) else { continue }
            let length = strlen(value)
            let passphrase = value.withMemoryRebound(to: UInt8.self, capacity: length) {
                Passphrase(bytes: UnsafeBufferPointer(start: $0, count: length))
            }
            // The whole "NAME=value" entry: at start-up it lies in the block the kernel
            // shows as /proc/PID/environ; unsetenv only drops the pointer to it.
            let entry = UnsafeMutableRawPointer(value) - (name.utf8.count + 1)
            let entryLength = name.utf8.count + 1 + length
            unsetenv(name)
            explicit_bzero(entry, entryLength)
            taken.withLock { $0[name] = passphrase }
        }
    }

    /// The value taken for `name` by ``take(_:)``, if it was set.
    public static func value(_ name: String) -> Passphrase? {
        taken.withLock { $0[name] }
    }

    /// Removes the value taken for `name` and returns it: a secret used once (an
    /// export passphrase, a new passphrase) is dropped with the caller's copy.
    public static func consume(_ name: String) -> Passphrase? {
        taken.withLock { $0.removeValue(forKey: name) }
    }

    /// Drops the value taken for `name` (zeroed once no other copy holds it):
    /// call it once the backends that need it are open.
    public static func forget(_ name: String) {
        _ = consume(name)
    }
}
