import Glibc

/// A value behind a readers–writer lock: any number of readers at once, or one
/// writer alone (glibc's default policy: a waiting writer gets the lock as soon as
/// no reader holds it), spinning briefly before it blocks (``spin(_:)``).
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
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Runs `body` with shared access: other readers may run at the same time.
    /// `body` reads the value in place (a pointer, not a copy: a copy would retain
    /// the value's buffers, and a writer finding them shared would copy them all).
    func read<Result, E: Error>(_ body: (UnsafePointer<Value>) throws(E) -> Result) throws(E) -> Result {
        if !spin({ pthread_rwlock_tryrdlock(lock) == 0 }) {
            // A writer holds it (for a few microseconds: an insertion). Asleep in
            // pthread_rwlock_rdlock a reader waits for a wake-up after the writer's
            // unlock, longer than the write itself: with one thread adding without pause a
            // lone reader kept 15% of its lookups (the scaling benchmark). So it yields
            // and retries for a while, as a writer does, before it blocks.
            var acquired = false
            for _ in 0..<1_000 where !acquired {
                sched_yield()
                acquired = pthread_rwlock_tryrdlock(lock) == 0
            }
            if !acquired { pthread_rwlock_rdlock(lock) }
        }
        defer { pthread_rwlock_unlock(lock) }
        return try body(value)
    }

    /// Tries `acquire` a few hundred times (a few microseconds, about one add or
    /// lookup) before the caller blocks. Every critical section here is that short,
    /// and blocking costs a futex sleep and wake-up per hand-over: with one thread
    /// adding without pause and one looking up, each hand-over put both to sleep and
    /// the reader kept 1% of its lookups (the scaling benchmark, issue 24).
    @inline(__always)
    private func spin(_ acquire: () -> Bool) -> Bool {
        for _ in 0..<256 where acquire() { return true }
        return false
    }

    /// Runs `body` with exclusive access.
    func write<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        if !spin({ pthread_rwlock_trywrlock(lock) == 0 }) {
            // A writer asleep in pthread_rwlock_wrlock makes every new reader sleep until
            // it has run: with one thread adding without pause each lookup then waited
            // for two wake-ups (the reader kept 2% of its lookups; the scaling benchmark).
            // So a writer yields and retries for a while (readers hold the lock for about
            // a microsecond, so it finds a gap) before it blocks.
            var acquired = false
            for _ in 0..<1_000 where !acquired {
                sched_yield()
                acquired = pthread_rwlock_trywrlock(lock) == 0
            }
            if !acquired { pthread_rwlock_wrlock(lock) }
        }
        defer { pthread_rwlock_unlock(lock) }
        return try body(&value.pointee)
    }
}
