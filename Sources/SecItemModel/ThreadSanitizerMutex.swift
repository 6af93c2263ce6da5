#if SECITEM_THREAD_SANITIZER
import Glibc

// Only in `scripts/test --sanitizer thread` builds (docs/fuzzing.md, "Sanitizers").
//
// On Linux, `Synchronization.Mutex` locks with futex calls inside the Swift runtime,
// which is not built for ThreadSanitizer: TSan sees no ordering between two
// `withLock` bodies and reports every access under one as a race (eight lines
// reproduce it). Under that build only, each module that locks names this pthread
// mutex `Mutex` (a file `ThreadSanitizerMutex.swift` beside its code); TSan intercepts
// pthread_mutex_lock, so what it then reports is real.

/// `Mutex` under ThreadSanitizer: the same `withLock`, over a pthread mutex.
package final class ThreadSanitizerMutex<Value: ~Copyable>: @unchecked Sendable {
    // @unchecked: `value` is only touched between pthread_mutex_lock and unlock.
    // The value lives in an allocation of its own: a stored property of size zero
    // (`Mutex<Void>`) shares its address with `lock`, and TSan then reported reading
    // `lock` (before locking) as a race with the `inout` access to the value.
    private let value: UnsafeMutablePointer<Value>
    private let lock: UnsafeMutablePointer<pthread_mutex_t>

    package init(_ initialValue: consuming sending Value) {
        value = .allocate(capacity: 1)
        value.initialize(to: initialValue)
        lock = .allocate(capacity: 1)
        pthread_mutex_init(lock, nil)
    }

    deinit {
        pthread_mutex_destroy(lock)
        lock.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    package func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return try body(&value.pointee)
    }

    /// `Mutex.withLockIfAvailable`: `nil` without waiting when another thread holds the lock.
    package func withLockIfAvailable<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result? {
        guard pthread_mutex_trylock(lock) == 0 else { return nil }
        defer { pthread_mutex_unlock(lock) }
        return try body(&value.pointee)
    }
}

typealias Mutex<Value: ~Copyable> = ThreadSanitizerMutex<Value>
#endif
