#if SECITEM_THREAD_SANITIZER
import SecItemCore

/// Under `scripts/test --sanitizer thread` only: a lock ThreadSanitizer sees
/// (SecItemModel's ThreadSanitizerMutex.swift says why).
typealias Mutex<Value: ~Copyable> = ThreadSanitizerMutex<Value>
#endif
