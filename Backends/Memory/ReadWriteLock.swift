import Glibc

/// A value behind a readers–writer lock: any number of readers at once, or one
/// writer alone. Writers are preferred, so a steady stream of readers cannot keep
/// an add or delete waiting for ever.
///
/// `Synchronization` has no such lock, so this is a `pthread_rwlock_t`
/// (ThreadSanitizer intercepts it, so `scripts/test --sanitizer thread` sees the
/// ordering it gives, as with `ThreadSanitizerMutex`).
final class ReadWriteLock<Value>: @unchecked Sendable {
    // @unchecked: `value` is read only between pthread_rwlock_rdlock and unlock, and
    // written only between pthread_rwlock_wrlock and unlock.
    private let value: UnsafeMutablePointer<Value>
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init(_ initialValue: sending Value) {
        value = .allocate(capacity: 1)
        value.initialize(to: initialValue)
        lock = .allocate(capacity: 1)
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        // glibc's default lets new readers in while a writer waits (writers can starve).
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Runs `body` with shared access: other readers may run at the same time.
    func read<Result, E: Error>(_ body: (borrowing Value) throws(E) -> Result) throws(E) -> Result {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(value.pointee)
    }

    /// Runs `body` with exclusive access.
    func write<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(&value.pointee)
    }
}
