#if SECITEM_THREAD_SANITIZER
import SecItemModel

/// Under `scripts/test --sanitizer thread` only: a lock ThreadSanitizer sees
/// (SecItemModel's ThreadSanitizerMutex.swift says why).
typealias Mutex<Value: ~Copyable> = ThreadSanitizerMutex<Value>
#endif
